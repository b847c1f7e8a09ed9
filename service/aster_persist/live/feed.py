"""The live change feed and session tails, fanned out to their followers from memory.

Feed items (journal entries and append notices) go into one shared, bounded log, each
encoded once as a Server-Sent Event. A session with tails has one ``Tail``, whatever
their number: the events acknowledged since it was first followed, read from the
transcript once for all of them (only the bytes the append notices announce), each
encoded once, in a bounded window.

- Followers keep a position (in the log; for a tail, a byte offset in the transcript)
  and are woken together, at most once per window while items keep coming (at once
  after a quiet spell), a few per turn of the event loop so that requests are served in
  between. Each write carries everything new for the follower; followers at the same
  place get the same bytes, joined once. The window is long enough that waking the
  followers the last time took at most a small share of it (``LOOP_SHARE`` in a flood
  of appends, ``QUIET_SHARE`` otherwise), so readers, however many, take a bounded part
  of the loop from writers.
- Publishing never waits. A feed subscriber that falls more than the log's length
  behind (a client that stopped reading) is dropped, so it can only ever cost itself,
  and resumes later from the journal with ``Last-Event-ID``.
- A new tail reads only what it asks for: the line it starts from is found by reading
  back from the window in doubling steps. A tail behind the window (new, or slow)
  reads the transcript from its own offset in bounded pieces on a worker thread until
  it is in the window again. Its events come in file order, each sent only if its seq
  is past the last one sent: no gap and no repeat across the switches between file and
  memory. A tail ends once its session is deleted (after what the window held), or if
  the transcript no longer goes on where it was read; either way the client resumes
  with ``Last-Event-ID``.
- Journal entries are published under the journal's lock, so they enter the log in id
  order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any

from ..errors import SessionNotFound, TooManySubscribers
from .followers import PIECE, Accepts, Find, Place, Read, Subscriber, Tail
from .sse import Block, Item, block_of, events_after

if TYPE_CHECKING:
    from ..services.sessions import Appended

log = logging.getLogger("aster_persist")

JOURNAL = "journal"
APPENDED = "session.appended"
GONE = ("session.deleted", "session.purged", "session.pruned")  # a session's tails end
# Followers are woken at most once per window while items keep coming: a short window
# keeps delivery quick at ordinary rates, a long one keeps a flood of appends cheap, and
# each is long enough that waking the followers the last time took at most a share of it.
QUICK_WINDOW = 0.01  # seconds, while fewer than BUSY items a second arrive
BUSY_WINDOW = 0.05
BUSY = 2000
LOOP_SHARE = 0.02  # in a flood
QUIET_SHARE = 0.25  # otherwise
LONGEST_WINDOW = 0.5
ROUSE = 16  # followers woken per turn of the event loop
LARGEST_PIECE = 1 << 27
WINDOW_BYTES = 4 << 20  # of encoded events a tail's window keeps (and one block an item)


def _continues(last: Item, item: Item) -> bool:
    """Whether ``item`` is the next append notice of the same session as ``last``."""
    return (
        last.kind == item.kind == APPENDED
        and last.data["session_id"] == item.data["session_id"]
        and last.data["last_seq"] + 1 == item.data["first_seq"]
    )


@dataclass
class Feed:
    """The change feed and every session tail, fanned out from one bounded log on the
    event loop; publishing never waits, and a follower that falls behind is dropped."""

    loop: asyncio.AbstractEventLoop
    max_subscribers: int
    queue_size: int
    heartbeat: float = 15.0  # seconds between comment lines on an idle stream
    subscribers: list[Subscriber] = field(default_factory=list)
    tails: dict[str, Tail] = field(default_factory=dict)
    dropped: int = 0  # subscribers dropped for falling behind, since start
    closed: bool = False
    _log: deque[Item] = field(default_factory=deque)
    _first: int = 0  # position of _log[0]
    _wake_at: float = 0.0
    _wake_scheduled: bool = False
    _window: float = QUICK_WINDOW
    _read_upto: int = 0  # the furthest any follower has read
    _since_wake: int = 0
    _cost: float = 0.0  # seconds followers took over what the last wake had for them
    _shared: tuple[int, int, list[Item]] | None = None  # the last slice read: from, to, items
    _rousing: deque[Subscriber] = field(default_factory=deque)  # to wake, in turn
    _rouse_scheduled: bool = False
    _thread: int = field(default_factory=threading.get_ident)

    @property
    def _end(self) -> int:
        return self._first + len(self._log)

    def subscribe(self, accepts: Accepts | None = None) -> Subscriber:
        """A new follower, from the next item on (event loop)."""
        if len(self.subscribers) >= self.max_subscribers:
            raise TooManySubscribers(
                f"{self.max_subscribers} streams are open, the most this service serves "
                "(ASTER_MAX_SUBSCRIBERS); try again later",
                retry_after=5,
            )
        subscriber = Subscriber(accepts, self._end)
        self.subscribers.append(subscriber)
        # It starts past the last item: nothing may be merged into that one any more.
        self._read_upto = max(self._read_upto, self._end)
        return subscriber

    def follow(
        self, session_id: str, after: int, read: Read, find: Find, place: Place
    ) -> Subscriber:
        """A new tail of a session, for its events past seq ``after`` (event loop); it
        shares the session's window with the other tails of it, or opens one."""
        subscriber = self.subscribe()
        tail = self.tails.get(session_id)
        if tail is None or tail.gone:
            tail = Tail(session_id, read, find, place)
            self.tails[session_id] = tail
            tail.task = self.loop.create_task(self._place(tail))
        tail.followers.append(subscriber)
        subscriber.tail = tail
        subscriber.sent = after
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        if subscriber not in self.subscribers:
            return
        self.subscribers.remove(subscriber)
        tail = subscriber.tail
        if tail is not None:
            tail.followers.remove(subscriber)
            if not tail.followers and self.tails.get(tail.session_id) is tail:
                del self.tails[tail.session_id]
                if tail.task is not None:
                    tail.task.cancel()

    def appended(self, notice: Appended) -> None:
        """A listener of appends: a ``session.appended`` notice, while anyone follows."""
        if self.subscribers:
            self.publish(APPENDED, notice.wire())

    def journaled(self, entry: dict[str, Any]) -> None:
        """A journal listener: the entry, with its id to resume after."""
        self.publish(JOURNAL, entry, entry["id"])

    def publish(self, kind: str, data: dict[str, Any], event_id: str | None = None) -> None:
        """Add an item for every follower (any thread; never blocks)."""
        if not self.subscribers or self.closed:
            return
        item = Item(kind, data, event_id)
        if kind != JOURNAL and threading.get_ident() == self._thread:
            self._add(item)  # journal entries always queue up, so they stay in id order
        else:
            with contextlib.suppress(RuntimeError):  # a closed loop has nobody to tell
                self.loop.call_soon_threadsafe(self._add, item)

    def _add(self, item: Item) -> None:
        self._since_wake += 1
        if self.tails:
            self._tell_tails(item)
        if self._log and self._read_upto < self._end and _continues(self._log[-1], item):
            # Nobody has read the last notice yet, and this one carries on from it: one
            # notice for the run (a flood of appends to a session is one line per wake).
            last = self._log[-1].data
            data = {
                **last,
                "last_seq": item.data["last_seq"],
                "kinds": sorted({*last["kinds"], *item.data["kinds"]}),
            }
            self._log[-1] = Item(APPENDED, data)
            return
        self._log.append(item)
        if len(self._log) > self.queue_size:
            self._log.popleft()
            self._first += 1
        self._schedule()

    def _tell_tails(self, item: Item) -> None:
        if item.kind == APPENDED:
            tail = self.tails.get(item.data["session_id"])
            if tail is not None and item.data["last_seq"] > tail.announced:
                tail.announced = item.data["last_seq"]
                self._schedule()  # its read starts at the next wake
        elif item.kind == JOURNAL and item.data.get("op") in GONE:
            tail = self.tails.get(item.data.get("session", ""))
            if tail is not None:
                self._gone(tail)

    def _schedule(self) -> None:
        if not self._wake_scheduled:
            self._wake_scheduled = True
            delay = max(0.0, self._wake_at + self._window - time.monotonic())
            self.loop.call_later(delay, self._wake)

    def _wake(self) -> None:
        self._wake_scheduled = False
        self._pace(time.monotonic())
        for tail in self.tails.values():
            self._pull(tail)
        for subscriber in list(self.subscribers):
            if subscriber.tail is not None:
                continue  # woken when its window has something new
            if subscriber.position < self._first:
                self.dropped += 1
                self.end(subscriber)  # fell further behind than the log reaches
            else:
                self._rousing.append(subscriber)
        self._rouse()

    def _pace(self, now: float) -> None:
        """The next window, from what the followers took since the last wake."""
        busy = self._since_wake >= BUSY * max(now - self._wake_at, QUICK_WINDOW)
        share, shortest = (LOOP_SHARE, BUSY_WINDOW) if busy else (QUIET_SHARE, QUICK_WINDOW)
        self._window = max(shortest, min(LONGEST_WINDOW, self._cost / share))
        self._wake_at, self._since_wake, self._cost = now, 0, 0.0

    def _rouse(self) -> None:
        """Wake the followers due, a few per turn of the loop, so that requests are
        served in between rather than after all of them."""
        for _ in range(min(ROUSE, len(self._rousing))):
            _resolve(self._rousing.popleft())
        if self._rousing and not self._rouse_scheduled:
            self._rouse_scheduled = True
            self.loop.call_soon(self._rouse_more)

    def _rouse_more(self) -> None:
        self._rouse_scheduled = False
        self._rouse()

    def end(self, subscriber: Subscriber) -> None:
        """Make a follower's stream finish after what it is sending now."""
        subscriber.ended = True
        self.unsubscribe(subscriber)
        _resolve(subscriber)

    def _took(self, subscriber: Subscriber) -> None:
        """Count what the follower cost the loop since it took its last chunk."""
        if subscriber.took:
            self._cost += time.perf_counter() - subscriber.took
            subscriber.took = 0.0

    async def _wait(self, subscriber: Subscriber) -> None:
        subscriber.waiter = self.loop.create_future()
        try:
            await subscriber.waiter
        finally:
            subscriber.waiter = None

    async def next(self, subscriber: Subscriber) -> list[Item] | None:
        """The items a follower has not had yet (waiting for some); None once it ended."""
        while not subscriber.ended:
            self._took(subscriber)
            if subscriber.position < self._first:
                self.dropped += 1
                self.end(subscriber)
                break
            if subscriber.position < self._end:
                items = self._items(subscriber.position)
                subscriber.position = self._end
                self._read_upto = max(self._read_upto, self._end)
                if subscriber.accepts is not None:
                    items = [i for i in items if subscriber.accepts(i.kind, i.data)]
                if items:
                    subscriber.took = time.perf_counter()
                    return items
                continue
            await self._wait(subscriber)
        return None

    def _items(self, position: int) -> list[Item]:
        """The log from ``position`` on; followers woken together share one slice."""
        shared = self._shared
        if shared is None or shared[:2] != (position, self._end):
            items = list(islice(self._log, position - self._first, None))
            self._shared = shared = (position, self._end, items)
        return shared[2]

    async def chunk(self, subscriber: Subscriber) -> bytes | None:
        """A follower's next write: everything new for it (waiting for some); None once
        its stream is to end."""
        if subscriber.tail is not None:
            return await self._tail_chunk(subscriber, subscriber.tail)
        while (items := await self.next(subscriber)) is not None:
            after = subscriber.after
            if after is not None:
                kept = []
                for item in items:
                    if item.kind == JOURNAL:
                        if item.data["id"] <= after:
                            continue  # already sent from the journal
                        subscriber.after = None  # the live entries have gone past it
                    kept.append(item)
                items = kept
            if items:
                return b"".join(item.encoded for item in items)
        return None

    # -- session tails ------------------------------------------------------------------

    async def _place(self, tail: Tail) -> None:
        """Find where a new window starts: the end of what is acknowledged."""
        try:
            tail.end, tail.last_seq = await asyncio.to_thread(tail.place)
            tail.start, tail.start_seq = tail.end, tail.last_seq
        except Exception as exc:
            _failed(tail, exc)
            self._gone(tail)
        finally:
            tail.placed.set()
            tail.task = None
        self._pull(tail)

    def _pull(self, tail: Tail) -> None:
        """Read what the append notices told of, if a read is not already under way."""
        if tail.reading or not tail.placed.is_set() or tail.gone:
            return
        if tail.announced > tail.last_seq:
            tail.reading = True
            tail.task = self.loop.create_task(self._read_new(tail))

    async def _read_new(self, tail: Tail) -> None:
        piece = PIECE
        told = tail.announced  # what comes in meanwhile waits for the next wake
        try:
            while told > tail.last_seq and not tail.gone:
                block = await asyncio.to_thread(read_block, tail.read, tail.end, piece)
                if block.end == tail.end:  # a line longer than the piece, or nothing there
                    if piece >= LARGEST_PIECE:
                        raise ValueError("the transcript does not go on where it was read")
                    piece *= 2
                    continue
                piece = PIECE
                self._take(tail, block)
        except Exception as exc:
            _failed(tail, exc)
            self._gone(tail)
        finally:
            tail.reading = False
            tail.task = None
        if tail.announced > tail.last_seq:
            self._schedule()  # told of more while it read

    def _take(self, tail: Tail, block: Block) -> None:
        """Add a block just read to the window, dropping the oldest past the bounds."""
        if block.seqs and (block.seqs[0] <= tail.last_seq or not block.rising):
            raise ValueError("the transcript no longer goes on where it was read")
        tail.end = block.end
        if block.seqs:
            tail.last_seq = block.seqs[-1]
            tail.blocks.append(block)
            tail.size += len(block.joined)
        while tail.blocks and (len(tail.blocks) > self.queue_size or tail.size > WINDOW_BYTES):
            old = tail.blocks.popleft()
            tail.size -= len(old.joined)
            tail.start, tail.start_seq = old.end, old.seqs[-1]
        if not tail.blocks:
            tail.start, tail.start_seq = tail.end, tail.last_seq
        self._rousing.extend(s for s in tail.followers if s.offset >= 0)
        self._rouse()

    def _gone(self, tail: Tail) -> None:
        tail.gone = True
        self._rousing.extend(tail.followers)
        self._rouse()

    async def _tail_chunk(self, subscriber: Subscriber, tail: Tail) -> bytes | None:
        if subscriber.offset < 0 and not await self._start(subscriber, tail):
            return None
        while not subscriber.ended:
            self._took(subscriber)
            if subscriber.offset < tail.start:
                try:
                    chunk, end, sent = await asyncio.to_thread(
                        catch_up, tail.read, subscriber.offset, subscriber.piece, subscriber.sent
                    )
                except Exception as exc:
                    _failed(tail, exc)
                    break
                if end == subscriber.offset:  # a line longer than the piece
                    if subscriber.piece >= LARGEST_PIECE:
                        _failed(tail, ValueError("the transcript does not go on where it was"))
                        break
                    subscriber.piece *= 2
                    continue
                subscriber.offset, subscriber.sent, subscriber.piece = end, sent, PIECE
                if chunk:
                    return chunk
                continue
            chunk = tail.chunk(subscriber)
            if chunk:
                subscriber.took = time.perf_counter()
                return chunk
            if tail.gone:
                break
            await self._wait(subscriber)
        self.end(subscriber)
        return None

    async def _start(self, subscriber: Subscriber, tail: Tail) -> bool:
        """Put a new tail at the line it starts from (a read back from the window)."""
        await tail.placed.wait()
        if tail.gone:
            self.end(subscriber)
            return False
        if subscriber.sent >= tail.start_seq:
            subscriber.offset = tail.start  # all it wants is in the window
            return True
        try:
            subscriber.offset = await asyncio.to_thread(tail.find, subscriber.sent, tail.start)
        except Exception as exc:
            _failed(tail, exc)
            self.end(subscriber)
            return False
        return True

    def close(self) -> None:
        """End every stream (shutdown)."""
        self.closed = True
        for subscriber in list(self.subscribers):
            self.end(subscriber)


def _resolve(subscriber: Subscriber) -> None:
    if subscriber.waiter is not None and not subscriber.waiter.done():
        subscriber.waiter.set_result(None)


def _failed(tail: Tail, exc: BaseException) -> None:
    if not isinstance(exc, SessionNotFound):
        log.warning("a tail of session %s ended: %s", tail.session_id, exc)


def read_block(read: Read, offset: int, piece: int) -> Block:
    """The piece of the transcript from ``offset``, its events encoded (a worker thread)."""
    lines, end = read(offset, offset + piece)
    return block_of(lines, offset, end)


def catch_up(read: Read, offset: int, piece: int, sent: int) -> tuple[bytes, int, int]:
    """A follower's piece of the transcript from ``offset``: its events past ``sent``,
    the offset after them and the last seq (a worker thread)."""
    lines, end = read(offset, offset + piece)
    chunk, sent = events_after(lines, sent)
    return chunk, end, sent
