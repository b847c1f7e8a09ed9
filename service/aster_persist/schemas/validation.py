"""Validating transcript lines against the format in ``schemas/events.py``.

Validation checks what the contract requires and nothing more; fields the service does
not know are kept verbatim, because lines are stored as the client sent them (plus
``seq`` and ``ts``), not as re-serialised models.
"""

from __future__ import annotations

from typing import Any, cast

from pydantic import TypeAdapter, ValidationError

from .events import (
    EVENT_TYPES,
    FORMAT_VERSION,
    PART_TYPES,
    ROLES,
    Event,
    SessionHeader,
)

__all__ = ["FORMAT_VERSION", "Event", "SessionHeader", "validate_events", "validate_header"]

_EVENTS = TypeAdapter(list[Event])


def _field_path(prefix: str, loc: tuple[Any, ...]) -> str:
    """``events[0].content`` from pydantic's location, without its union tags."""
    path = prefix
    tags: tuple[str, ...] = ()
    for part in loc:
        if isinstance(part, int):
            tags = PART_TYPES if path.endswith(".content") else EVENT_TYPES
            path += f"[{part}]"
            continue
        text = str(part)
        if text == "str" and path.endswith(".content"):  # the other kind of content
            continue
        if text in tags:
            tags = ROLES if text == "message" else ()
            continue
        if "[" in text:  # a validator wrapper, e.g. function-after[...]
            continue
        tags = ()
        path += f".{text}" if path else text
    return path


def _problems(prefix: str, exc: ValidationError) -> list[dict[str, Any]]:
    out = []
    for err in exc.errors(include_url=False, include_input=False, include_context=True):
        loc = _field_path(prefix, tuple(err["loc"]))
        msg = str(err["msg"]).removeprefix("Value error, ")
        ctx = err.get("ctx") or {}
        if err["type"] in ("union_tag_invalid", "union_tag_not_found") and "discriminator" in ctx:
            name = str(ctx["discriminator"]).strip("'")
            loc = f"{loc}.{name}"
            if ctx.get("tag") == "session" and name == "type":
                msg = "a session header is written only by session creation, never appended"
            elif "tag" in ctx:
                what = name
                if name == "type":
                    what = "content part type" if ".content[" in loc else "event type"
                msg = f"unknown {what} {str(ctx['tag'])[:40]!r}; expected one of {ctx['expected_tags']}"
            else:
                msg = f"{name} is required"
        elif loc.endswith(".seq") and err["type"] in ("none_required", "value_error"):
            msg = "seq is assigned by the server; leave it out"
        elif loc.endswith(".idempotency_key") and err["type"] in ("none_required", "value_error"):
            msg = "send the idempotency key as the Idempotency-Key header, not inside an event"
        elif err["type"] in ("dict_type", "model_type"):
            msg = "an event must be a JSON object"
        name, sep, rest = msg.partition(": ")
        if sep and name.isidentifier():
            loc, msg = f"{loc}.{name}", rest
        out.append({"loc": loc, "msg": msg, "type": err["type"]})
    # Content that is a list was not a string either: say only what is wrong in the list.
    return [
        p
        for p in out
        if not (
            p["type"] == "string_type"
            and p["loc"].endswith(".content")
            and any(q["loc"].startswith(p["loc"] + "[") for q in out)
        )
    ]


def validate_events(events: list[Any], *, prefix: str = "events") -> list[dict[str, Any]]:
    """Check a batch before anything is written; raise InvalidEvent naming the field."""
    try:
        checked = cast(list[dict[str, Any]], _EVENTS.validate_python(events, strict=True))
    except ValidationError as exc:
        problems = _problems(prefix, exc)
        raise _invalid_event(problems) from None
    return _without_refs(checked, prefix)


def validate_events_json(raw: bytes, *, prefix: str = "events") -> list[dict[str, Any]]:
    """Parse and check a JSON array of events in one pass; the dicts are what gets stored."""
    try:
        checked = cast(list[dict[str, Any]], _EVENTS.validate_json(raw, strict=True))
    except ValidationError as exc:
        problems = _problems(prefix, exc)
        raise _invalid_event(problems) from None
    return _without_refs(checked, prefix)


def _without_refs(events: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """Refuse a client's blob reference: only the server makes them (SPEC §3.6), and a
    made-up one would break every read of the session or copy another blob into it."""
    for n, event in enumerate(events):
        content = event.get("content")
        if isinstance(content, dict) and "content_ref" in content:
            problems = [
                {
                    "loc": f"{prefix}[{n}].content",
                    "msg": "blob references are made by the server; send the content itself",
                    "type": "value_error",
                }
            ]
            raise _invalid_event(problems)
    return events


def _summary(problems: list[dict[str, Any]]) -> str:
    first = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{first['loc']}: {first['msg']}{more}"


_HEADER = TypeAdapter(SessionHeader)


def validate_header(header: dict[str, Any]) -> None:
    try:
        _HEADER.validate_python(header)
    except ValidationError as exc:
        problems = _problems("header", exc)
        raise _invalid_event(problems) from None


def _invalid_event(problems: list[dict[str, Any]]) -> Exception:
    """The server's ``InvalidEvent`` (422, each problem named), imported when raised:
    loading the rules loads no server module."""
    from ..errors import InvalidEvent

    return InvalidEvent(_summary(problems), errors=problems)
