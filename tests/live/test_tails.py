"""Session tails in the feed, against a transcript in memory whose reads are logged: one
read of each new piece for every tail, the same bytes for tails at the same place, and
a tail left behind the window reading its own way back from the file, with no gap and
no repeat."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import orjson

from aster_persist.live.feed import APPENDED, JOURNAL, Feed
from aster_persist.live.followers import Subscriber

SID = "01JD2X9Q6B7T1S8W2R4N5M3K0H"
ENTRY = "01JD2X9Q6B7T1S8W2R4N5M3K0J"


class Transcript:
    """JSONL bytes read as the daemon reads them: whole lines from an offset to a limit."""

    def __init__(self) -> None:
        self.data = orjson.dumps({"type": "session", "seq": 0, "id": SID}) + b"\n"
        self.last = 0
        self.reads: list[tuple[int, int]] = []

    def append(self, count: int) -> tuple[int, int]:
        first = self.last + 1
        for seq in range(first, first + count):
            line = {"type": "message", "seq": seq, "role": "user", "content": f"event {seq}"}
            self.data += orjson.dumps(line) + b"\n"
        self.last = first + count - 1
        return first, self.last

    def read(
        self, offset: int, until: int, data: bytes | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        self.reads.append((offset, until))
        piece = (self.data if data is None else data)[offset:until]
        whole = piece[: piece.rfind(b"\n") + 1]
        return [orjson.loads(line) for line in whole.splitlines()], offset + len(whole)

    def find(self, seq: int, before: int) -> int:
        """The start of the first line past ``seq`` (read whole: this fake counts no bytes)."""
        offset = 0
        for line in self.data[:before].splitlines(keepends=True):
            if orjson.loads(line)["seq"] > seq:
                return offset
            offset += len(line)
        return offset

    def place(self) -> tuple[int, int]:
        return len(self.data), self.last


def announce(feed: Feed, first: int, last: int) -> None:
    feed.publish(
        APPENDED,
        {
            "session_id": SID,
            "scope": "project:x",
            "first_seq": first,
            "last_seq": last,
            "kinds": ["message"],
        },
    )


def follow(feed: Feed, transcript: Transcript, after: int) -> Subscriber:
    return feed.follow(SID, after, transcript.read, transcript.find, transcript.place)


async def seqs_of(feed: Feed, subscriber: Subscriber, through: int) -> list[int]:
    """The seqs a tail is sent until it has ``through``."""
    seen: list[int] = []
    while not seen or seen[-1] < through:
        chunk = await asyncio.wait_for(feed.chunk(subscriber), 5)
        assert chunk is not None
        seen += [int(line[4:]) for line in chunk.split(b"\r\n") if line.startswith(b"id: ")]
    return seen


def test_tails_at_the_same_place_share_one_read_and_the_same_bytes() -> None:
    async def main() -> None:
        feed = Feed(asyncio.get_running_loop(), max_subscribers=10, queue_size=100)
        transcript = Transcript()
        transcript.append(5)
        tails = [follow(feed, transcript, 5) for _ in range(3)]
        await asyncio.sleep(0.05)  # placed at the end, with nothing read but the ending
        transcript.reads.clear()
        announce(feed, *transcript.append(4))
        chunks = [await asyncio.wait_for(feed.chunk(tail), 5) for tail in tails]
        assert chunks[0] is not None and b"id: 6\r\n" in chunks[0] and b"id: 9\r\n" in chunks[0]
        assert all(chunk is chunks[0] for chunk in chunks)  # joined once, sent to all three
        assert len(transcript.reads) == 1  # one read of the new lines for the three tails
        late = follow(feed, transcript, 7)  # from the middle of what the window holds
        assert await seqs_of(feed, late, 9) == [8, 9]
        assert len(transcript.reads) == 1  # from memory: nothing read for it
        feed.close()

    asyncio.run(main())


def test_a_tail_left_behind_the_window_reads_its_way_back_with_no_gap_or_repeat() -> None:
    async def main() -> None:
        feed = Feed(asyncio.get_running_loop(), max_subscribers=10, queue_size=2)
        transcript = Transcript()
        transcript.append(3)
        quick, slow = follow(feed, transcript, 3), follow(feed, transcript, 1)
        assert await seqs_of(feed, slow, 3) == [2, 3]  # read back from the file
        for _ in range(6):  # six reads of the new lines; the window keeps the last two
            announce(feed, *transcript.append(5))
            assert (await seqs_of(feed, quick, transcript.last))[-1] == transcript.last
        window = feed.tails[SID]
        assert window.start > slow.offset  # the slow one is behind what memory holds
        transcript.reads.clear()
        assert await seqs_of(feed, slow, transcript.last) == list(range(4, transcript.last + 1))
        behind = [offset for offset, _until in transcript.reads if offset < window.start]
        assert behind  # it read the transcript itself to catch up
        announce(feed, *transcript.append(2))  # and then follows from memory again
        transcript.reads.clear()
        assert await seqs_of(feed, slow, transcript.last) == [34, 35]
        assert all(offset >= window.start for offset, _until in transcript.reads)
        feed.close()

    asyncio.run(main())


def test_a_tail_ends_when_its_session_is_deleted_after_what_it_had() -> None:
    async def main() -> None:
        feed = Feed(asyncio.get_running_loop(), max_subscribers=10, queue_size=100)
        transcript = Transcript()
        tail = follow(feed, transcript, 0)
        await asyncio.sleep(0.05)
        announce(feed, *transcript.append(2))
        assert await seqs_of(feed, tail, 2) == [1, 2]
        entry = {"id": ENTRY, "op": "session.deleted", "session": SID, "scope": "project:x"}
        feed.publish(JOURNAL, entry, ENTRY)
        assert await asyncio.wait_for(feed.chunk(tail), 5) is None
        assert not feed.subscribers and not feed.tails

    asyncio.run(main())


def test_appends_told_of_while_a_read_is_under_way_are_read_next() -> None:
    async def main() -> None:
        feed = Feed(asyncio.get_running_loop(), max_subscribers=10, queue_size=100)
        transcript = Transcript()
        gate = threading.Event()
        read = transcript.read

        def slow_read(offset: int, until: int) -> tuple[list[dict[str, Any]], int]:
            data = transcript.data  # what was acknowledged when the read began
            gate.wait(5)
            return read(offset, until, data)

        transcript.read = slow_read  # type: ignore[method-assign]
        tail = follow(feed, transcript, 0)
        gate.set()
        await asyncio.sleep(0.05)
        gate.clear()
        announce(feed, *transcript.append(1))
        await asyncio.sleep(0.05)  # its read has begun and waits at the gate
        announce(feed, *transcript.append(1))  # told of while that read is under way
        gate.set()
        assert await seqs_of(feed, tail, 2) == [1, 2]  # a second read, with no append after
        feed.close()

    asyncio.run(main())
