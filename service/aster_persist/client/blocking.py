"""``Client``: the blocking client, every endpoint method (`endpoints.py`) returning its
answer, plus the journal read page by page and the followed feeds, which reconnect by
themselves when the connection drops."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, Literal, TypeVar

import httpx

from ..schemas.journal import JournalEntry
from .calls import Call
from .connection import http_options
from .endpoints import Endpoints
from .errors import check, error_of, unavailable
from .sse import BUSY, Feed

T = TypeVar("T")


class Client(Endpoints):
    """A blocking client. ``url`` defaults to ASTER_URL, then ``http://127.0.0.1:4627``;
    ``token`` to ASTER_TOKEN, then the data home's token file."""

    blocking: Literal[True] = True

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 60,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.http = httpx.Client(transport=transport, **http_options(url, token, timeout))

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def run(self, call: Call[T]) -> T:
        """Send the request ``call`` describes and read its reply (what every endpoint
        method does)."""
        try:
            response = self.http.send(call.request(self.http))
        except httpx.TransportError as exc:
            raise unavailable(self.http.base_url, exc) from None
        return call.read(check(response, call.answers))

    def journal(self, *, after: str | None = None, **filters: Any) -> Iterator[JournalEntry]:
        """Every journal entry after ``after`` (from the first without), page by page."""
        cursor = after
        while True:
            page = self.journal_page(cursor=cursor, limit=1000, **filters)
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def follow(
        self,
        *,
        after: str | None = None,
        scope: str | None = None,
        op: str | None = None,
        repo_root: str | None = None,
        notices: bool = False,
        retry: float = 0.5,
        give_up_after: float | None = 60.0,
    ) -> Iterator[JournalEntry | dict[str, Any]]:
        """The change feed: journal entries after ``after``, then live, forever,
        reconnecting and resuming by itself. With ``notices``, ``session.appended``
        notices (plain dicts) come too."""
        filters = {"scope": scope, "op": op, "repo_root": repo_root}
        feed = Feed("/v1/events", after, filters, retry=retry, give_up_after=give_up_after)
        for item in self._followed(feed):
            if notices or isinstance(item, JournalEntry):
                yield item

    def follow_session(
        self,
        session_id: str,
        *,
        after: int = 0,
        retry: float = 0.5,
        give_up_after: float | None = 60.0,
    ) -> Iterator[dict[str, Any]]:
        """A session's events after seq ``after``, then each one appended, forever."""
        path = f"/v1/sessions/{session_id}/events/stream"
        feed = Feed(path, str(after), {}, retry=retry, give_up_after=give_up_after)
        yield from self._followed(feed)  # type: ignore[misc]

    def _followed(self, feed: Feed) -> Iterator[JournalEntry | dict[str, Any]]:
        """What a stream sends, reconnecting whenever it drops (the daemon restarting,
        the network blinking) and resuming after the last item; see `Feed.dropped`."""
        while True:
            failure: Exception | None = None
            try:
                with self.http.stream(**feed.request()) as response:
                    if response.status_code == BUSY:  # too many at once: later, not never
                        response.read()
                        failure = error_of(response)
                    else:
                        _check_stream(response)
                        feed.connected()
                        yield from feed.take(response.iter_lines())
            except httpx.TransportError as exc:
                failure = exc  # dropped or restarting: resume from the last item seen
            time.sleep(feed.dropped(self.http.base_url, failure))


def _check_stream(response: httpx.Response) -> None:
    if response.status_code >= 400:
        response.read()
        raise error_of(response)
