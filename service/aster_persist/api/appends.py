"""The append path, whole: an append's body parsed and checked (one event, a JSON array,
or ``{"events": [...]}``; strict JSON; each event validated; the key and ``If-Match``
read), appended, and the reply's status, headers and body. The documented route and
the fast path (``fastpath.py``) both run it."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import Invalid
from ..schemas.names import check_session_id
from ..schemas.sessions import EventsIn
from ..schemas.validation import validate_events
from . import body as strict
from .rules import parse_seq_match

if TYPE_CHECKING:
    from ..services.sessions import Sessions
    from ..storage.transcripts import AppendResult

MAX_KEY = 200


def _check_key(key: object) -> None:
    """An idempotency key, in the header or the body, is 1 to 200 characters (the header
    wins when both are sent)."""
    if key is not None and (not isinstance(key, str) or not 0 < len(key) <= MAX_KEY):
        raise Invalid(f"an idempotency key is a string of 1 to {MAX_KEY} characters")


def _json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        with contextlib.suppress(ValueError):  # a body too deep for orjson says so
            strict.loads(raw)
        raise Invalid(f"the body is not valid JSON: {exc}") from None


def appended_status(result: AppendResult) -> int:
    """201 for a new write, 200 for a replay of an idempotency key."""
    return 200 if result.replayed else 201


def appended_headers(result: AppendResult) -> dict[str, str]:
    out = {"ETag": f'"{result.last_seq}"'}
    if result.replayed:
        out["Idempotent-Replayed"] = "true"
    return out


def appended_body(result: AppendResult) -> bytes:
    return b'{"first_seq":%d,"last_seq":%d,"count":%d,"replayed":%s}' % (
        result.first_seq,
        result.last_seq,
        result.count,
        b"true" if result.replayed else b"false",
    )


def _batch_loc(path: strict.Path) -> str:
    return "events" + strict.brackets(path)


def _event_loc(path: strict.Path) -> str:
    return "events[0]" + strict.brackets(path)


def _wrapped_loc(path: strict.Path) -> str:
    if len(path) > 1 and path[0] == "events" and isinstance(path[1], int):
        return _batch_loc(path[1:])
    return strict.body_loc(path)


async def handle_append(
    sessions: Sessions, session_id: str, headers: Mapping[str, str], raw: bytes
) -> AppendResult:
    """Parse, validate and append one request body; the whole append path."""
    check_session_id(session_id)
    content_type = headers.get("content-type")
    if content_type is not None and "json" not in content_type:
        raise Invalid(f"send the events as application/json, not {content_type[:60]}")
    key = headers.get("idempotency-key")
    data = _json(raw)
    if isinstance(data, list):
        strict.check(raw, data, _batch_loc)
        events = data
    elif isinstance(data, dict) and "type" not in data and "events" in data:
        strict.check(raw, data, _wrapped_loc)
        strict.refuse_unknown(data.keys() - EventsIn.model_fields.keys())
        events = data["events"]
        body_key = data.get("idempotency_key")
        _check_key(body_key)
        key = key if key is not None else body_key
        if not isinstance(events, list):
            raise Invalid("events must be a JSON array")
    elif isinstance(data, dict):
        strict.check(raw, data, _event_loc)  # (a key inside an event is refused with it)
        events = [data]
    else:
        raise Invalid('send an event object, an array of events, or {"events": [...]}')
    events = validate_events(events)
    if not events:
        raise Invalid("the batch holds no events")
    _check_key(key)
    if_match = parse_seq_match(headers.get("if-match"))
    return await sessions.append(session_id, events, key=key, if_match=if_match)
