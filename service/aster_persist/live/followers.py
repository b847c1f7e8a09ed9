"""Who follows a live stream: a ``Subscriber`` for each client, and one ``Tail`` for
every follower of one session's transcript (its window of newest events, read once)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from .sse import Block

PIECE = 1 << 20  # bytes a tail reads from its transcript at a time (more for a longer line)

Accepts = Callable[[str, dict[str, Any]], bool]
# A session's acknowledged lines from one byte offset to another, and the offset after
# them (a worker thread; raises SessionNotFound once the session is gone).
Read = Callable[[int, int], tuple[list[dict[str, Any]], int]]
# A line boundary at or before the first event past a seq, read back from an offset.
Find = Callable[[int, int], int]
# The end of a session's acknowledged lines, and the seq of the last one.
Place = Callable[[], tuple[int, int]]


@dataclass(eq=False)
class Tail:
    """What every tail of one session shares: a bounded window of its newest events,
    from byte ``start`` to ``end`` of the transcript (both line boundaries of what was
    acknowledged), read once whatever the number of tails."""

    session_id: str
    read: Read
    find: Find
    place: Place
    start: int = -1  # -1 until placed
    end: int = -1
    start_seq: int = -1  # the seq of the last event before ``start``
    last_seq: int = -1  # ... and before ``end``
    announced: int = -1  # the last seq an append notice has told of
    blocks: deque[Block] = field(default_factory=deque)
    size: int = 0  # bytes of the window's events
    followers: list[Subscriber] = field(default_factory=list)
    gone: bool = False
    reading: bool = False
    placed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    shared: tuple[int, int, bytes] | None = None  # the last chunk handed out: from, to, bytes

    def chunk(self, subscriber: Subscriber) -> bytes:
        """What is new in the window for a follower at or past ``start``."""
        offset, sent = subscriber.offset, subscriber.sent
        blocks = self.blocks
        i = len(blocks)
        while i > 0 and blocks[i - 1].end > offset:
            i -= 1
        subscriber.offset = max(offset, self.end)
        if i == len(blocks):
            return b""
        first = blocks[i]
        if first.start >= offset and first.seqs[0] > sent:  # all of it: the shared bytes
            if self.shared is None or self.shared[:2] != (first.start, self.end):
                joined = b"".join(b.joined for b in islice(blocks, i, None))
                self.shared = (first.start, self.end, joined)
            subscriber.sent = blocks[-1].seqs[-1]
            return self.shared[2]
        out: list[bytes] = []
        for block in islice(blocks, i, None):
            events, sent = block.after(sent)
            out += events
        subscriber.sent = sent
        return b"".join(out)


@dataclass(eq=False)
@dataclass(eq=False)
class Subscriber:
    """One client following the feed or a session's tail: where it is, and how to wake it."""

    accepts: Accepts | None
    position: int
    waiter: asyncio.Future[None] | None = None
    dropped: bool = False
    ended: bool = False
    after: str | None = None  # journal entries up to this id were sent from the journal
    tail: Tail | None = None  # a session tail's
    offset: int = -1  # a tail's place in the transcript: the next line to send
    sent: int = 0  # the last seq a tail sent
    piece: int = PIECE  # what a tail reads from the transcript at a time
    took: float = 0.0  # when the follower took what a wake had for it
