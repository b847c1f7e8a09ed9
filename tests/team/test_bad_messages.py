"""What a machine cannot copy never stops it copying the rest: a message that is not a
line is ended, a session whose lines come without their start waits apart (and says so
in the status) while other sessions go on, and a large content appended after the first
pass reaches the copies whole (one larger than the servers take, as a note saying where
it is kept)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import orjson
from ulid import ULID

from ..conftest import Daemon, wait_until
from .cluster import Cluster
from .test_sessions import append, create, events


async def publish_raw(cluster: Cluster, messages: list[tuple[str, bytes, dict[str, str]]]) -> None:
    import nats

    nc = await nats.connect(servers=cluster.urls.split(","))
    js = nc.jetstream()
    for subject, data, headers in messages:
        await js.publish(subject, data, headers=headers)
    await nc.close()


def test_bad_and_stuck_messages_hold_nothing_up(
    machines: Callable[..., Daemon], cluster: Cluster
) -> None:
    a, b = machines("laptop"), machines("workstation")
    first = create(a)
    append(a, first, "before the noise").raise_for_status()
    wait_until(lambda: events(b, first), timeout=5)  # the stream and b's consumer exist
    ghost = str(ULID())
    noise = [(f"aster.sessions.{ULID()}", b"not json", {"Aster-Machine": "ghost"})]
    noise += [  # a session's lines without its start, more than a consumer holds at once
        (
            f"aster.sessions.{ghost}",
            orjson.dumps({"type": "message", "seq": n, "role": "user", "content": f"{n}"}),
            {"Aster-Machine": "ghost", "Nats-Msg-Id": f"{ghost}:{n}"},
        )
        for n in range(2, 1102)
    ]
    asyncio.run(publish_raw(cluster, noise))
    later = create(a)
    append(a, later, "after the noise").raise_for_status()
    wait_until(lambda: events(b, later), timeout=10)
    status = wait_until(
        lambda: (s := httpx.get(f"{b.url}/v1/team").json())["problems"] and s, timeout=10
    )
    assert [p["session_id"] for p in status["problems"]] == [ghost]
    assert httpx.get(f"{b.url}/v1/sessions/{ghost}").status_code == 404


def test_a_large_content_appended_later_reaches_the_copy_whole(
    machines: Callable[..., Daemon],
) -> None:
    a, b = machines("laptop"), machines("workstation")
    sid = create(a)
    append(a, sid, "first").raise_for_status()
    wait_until(lambda: events(b, sid), timeout=5)
    large = "x" * 100_000  # stored as a blob at the owner
    append(a, sid, large).raise_for_status()
    copied = wait_until(lambda: len(events(b, sid)) == 2 and events(b, sid), timeout=5)
    assert copied[1]["content"] == large
    # larger than one message of the servers (1 MB): a note says where it is kept
    append(a, sid, "y" * 1_200_000).raise_for_status()
    append(a, sid, "and after it").raise_for_status()
    copied = wait_until(lambda: len(events(b, sid)) == 4 and events(b, sid), timeout=5)
    assert copied[2]["role"] == "user" and "too large to share; kept on laptop" in str(
        copied[2]["content"]
    )
    assert copied[3]["content"] == "and after it"
