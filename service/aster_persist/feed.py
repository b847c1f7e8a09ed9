"""The live change feed: journal entries and append notices, fanned out to subscribers.

Publishing never waits: every subscriber has a bounded queue, and one that falls behind
(a client that stopped reading) is dropped, so it can only ever cost itself; it resumes
later from the journal with ``Last-Event-ID``. Items are handed to the event loop in
the order they were published (journal entries are published under the journal's lock,
so in id order), and fanned out from there.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import TooManySubscribers

JOURNAL = "journal"
APPENDED = "session.appended"
DROPPED: tuple[str, dict[str, Any]] = (
    "dropped",
    {},
)  # the last item a subscriber that fell behind receives


@dataclass(eq=False)
class Subscriber:
    accepts: Callable[[str, dict[str, Any]], bool]
    queue: asyncio.Queue[tuple[str, dict[str, Any]]] = field(
        default_factory=lambda: asyncio.Queue(maxsize=0)
    )
    dropped: bool = False


class Feed:
    def __init__(
        self, loop: asyncio.AbstractEventLoop, *, max_subscribers: int, queue_size: int
    ) -> None:
        self.loop = loop
        self.max_subscribers = max_subscribers
        self.queue_size = queue_size
        self.subscribers: list[Subscriber] = []
        self.dropped = 0  # subscribers dropped for falling behind, since start
        self.closed = False

    def subscribe(self, accepts: Callable[[str, dict[str, Any]], bool]) -> Subscriber:
        if len(self.subscribers) >= self.max_subscribers:
            raise TooManySubscribers(
                f"{self.max_subscribers} streams are open, the most this service serves "
                "(ASTER_MAX_SUBSCRIBERS); try again later",
                headers={"Retry-After": "5"},
            )
        subscriber = Subscriber(accepts, asyncio.Queue(maxsize=self.queue_size))
        self.subscribers.append(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        if subscriber in self.subscribers:
            self.subscribers.remove(subscriber)

    def publish(self, kind: str, item: dict[str, Any]) -> None:
        """Hand an item to the subscribers (any thread; never blocks)."""
        if self.subscribers and not self.closed:
            # A closed loop (shutdown) has nobody left to tell.
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._fan_out, kind, item)

    def _fan_out(self, kind: str, item: dict[str, Any]) -> None:
        for subscriber in list(self.subscribers):
            if subscriber.dropped or not subscriber.accepts(kind, item):
                continue
            try:
                subscriber.queue.put_nowait((kind, item))
            except asyncio.QueueFull:
                self._drop(subscriber)

    def _drop(self, subscriber: Subscriber) -> None:
        self.dropped += 1
        self.end(subscriber)

    def end(self, subscriber: Subscriber) -> None:
        """Make a subscriber's stream finish: its next item is ``DROPPED``."""
        subscriber.dropped = True
        while not subscriber.queue.empty():
            subscriber.queue.get_nowait()
        subscriber.queue.put_nowait(DROPPED)
        self.unsubscribe(subscriber)

    def close(self) -> None:
        """End every stream (shutdown)."""
        self.closed = True
        for subscriber in list(self.subscribers):
            self.end(subscriber)
