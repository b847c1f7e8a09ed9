"""Server-Sent Events: the change feed (`/v1/events`) and one session's tail.

`/v1/events` sends every journal entry as event `journal` with `id:` the entry's id, and
`session.appended` notices (no id, so a resume point is always a journal entry). With
`Last-Event-ID` (or `?after=`) it first replays every entry after that id from the
journal, then continues live: it subscribes before it reads, and skips live entries it
has already sent, so the switch loses and repeats nothing. Each write to a stream
carries everything that is new for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Header, Query, Request
from sse_starlette import EventSourceResponse

from ..errors import Invalid, NotFound, SessionNotFound
from ..feed import APPENDED, JOURNAL, Feed, Subscriber, encode
from ..sessions import Sessions
from ..storage.home import ULID_RE, check_session_id, normalize_repo_root, project_slug
from ..storage.journal import Journal, matches_op
from .sessions import ERRORS

router = APIRouter(prefix="/v1", tags=["live"])

SEND_TIMEOUT = 30.0  # a client that takes longer to accept one write is disconnected
SHUTDOWN_GRACE = 2.0  # seconds a stream has to finish cleanly when the server stops
STREAM: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/event-stream": {}}, "description": "An SSE stream"}
}


def _respond(
    feed: Feed, subscriber: Subscriber, stream: Callable[[], AsyncIterator[bytes]]
) -> EventSourceResponse:
    """Stream ``stream()``; on server shutdown it ends cleanly (the last chunk sent)."""
    shutdown = anyio.Event()

    async def ended() -> AsyncIterator[bytes]:
        async def watch() -> None:
            await shutdown.wait()
            feed.end(subscriber)

        watcher = asyncio.get_running_loop().create_task(watch())
        try:
            async for chunk in stream():
                yield chunk
        finally:
            watcher.cancel()
            feed.unsubscribe(subscriber)

    return EventSourceResponse(
        ended(),
        ping=feed.heartbeat,
        send_timeout=SEND_TIMEOUT,
        shutdown_event=shutdown,
        shutdown_grace_period=SHUTDOWN_GRACE,
    )


@router.get("/events", operation_id="events-stream", responses={**ERRORS, **STREAM})
async def events(
    request: Request,
    after: str | None = None,
    scope: str | None = None,
    op: str | None = None,
    repo_root: str | None = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    """The change feed: journal entries after `Last-Event-ID` (or `after`), then live,
    with `session.appended` notices; filtered by `scope`, `op` (`op=memory` matches every
    `memory.*`) and `repo_root`."""
    return await open_feed(
        request.app, last_event_id or after, scope=scope, op=op, repo_root=repo_root
    )


async def open_feed(
    app: Any, start: str | None, *, scope: str | None, op: str | None, repo_root: str | None
) -> EventSourceResponse:
    """The change feed's response (the route, and the fast path, answer with this)."""
    if start is not None and not ULID_RE.match(start):
        raise Invalid("Last-Event-ID must be a journal entry id (a ULID)")
    if repo_root is not None:
        wanted = "project:" + project_slug(await asyncio.to_thread(normalize_repo_root, repo_root))
        if scope is not None and scope != wanted:
            raise Invalid("scope and repo_root name different projects")
        scope = wanted

    def accepts(kind: str, item: dict[str, Any]) -> bool:
        if scope is not None and item.get("scope") != scope:
            return False
        if op is not None:
            return matches_op(kind if kind == APPENDED else item.get("op"), op)
        return True

    filtered = scope is not None or op is not None
    feed: Feed = app.state.feed
    journal: Journal = app.state.journal
    # Subscribe before reading the journal: nothing can fall between the two.
    subscriber = feed.subscribe(accepts if filtered else None)

    async def stream() -> AsyncIterator[bytes]:
        last = start
        if start is not None:
            replay = []
            for entry in await asyncio.to_thread(journal.entries_after, start):
                if accepts(JOURNAL, entry):
                    replay.append(encode(JOURNAL, entry, entry["id"]))
                last = entry["id"]
            if replay:
                yield b"".join(replay)
        while (items := await feed.next(subscriber)) is not None:
            chunk = []
            for item in items:
                if item.kind == JOURNAL:
                    if last is not None and item.data["id"] <= last:
                        continue  # already sent from the journal
                    last = item.data["id"]
                chunk.append(item.encoded)
            if chunk:
                yield b"".join(chunk)

    return _respond(feed, subscriber, stream)


@router.get(
    "/sessions/{session_id}/events/stream",
    operation_id="sessions-events-stream",
    responses={**ERRORS, **STREAM},
)
async def session_stream(
    request: Request,
    session_id: str,
    after: Annotated[int | None, Query(ge=0)] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    """A session's events after `Last-Event-ID` (a seq; or `after`), then each new append
    as it is acknowledged; `id:` is the event's seq."""
    check_session_id(session_id)
    start = after or 0
    if last_event_id is not None:
        if not last_event_id.isdigit():
            raise Invalid("Last-Event-ID must be a seq (a whole number)")
        start = int(last_event_id)
    sessions: Sessions = request.app.state.sessions
    if sessions.store.locations.get(session_id) is None:
        raise NotFound(f"no session {session_id}")
    feed: Feed = request.app.state.feed
    subscriber = feed.subscribe(
        lambda kind, item: kind == APPENDED and item["session_id"] == session_id
    )

    def tail(offset: int) -> tuple[list[dict[str, Any]], int]:
        lines, end = sessions.store.read_tail(session_id, offset)
        return sessions.blobs.inline(lines)[0], end

    async def stream() -> AsyncIterator[bytes]:
        sent = start
        offset = 0
        while True:
            try:
                lines, offset = await asyncio.to_thread(tail, offset)
            except SessionNotFound:
                return  # deleted while followed
            chunk = []
            for line in lines:
                seq = line.get("seq")
                if isinstance(seq, int) and seq > sent and line.get("type") != "session":
                    sent = seq
                    chunk.append(encode("event", line, str(seq)))
            if chunk:
                yield b"".join(chunk)
            if await feed.next(subscriber) is None:
                return

    return _respond(feed, subscriber, stream)
