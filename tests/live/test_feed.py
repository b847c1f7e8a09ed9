"""The change feed's log: a follower that opens between two appends of a session."""

from __future__ import annotations

import asyncio
from typing import Any

from aster_persist.live.feed import APPENDED, Feed


def notice(first: int, last: int) -> dict[str, Any]:
    return {
        "session_id": "S",
        "scope": "project:x",
        "first_seq": first,
        "last_seq": last,
        "kinds": ["message"],
    }


def test_a_follower_that_opens_between_two_appends_is_told_of_the_second() -> None:
    async def main() -> None:
        feed = Feed(asyncio.get_running_loop(), max_subscribers=10, queue_size=100)
        early = feed.subscribe()
        feed.publish(APPENDED, notice(1, 1))  # not read yet when the next follower opens
        late = feed.subscribe()
        feed.publish(APPENDED, notice(2, 2))
        seen = await asyncio.wait_for(feed.next(early), 1)
        assert [(i.data["first_seq"], i.data["last_seq"]) for i in seen or []] in (
            [(1, 2)],
            [(1, 1), (2, 2)],
        )
        seen = await asyncio.wait_for(feed.next(late), 1)
        assert [(i.data["first_seq"], i.data["last_seq"]) for i in seen or []] == [(2, 2)]

    asyncio.run(main())


def test_a_follower_alone_after_another_left_is_woken() -> None:
    async def main() -> None:
        feed = Feed(asyncio.get_running_loop(), max_subscribers=10, queue_size=100)
        gone = feed.subscribe()
        feed.publish(APPENDED, notice(1, 1))
        feed.unsubscribe(gone)  # closed before its wake-up
        tail = feed.subscribe()
        feed.publish(APPENDED, notice(2, 2))
        seen = await asyncio.wait_for(feed.next(tail), 1)
        assert [(i.data["first_seq"], i.data["last_seq"]) for i in seen or []] == [(2, 2)]

    asyncio.run(main())
