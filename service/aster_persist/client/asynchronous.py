"""``AsyncClient``: the same client for asyncio, every endpoint method (`endpoints.py`)
awaitable, the journal and the followed feeds async iterators that reconnect by
themselves when the connection drops."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Literal, TypeVar

import httpx

from ..schemas.journal import JournalEntry
from .calls import Call
from .connection import http_options
from .endpoints import Endpoints
from .errors import check, error_of, unavailable
from .sse import BUSY, Feed

T = TypeVar("T")


class AsyncClient(Endpoints):
    """The same client for asyncio: every endpoint method is awaitable."""

    blocking: Literal[False] = False

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 60,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.http = httpx.AsyncClient(transport=transport, **http_options(url, token, timeout))

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.http.aclose()

    async def run(self, call: Call[T]) -> T:
        """Send the request ``call`` describes and read its reply (what every endpoint
        method does)."""
        try:
            response = await self.http.send(call.request(self.http))
        except httpx.TransportError as exc:
            raise unavailable(self.http.base_url, exc) from None
        return call.read(check(response, call.answers))

    async def journal(
        self, *, after: str | None = None, **filters: Any
    ) -> AsyncIterator[JournalEntry]:
        """Every journal entry after ``after`` (from the first without), page by page."""
        cursor = after
        while True:
            page = await self.journal_page(cursor=cursor, limit=1000, **filters)
            for entry in page.items:
                yield entry
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def follow(
        self,
        *,
        after: str | None = None,
        scope: str | None = None,
        op: str | None = None,
        repo_root: str | None = None,
        notices: bool = False,
        retry: float = 0.5,
        give_up_after: float | None = 60.0,
    ) -> AsyncIterator[JournalEntry | dict[str, Any]]:
        """The change feed, as `Client.follow`."""
        filters = {"scope": scope, "op": op, "repo_root": repo_root}
        feed = Feed("/v1/events", after, filters, retry=retry, give_up_after=give_up_after)
        async with contextlib.aclosing(self._followed(feed)) as items:
            async for item in items:  # closed with this one: the stream is let go at once
                if notices or isinstance(item, JournalEntry):
                    yield item

    async def follow_session(
        self,
        session_id: str,
        *,
        after: int = 0,
        retry: float = 0.5,
        give_up_after: float | None = 60.0,
    ) -> AsyncIterator[dict[str, Any]]:
        """A session's events after seq ``after``, then each one appended, forever."""
        path = f"/v1/sessions/{session_id}/events/stream"
        feed = Feed(path, str(after), {}, retry=retry, give_up_after=give_up_after)
        async with contextlib.aclosing(self._followed(feed)) as items:
            async for item in items:
                yield item  # type: ignore[misc]

    async def _followed(self, feed: Feed) -> AsyncGenerator[JournalEntry | dict[str, Any], None]:
        """What a stream sends, reconnecting whenever it drops; see `Feed.dropped`."""
        while True:
            failure: Exception | None = None
            try:
                async with self.http.stream(**feed.request()) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        if response.status_code != BUSY:
                            raise error_of(response)
                        failure = error_of(response)  # too many at once: later, not never
                    else:
                        feed.connected()
                        async for line in response.aiter_lines():
                            for item in feed.take((line,)):
                                yield item
            except httpx.TransportError as exc:
                failure = exc
            await asyncio.sleep(feed.dropped(self.http.base_url, failure))
