"""Server-Sent Events: the change feed (`/v1/events`) and one session's tail.

`/v1/events` sends every journal entry as event `journal` with `id:` the entry's id, and
`session.appended` notices (no id, so a resume point is always a journal entry). With
`Last-Event-ID` (or `?after=`) it first replays every entry after that id from the
journal, then continues live: it subscribes before it reads, and skips live entries it
has already sent, so the switch loses and repeats nothing.

`/v1/sessions/{id}/events/stream` sends a session's events after `Last-Event-ID` (a
seq), then each one once it is acknowledged. Of the transcript it reads only what
follows that seq; then it follows the window that all tails of the session share
(feed.py), so a new append is read once however many tails there are.

Each write to a stream carries everything that is new for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Annotated, Any

import anyio
import orjson
from fastapi import APIRouter, Query, Request
from sse_starlette import EventSourceResponse

from ..errors import Invalid
from ..live.feed import APPENDED, JOURNAL, Feed
from ..live.followers import Subscriber
from ..live.sse import encode
from ..schemas.journal import matches_op
from ..schemas.names import ULID_RE, check_session_id, project_slug
from ..secrets.redact import might_hold, redact_text, redacted
from .plumbing import ERRORS, running
from .rules import LastEventId

router = APIRouter(prefix="/v1", tags=["live"])

SEND_TIMEOUT = 30.0  # a client that takes longer to accept one write is disconnected
SHUTDOWN_GRACE = 2.0  # seconds a stream has to finish cleanly when the server stops


def _stream_doc(description: str, *events: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    """The 200 response of an SSE route: each item of the stream is one of ``events``
    (the SSE fields ``event``, ``id`` and ``data``, ``data`` being JSON)."""
    return {
        200: {
            "description": description,
            "content": {
                "text/event-stream": {
                    "schema": {"type": "array", "items": {"oneOf": list(events)}},
                    "example": events[0]["example"],
                }
            },
        }
    }


def _sse(name: str, data: dict[str, Any], example: str, *, id_doc: str | None) -> dict[str, Any]:
    properties: dict[str, Any] = {"event": {"const": name}, "data": data}
    if id_doc:
        properties["id"] = {"type": "string", "description": id_doc}
    return {
        "type": "object",
        "title": f"SSE event `{name}`",
        "properties": properties,
        "required": ["event", "data"],
        "example": example,
    }


FEED_DOC = _stream_doc(
    "The change feed: `journal` events (resume with `Last-Event-ID`), `session.appended`"
    " notices, and a comment line every ASTER_HEARTBEAT_SECONDS while idle.",
    _sse(
        JOURNAL,
        {"$ref": "#/components/schemas/JournalEntry"},
        'event: journal\nid: 01JD2X9Q6B7T1S8W2R4N5M3K0H\ndata: {"id": "01JD2X9Q6B7T1S8W2R4N5M3K0H",'
        ' "op": "memory.write", "scope": "global", "name": "testing", ...}\n\n',
        id_doc="The journal entry's id: send it back as `Last-Event-ID` to resume.",
    ),
    _sse(
        APPENDED,
        {
            "type": "object",
            "properties": {
                "session_id": {"type": "string"},
                "scope": {"type": "string"},
                "first_seq": {"type": "integer"},
                "last_seq": {"type": "integer"},
                "kinds": {"type": "array", "items": {"type": "string"}},
                "source": {
                    "type": "string",
                    "description": "What an import brought them from (its source's key).",
                },
                "machine": {
                    "type": "string",
                    "description": "The team's machine whose session they are (a copy here).",
                },
            },
            "required": ["session_id", "scope", "first_seq", "last_seq", "kinds"],
        },
        'event: session.appended\ndata: {"session_id": "01JD2X...", "scope": "project:srv-app-1a2b3c4d",'
        ' "first_seq": 7, "last_seq": 9, "kinds": ["message"]}\n\n',
        id_doc=None,
    ),
)
SESSION_DOC = _stream_doc(
    "A session's events after `Last-Event-ID` (a seq), then each one as it is appended.",
    _sse(
        "event",
        {"type": "object", "description": "One transcript line, as `GET /events` returns it."},
        'event: event\nid: 7\ndata: {"type": "message", "role": "user", "content": "hi",'
        ' "seq": 7, "ts": "2026-01-02T03:04:05.678Z"}\n\n',
        id_doc="The event's seq: send it back as `Last-Event-ID` to resume.",
    ),
)


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


@router.get(
    "/events",
    operation_id="events-stream",
    response_class=EventSourceResponse,
    responses={**ERRORS, **FEED_DOC},
)
async def events(
    request: Request,
    after: str | None = None,
    scope: str | None = None,
    op: str | None = None,
    repo_root: str | None = None,
    last_event_id: LastEventId = None,
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
    if start is not None and not ULID_RE.fullmatch(start):
        raise Invalid("Last-Event-ID must be a journal entry id (a ULID)")
    scopes = None if scope is None else {scope}
    if repo_root is not None:
        # its sessions' scope, and its memory's (in a team, named by the project's key)
        root = await running(app).sessions.repo_root(repo_root)
        wanted = {"project:" + project_slug(root), await running(app).memory.scope_of(root)}
        if scope is not None and scope not in wanted:
            raise Invalid("scope and repo_root name different projects")
        scopes = wanted if scope is None else {scope}

    def accepts(kind: str, item: dict[str, Any]) -> bool:
        if scopes is not None and item.get("scope") not in scopes:
            return False
        if op is not None:
            return matches_op(kind if kind == APPENDED else item.get("op"), op)
        return True

    filtered = scopes is not None or op is not None
    feed = running(app).feed
    journal = running(app).journal
    # Subscribe before reading the journal: nothing can fall between the two.
    subscriber = feed.subscribe(accepts if filtered else None)

    async def stream() -> AsyncIterator[bytes]:
        if start is not None:
            replay = []
            last = start
            for entry in await asyncio.to_thread(journal.entries_after, start):
                if accepts(JOURNAL, entry):
                    replay.append(encode(JOURNAL, entry, entry["id"]))
                last = entry["id"]
            subscriber.after = last  # live entries up to it are skipped: already sent
            if replay:
                yield b"".join(replay)
        while (chunk := await feed.chunk(subscriber)) is not None:
            yield chunk

    return _respond(feed, subscriber, stream)


@router.get(
    "/sessions/{session_id:session}/events/stream",
    operation_id="sessions-events-stream",
    response_class=EventSourceResponse,
    responses={**ERRORS, **SESSION_DOC},
)
async def session_stream(
    request: Request,
    session_id: str,
    after: Annotated[int | None, Query(ge=0)] = None,
    last_event_id: LastEventId = None,
    redact: bool = False,
) -> EventSourceResponse:
    """A session's events after `Last-Event-ID` (a seq; or `after`), then each new append
    as it is acknowledged; `id:` is the event's seq. With `redact=true`, each secret in
    them is replaced by `[redacted: <kind>]`."""
    check_session_id(session_id)
    start = after or 0
    if last_event_id is not None:
        if not (last_event_id.isascii() and last_event_id.isdigit() and len(last_event_id) < 19):
            raise Invalid("Last-Event-ID must be a seq (a whole number)")
        start = int(last_event_id)
    sessions = running(request).sessions
    # a link in the session's place is refused (409) before the stream starts
    await asyncio.to_thread(sessions.tails.check, session_id)
    feed = running(request).feed
    subscriber = feed.follow(
        session_id,
        start,
        read=partial(sessions.tails.read_piece, session_id),
        find=partial(sessions.tails.line_before, session_id),
        place=partial(sessions.tails.tail_end, session_id),
    )

    async def stream() -> AsyncIterator[bytes]:
        while (chunk := await feed.chunk(subscriber)) is not None:
            yield _redacted_sse(chunk) if redact else chunk

    return _respond(feed, subscriber, stream)


def _redacted_sse(chunk: bytes) -> bytes:
    """Server-sent events with each secret in their JSON data redacted."""
    if not might_hold(chunk.decode("utf-8", "replace")):  # nothing any secret needs
        return chunk
    out = []
    for line in chunk.split(b"\r\n"):
        if line.startswith(b"data: "):
            try:
                line = b"data: " + orjson.dumps(redacted(orjson.loads(line[6:])))
            except orjson.JSONDecodeError:
                line = b"data: " + redact_text(line[6:].decode("utf-8", "replace"))[0].encode()
        out.append(line)
    return b"\r\n".join(out)
