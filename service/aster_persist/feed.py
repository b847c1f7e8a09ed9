"""The live change feed: journal entries and append notices, fanned out to subscribers.

Items go into one shared, bounded log, each encoded once as a Server-Sent Event.
Subscribers keep a position in it and are woken together, at most once per window while
items keep coming (at once after a quiet spell), so a stream sends everything new in one
write: a hundred followers cost a hundred small wake-ups every few
milliseconds, not a hundred per append. Publishing never waits: a subscriber that falls
more than the log's length behind (a client that stopped reading) is dropped, so it can
only ever cost itself, and resumes later from the journal with ``Last-Event-ID``.
Journal entries are published under the journal's lock, so they enter the log in id
order.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import orjson

from .errors import TooManySubscribers

JOURNAL = "journal"
APPENDED = "session.appended"
# Followers are woken at most once per window while items keep coming: a short window
# keeps delivery quick at ordinary rates, a long one keeps a flood of appends cheap.
QUICK_WINDOW = 0.01  # seconds, while fewer than BUSY items arrive per window
BUSY_WINDOW = 0.05
BUSY = 20

Accepts = Callable[[str, dict[str, Any]], bool]


class Item:
    """One event of the feed; encoded as a Server-Sent Event once, when first sent."""

    __slots__ = ("_encoded", "data", "event_id", "kind")

    def __init__(self, kind: str, data: dict[str, Any], event_id: str | None = None) -> None:
        self.kind = kind
        self.data = data
        self.event_id = event_id
        self._encoded: bytes | None = None

    @property
    def encoded(self) -> bytes:
        if self._encoded is None:
            self._encoded = encode(self.kind, self.data, self.event_id)
        return self._encoded


def encode(kind: str, data: dict[str, Any], event_id: str | None = None) -> bytes:
    head = f"id: {event_id}\r\n" if event_id is not None else ""
    return f"{head}event: {kind}\r\ndata: ".encode() + orjson.dumps(data) + b"\r\n\r\n"


def _continues(last: Item, item: Item) -> bool:
    """Whether ``item`` is the next append notice of the same session as ``last``."""
    return (
        last.kind == item.kind == APPENDED
        and last.data["session_id"] == item.data["session_id"]
        and last.data["last_seq"] + 1 == item.data["first_seq"]
    )


@dataclass(eq=False)
class Subscriber:
    accepts: Accepts | None
    position: int
    waiter: asyncio.Future[None] | None = None
    dropped: bool = False
    ended: bool = False


@dataclass
class Feed:
    loop: asyncio.AbstractEventLoop
    max_subscribers: int
    queue_size: int
    heartbeat: float = 15.0  # seconds between comment lines on an idle stream
    subscribers: list[Subscriber] = field(default_factory=list)
    dropped: int = 0  # subscribers dropped for falling behind, since start
    closed: bool = False
    _log: deque[Item] = field(default_factory=deque)
    _first: int = 0  # position of _log[0]
    _wake_at: float = 0.0
    _wake_scheduled: bool = False
    _window: float = QUICK_WINDOW
    _read_upto: int = 0  # the furthest any follower has read
    _since_wake: int = 0
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
                headers={"Retry-After": "5"},
            )
        subscriber = Subscriber(accepts, self._end)
        self.subscribers.append(subscriber)
        # It starts past the last item: nothing may be merged into that one any more.
        self._read_upto = max(self._read_upto, self._end)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        if subscriber in self.subscribers:
            self.subscribers.remove(subscriber)

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
        if not self._wake_scheduled:
            self._wake_scheduled = True
            delay = max(0.0, self._wake_at + self._window - time.monotonic())
            self.loop.call_later(delay, self._wake)

    def _wake(self) -> None:
        self._wake_scheduled = False
        self._wake_at = time.monotonic()
        self._window = BUSY_WINDOW if self._since_wake >= BUSY else QUICK_WINDOW
        self._since_wake = 0
        for subscriber in list(self.subscribers):
            if subscriber.position < self._first:
                self.dropped += 1
                self.end(subscriber)  # fell further behind than the log reaches
            elif subscriber.waiter is not None and not subscriber.waiter.done():
                subscriber.waiter.set_result(None)

    def end(self, subscriber: Subscriber) -> None:
        """Make a follower's stream finish after what it is sending now."""
        subscriber.ended = True
        self.unsubscribe(subscriber)
        if subscriber.waiter is not None and not subscriber.waiter.done():
            subscriber.waiter.set_result(None)

    async def next(self, subscriber: Subscriber) -> list[Item] | None:
        """The items a follower has not had yet (waiting for some); None once it ended."""
        while not subscriber.ended:
            if subscriber.position < self._first:
                self.dropped += 1
                self.end(subscriber)
                break
            if subscriber.position < self._end:
                start = subscriber.position - self._first
                items = list(islice(self._log, start, None))
                subscriber.position = self._end
                self._read_upto = max(self._read_upto, self._end)
                if subscriber.accepts is not None:
                    items = [i for i in items if subscriber.accepts(i.kind, i.data)]
                if items:
                    return items
                continue
            subscriber.waiter = self.loop.create_future()
            await subscriber.waiter
            subscriber.waiter = None
        return None

    def close(self) -> None:
        """End every stream (shutdown)."""
        self.closed = True
        for subscriber in list(self.subscribers):
            self.end(subscriber)
