"""Reading a session's transcript: its events (JSON pages or NDJSON, whole or as a
reader sees them), its chat messages and its export."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from ..errors import Invalid
from ..schemas import cursors
from ..schemas.chat import to_chat_messages, to_context_messages
from ..schemas.names import check_session_id
from ..secrets.redact import redacted
from . import body as strict
from .models import ChatMessages, EventPage
from .plumbing import ERRORS, NDJSON, etag, json_response, running
from .session_docs import NDJSON_DOC

router = APIRouter(prefix="/v1", tags=["sessions"], route_class=strict.StrictRoute)


@router.get(
    "/sessions/{session_id:session}/events",
    operation_id="sessions-events",
    response_model=EventPage,
    responses={**ERRORS, 200: {"content": {NDJSON: NDJSON_DOC}}},
)
async def read_events(
    request: Request,
    session_id: str,
    after: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=100_000)] = 1000,
    type: Annotated[list[str] | None, Query()] = None,
    cursor: str | None = None,
    inline: bool = True,
    raw: bool = True,
    redact: bool = False,
) -> Response:
    """Events after a seq, as JSON pages or NDJSON (`Accept: application/x-ndjson`).
    A large content stored as a blob is put back in place unless `inline=false`, which
    shows its reference (`content_ref`, `bytes`, `preview`). With `raw=false`, events
    leave out what an import kept of its source's own records (`x_source`) and their
    idempotency keys: what a reader shows, often a tenth of the bytes. With
    `redact=true`, each secret in them (a key, a token, a password) is replaced by
    `[redacted: <kind>]`; the events are otherwise exactly as stored."""
    check_session_id(session_id)
    if cursor is not None:
        if not cursors.SEQ.fullmatch(cursor):
            raise Invalid(
                f"cursor must match {cursors.SEQ.pattern}: the seq of the last event read"
            )
        after = int(cursor)
    lines, raw_lines, info = await running(request).sessions.read(session_id, inline=inline)
    picked: list[int] = []
    more = False
    for i, line in enumerate(lines):
        seq = line.get("seq")
        if line.get("type") == "session" or not isinstance(seq, int) or seq <= after:
            continue
        if type and line.get("type") not in type:
            continue
        if len(picked) == limit:
            more = True
            break
        picked.append(i)
    next_cursor = str(lines[picked[-1]]["seq"]) if more and picked else None
    headers = {"ETag": etag(info.last_seq)}
    if next_cursor is not None:
        also = ("&inline=false" if not inline else "") + ("&raw=false" if not raw else "")
        also += "&redact=true" if redact else ""
        headers["Link"] = (
            f"</v1/sessions/{session_id}/events?cursor={next_cursor}&limit={limit}{also}>;"
            ' rel="next"'
        )
    events = [lines[i] if raw else _reader_view(lines[i]) for i in picked]
    if redact:
        events = [redacted(e) for e in events]
    if NDJSON in request.headers.get("accept", ""):
        if raw and not redact:
            body = b"".join(raw_lines[i] + b"\n" for i in picked)
        else:
            body = b"".join(orjson.dumps(e, option=orjson.OPT_APPEND_NEWLINE) for e in events)
        return Response(body, media_type=NDJSON, headers=headers)
    return json_response({"events": events, "next_cursor": next_cursor}, headers=headers)


_NOT_READ = ("x_source", "idempotency_key")  # what raw=false leaves out of an event


def _reader_view(line: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in line.items() if k not in _NOT_READ}


@router.get(
    "/sessions/{session_id:session}/messages",
    operation_id="sessions-messages",
    response_model=ChatMessages,
    responses=ERRORS,
)
async def chat_messages(
    request: Request,
    session_id: str,
    view: Literal["history", "context"] = "history",
    redact: bool = False,
) -> Response:
    """The session as a chat-completions `messages` list: `history` or `context` view;
    `redact=true` replaces each secret in it by `[redacted: <kind>]`."""
    check_session_id(session_id)
    lines, _raw, info = await running(request).sessions.read(session_id)
    messages = to_chat_messages(lines) if view == "history" else to_context_messages(lines)
    messages = redacted(messages) if redact else messages
    return json_response(
        {"session_id": session_id, "view": view, "messages": messages},
        headers={"ETag": etag(info.last_seq)},
    )


@router.get(
    "/sessions/{session_id:session}/export",
    operation_id="sessions-export",
    responses={
        **ERRORS,
        200: {
            "content": {
                NDJSON: NDJSON_DOC,
                "application/json": {
                    "schema": {"type": "array", "items": {"type": "object"}},
                    "example": [{"role": "user", "content": "Why does the build fail?"}],
                },
            }
        },
    },
)
async def export_session(
    request: Request,
    session_id: str,
    format: Literal["native", "openai"] = "native",
    redact: bool = False,
) -> Response:
    """The raw JSONL, byte for byte; or `format=openai` for a chat-completions messages
    array. With `redact=true`, each secret in it (a key, a token, a password) is replaced
    by `[redacted: <kind>]`, as the CLI exports unless asked for `--raw`."""
    check_session_id(session_id)
    sessions = running(request).sessions
    disposition = {"Content-Disposition": f'attachment; filename="{session_id}.jsonl"'}
    if format == "openai":
        lines, _raw, _info = await sessions.read(session_id)
        messages = to_context_messages(lines)
        return json_response(redacted(messages) if redact else messages)
    data = await sessions.export(session_id)
    if redact:
        data = await asyncio.to_thread(_redacted_lines, data)
    return Response(data, media_type=NDJSON, headers=disposition)


def _redacted_lines(data: bytes) -> bytes:
    """JSONL with each secret of each line redacted; a line without one kept as it is."""
    out = []
    for line in data.splitlines(keepends=True):
        record = orjson.loads(line)
        shown = redacted(record)
        out.append(line if shown is record else orjson.dumps(shown) + b"\n")
    return b"".join(out)
