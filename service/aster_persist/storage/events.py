"""The transcript line format: a header and five event kinds, tagged on ``type``.

Validation checks what the contract requires and nothing more; fields the service does
not know are kept verbatim, because lines are stored as the client sent them (plus
``seq`` and ``ts``), not as re-serialised models.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, NotRequired, cast

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    with_config,
)
from typing_extensions import TypedDict

from ..errors import InvalidEvent

FORMAT_VERSION = 1


@with_config(ConfigDict(extra="allow"))
class TextPart(TypedDict):
    type: Literal["text"]
    text: str


@with_config(ConfigDict(extra="allow"))
class ImageUrl(TypedDict):
    url: Annotated[str, Field(min_length=1)]


@with_config(ConfigDict(extra="allow"))
class ImagePart(TypedDict):
    type: Literal["image_url"]
    image_url: ImageUrl


@with_config(ConfigDict(extra="allow"))
class AudioPart(TypedDict):
    type: Literal["input_audio"]
    input_audio: dict[str, Any]


@with_config(ConfigDict(extra="allow"))
class FilePart(TypedDict):
    type: Literal["file"]
    file: dict[str, Any]


@with_config(ConfigDict(extra="allow"))
class RefusalPart(TypedDict):
    type: Literal["refusal"]
    refusal: str


# The content parts of the OpenAI chat-completions API (SPEC §3.1), so what /messages
# hands on is a valid request; keys they do not name are kept.
ContentPart = Annotated[
    TextPart | ImagePart | AudioPart | FilePart | RefusalPart, Field(discriminator="type")
]
Content = str | list[ContentPart]  # a user's: any part
AssistantContent = (
    str
    | list[  # text or a refusal, as the API takes them back
        Annotated[TextPart | RefusalPart, Field(discriminator="type")]
    ]
)
TextContent = str | list[TextPart]  # a system or tool message's: text only


def _server_assigned(value: None) -> None:
    raise ValueError("assigned by the server; leave it out")


def _header_only(value: None) -> None:
    raise ValueError("send the idempotency key as the Idempotency-Key header")


def _server_batch(value: None) -> None:
    raise ValueError("set by the server; leave it out")


# Keys a client may not set on an event (any value, null included).
ServerSeq = Annotated[None, AfterValidator(_server_assigned)]
NoKey = Annotated[None, AfterValidator(_header_only)]
ServerBatch = Annotated[None, AfterValidator(_server_batch)]
Timestamp = Annotated[
    str,
    Field(
        pattern=r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$",
        description="RFC 3339 date-time",
    ),
]


class FunctionCall(TypedDict):
    name: str
    arguments: str


@with_config(ConfigDict(extra="allow"))
class ToolCall(TypedDict):
    id: Annotated[str, Field(min_length=1)]
    type: Literal["function"]
    function: FunctionCall


# Events are TypedDicts, not models: validation checks the client's dicts in place (about
# twice as fast as building model instances), and the dicts are what gets stored.


@with_config(ConfigDict(extra="allow"))
class UserMessage(TypedDict):
    type: Literal["message"]
    role: Literal["user"]
    content: Content
    tool_calls: NotRequired[None]
    ts: NotRequired[Timestamp | None]
    seq: NotRequired[ServerSeq]
    idempotency_key: NotRequired[NoKey]
    batch_size: NotRequired[ServerBatch]


@with_config(ConfigDict(extra="allow"))
class SystemMessage(TypedDict):
    type: Literal["message"]
    role: Literal["system"]
    content: TextContent
    tool_calls: NotRequired[None]
    ts: NotRequired[Timestamp | None]
    seq: NotRequired[ServerSeq]
    idempotency_key: NotRequired[NoKey]
    batch_size: NotRequired[ServerBatch]


@with_config(ConfigDict(extra="allow"))
class ToolMessage(TypedDict):
    type: Literal["message"]
    role: Literal["tool"]
    tool_call_id: Annotated[str, Field(min_length=1)]
    content: TextContent
    tool_calls: NotRequired[None]
    ts: NotRequired[Timestamp | None]
    seq: NotRequired[ServerSeq]
    idempotency_key: NotRequired[NoKey]
    batch_size: NotRequired[ServerBatch]


def _has_content_or_calls(event: dict[str, Any]) -> dict[str, Any]:
    if event.get("content") is None and not event.get("tool_calls"):
        raise ValueError("content: an assistant message needs content or tool_calls")
    return event


@with_config(ConfigDict(extra="allow"))
class AssistantMessage(TypedDict):
    type: Literal["message"]
    role: Literal["assistant"]
    content: NotRequired[AssistantContent | None]
    tool_calls: NotRequired[list[ToolCall] | None]
    ts: NotRequired[Timestamp | None]
    seq: NotRequired[ServerSeq]
    idempotency_key: NotRequired[NoKey]
    batch_size: NotRequired[ServerBatch]


MessageEvent = Annotated[
    UserMessage
    | Annotated[AssistantMessage, AfterValidator(_has_content_or_calls)]
    | ToolMessage
    | SystemMessage,
    Field(discriminator="role"),
]


@with_config(ConfigDict(extra="allow"))
class SummaryEvent(TypedDict):
    type: Literal["summary"]
    content: str
    through_seq: Annotated[int, Field(ge=0)]
    ts: NotRequired[Timestamp | None]
    seq: NotRequired[ServerSeq]
    idempotency_key: NotRequired[NoKey]
    batch_size: NotRequired[ServerBatch]


def _has_target(event: dict[str, Any]) -> dict[str, Any]:
    if event.get("tool_call_id") is None and event.get("target_seq") is None:
        raise ValueError("tool_call_id: an eviction needs tool_call_id or target_seq")
    return event


@with_config(ConfigDict(extra="allow"))
class EvictionEvent(TypedDict):
    type: Literal["eviction"]
    tool_call_id: NotRequired[str | None]
    target_seq: NotRequired[Annotated[int, Field(ge=1)] | None]
    stub: NotRequired[str | None]
    ts: NotRequired[Timestamp | None]
    seq: NotRequired[ServerSeq]
    idempotency_key: NotRequired[NoKey]
    batch_size: NotRequired[ServerBatch]


@with_config(ConfigDict(extra="allow"))
class TitleEvent(TypedDict):
    type: Literal["title"]
    title: Annotated[str, Field(min_length=1, max_length=500)]
    source: NotRequired[Literal["model", "user"] | None]
    ts: NotRequired[Timestamp | None]
    seq: NotRequired[ServerSeq]
    idempotency_key: NotRequired[NoKey]
    batch_size: NotRequired[ServerBatch]


class SessionHeader(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: Literal["session"]
    id: str
    v: int
    created_at: datetime
    repo_root: str
    cwd: str | None = None
    model: str | None = None
    aster_version: str | None = None
    title: str | None = None


Event = Annotated[
    MessageEvent
    | SummaryEvent
    | Annotated[EvictionEvent, AfterValidator(_has_target)]
    | TitleEvent,
    Field(discriminator="type"),
]
ROLES = ("user", "assistant", "tool", "system")
EVENT_TYPES = ("message", "summary", "eviction", "title")
PART_TYPES = ("text", "image_url", "input_audio", "file", "refusal")
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
        checked = cast(list[dict[str, Any]], _EVENTS.validate_python(events))
    except ValidationError as exc:
        problems = _problems(prefix, exc)
        raise InvalidEvent(_summary(problems), errors=problems) from None
    return _without_refs(checked, prefix)


def validate_events_json(raw: bytes, *, prefix: str = "events") -> list[dict[str, Any]]:
    """Parse and check a JSON array of events in one pass; the dicts are what gets stored."""
    try:
        checked = cast(list[dict[str, Any]], _EVENTS.validate_json(raw))
    except ValidationError as exc:
        problems = _problems(prefix, exc)
        raise InvalidEvent(_summary(problems), errors=problems) from None
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
            raise InvalidEvent(_summary(problems), errors=problems)
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
        raise InvalidEvent(_summary(problems), errors=problems) from None
