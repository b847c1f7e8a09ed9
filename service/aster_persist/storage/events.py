"""The transcript line format: a header and five event kinds, tagged on ``type``.

Validation checks what the contract requires and nothing more; fields the service does
not know are kept verbatim, because lines are stored as the client sent them (plus
``seq`` and ``ts``), not as re-serialised models.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from ..errors import InvalidEvent

FORMAT_VERSION = 1


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")

    ts: datetime | None = None


class FunctionCall(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    arguments: str


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1)
    type: Literal["function"] = "function"
    function: FunctionCall


class SessionHeader(_Open):
    type: Literal["session"]
    id: str
    v: int
    created_at: datetime
    repo_root: str
    cwd: str | None = None
    model: str | None = None
    aster_version: str | None = None
    title: str | None = None


class MessageEvent(_Open):
    type: Literal["message"]
    role: Literal["user", "assistant", "tool", "system"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> MessageEvent:
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("tool_call_id: a tool message needs tool_call_id")
        if self.role == "assistant":
            if self.content is None and not self.tool_calls:
                raise ValueError("content: an assistant message needs content or tool_calls")
        elif self.content is None:
            raise ValueError(f"content: a {self.role} message needs content")
        if self.tool_calls and self.role != "assistant":
            raise ValueError("tool_calls: only assistant messages carry tool_calls")
        return self


class SummaryEvent(_Open):
    type: Literal["summary"]
    content: str
    through_seq: int = Field(ge=0)


class EvictionEvent(_Open):
    type: Literal["eviction"]
    tool_call_id: str | None = None
    target_seq: int | None = Field(default=None, ge=1)
    stub: str | None = None

    @model_validator(mode="after")
    def _target(self) -> EvictionEvent:
        if self.tool_call_id is None and self.target_seq is None:
            raise ValueError("tool_call_id: an eviction needs tool_call_id or target_seq")
        return self


class TitleEvent(_Open):
    type: Literal["title"]
    title: str = Field(min_length=1, max_length=500)
    source: Literal["model", "user"] | None = None


Event = Annotated[
    MessageEvent | SummaryEvent | EvictionEvent | TitleEvent, Field(discriminator="type")
]
EVENT_TYPES = ("message", "summary", "eviction", "title")
_EVENTS = TypeAdapter(list[Event])


def _field_path(prefix: str, loc: tuple[Any, ...]) -> str:
    path = prefix
    after_index = False
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
            after_index = True
            continue
        if after_index and part in EVENT_TYPES:
            after_index = False
            continue  # the discriminator tag pydantic puts after the item's index
        after_index = False
        path += f".{part}" if path else str(part)
    return path


def _problems(prefix: str, exc: ValidationError) -> list[dict[str, Any]]:
    out = []
    for err in exc.errors(include_url=False, include_input=False, include_context=False):
        loc = _field_path(prefix, tuple(err["loc"]))
        msg = str(err["msg"]).removeprefix("Value error, ")
        name, sep, rest = msg.partition(": ")
        if sep and name.isidentifier():
            loc, msg = f"{loc}.{name}", rest
        out.append({"loc": loc, "msg": msg, "type": err["type"]})
    return out


def validate_events(events: list[Any], *, prefix: str = "events") -> None:
    """Check a batch before anything is written; raise InvalidEvent naming the field."""
    problems: list[dict[str, Any]] = []
    for i, event in enumerate(events):
        if not isinstance(event, dict):
            problems.append({"loc": f"{prefix}[{i}]", "msg": "an event must be a JSON object"})
            continue
        kind = event.get("type")
        if kind == "session":
            problems.append(
                {
                    "loc": f"{prefix}[{i}].type",
                    "msg": "a session header is written only by session creation, never appended",
                }
            )
        elif kind is None:
            problems.append({"loc": f"{prefix}[{i}].type", "msg": "type is required"})
        elif kind not in EVENT_TYPES:
            problems.append(
                {
                    "loc": f"{prefix}[{i}].type",
                    "msg": f"unknown event type {str(kind)[:40]!r}; expected one of {', '.join(EVENT_TYPES)}",
                }
            )
        if "seq" in event:
            problems.append(
                {"loc": f"{prefix}[{i}].seq", "msg": "seq is assigned by the server; leave it out"}
            )
    if problems:
        raise InvalidEvent(_summary(problems), errors=problems)
    try:
        _EVENTS.validate_python(events)
    except ValidationError as exc:
        problems = _problems(prefix, exc)
        raise InvalidEvent(_summary(problems), errors=problems) from None


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
        raise InvalidEvent(_summary(problems), errors=problems) from None
