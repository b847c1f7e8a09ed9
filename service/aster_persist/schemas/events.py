"""The transcript line format: a header and seven event kinds, tagged on ``type``.

Types only (TypedDicts and one model), read by storage, the routers, MCP and the client.
The types check what the contract requires and nothing more; fields the service does
not know are kept verbatim, because lines are stored as the client sent them (plus
``seq`` and ``ts``), not as re-serialised models. ``storage/events.py`` validates with
them.
"""

from __future__ import annotations

from datetime import date, datetime
from types import UnionType
from typing import Annotated, Any, Literal, NotRequired, Union, get_args, get_origin, get_type_hints

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    WithJsonSchema,
    with_config,
)
from pydantic.config import JsonDict
from typing_extensions import TypedDict

from .numbers import WHOLE

FORMAT_VERSION = 1
MAX_SEQ = 10**18 - 1  # a seq has at most 18 digits, in ETags and cursors too


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
# A key no request may carry is, in JSON Schema, one no value matches (``not: {}``), so
# generated clients type it as never sent, and a request valid by the schema is accepted.
ServerSeq = Annotated[
    None,
    AfterValidator(_server_assigned),
    WithJsonSchema({"not": {}, "description": "Assigned by the server; never sent."}),
]
NoKey = Annotated[
    None,
    AfterValidator(_header_only),
    WithJsonSchema({"not": {}, "description": "Sent as the Idempotency-Key header instead."}),
]
ServerBatch = Annotated[
    None,
    AfterValidator(_server_batch),
    WithJsonSchema({"not": {}, "description": "Set by the server; never sent."}),
]


def _a_calendar_date(value: str) -> str:
    """The pattern takes 31 November; the calendar does not."""
    date(int(value[:4]), int(value[5:7]), int(value[8:10]))
    return value


# RFC 3339 with its offset, in the years 1000 to 2999 (so that every one is a time in UTC
# too), on a day of the calendar (the format says so; the pattern cannot).
TIMESTAMP = (
    r"^[12]\d{3}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:"
    r"[0-5]\d(\.\d{1,9})?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$"
)
Timestamp = Annotated[
    str,
    Field(
        pattern=TIMESTAMP,
        description="RFC 3339 date-time",
        json_schema_extra={"format": "date-time"},
    ),
    AfterValidator(_a_calendar_date),
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


class ServerFields(TypedDict):
    """What every event may carry that the server fills in: ``ts`` (kept when the client
    sends one), ``seq`` and ``batch_size`` (never the client's); the idempotency key
    comes as a header. Each event kind below ends with these same four fields (a test
    keeps them so): written out in each, not inherited, because a TypedDict's base
    fields come first and validation returns keys in that order, so a stored line
    would no longer keep the order the client sent."""

    ts: NotRequired[Timestamp | None]
    seq: NotRequired[ServerSeq]
    idempotency_key: NotRequired[NoKey]
    batch_size: NotRequired[ServerBatch]


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
    is_error: NotRequired[Annotated[bool | None, Field(description="The tool failed.")]]
    ts: NotRequired[Timestamp | None]
    seq: NotRequired[ServerSeq]
    idempotency_key: NotRequired[NoKey]
    batch_size: NotRequired[ServerBatch]


def _else_needs(absent: str, needed: str, schema: JsonDict) -> JsonDict:
    """A rule "without ``absent`` (or with it null), ``needed`` is given", in the
    schema: ``if``/``then``, which checkers read and generators of typed clients leave
    alone (an ``anyOf`` would split the message in two types)."""
    return {
        "if": {"properties": {absent: {"type": "null"}}},
        "then": {"required": [needed], "properties": {needed: schema}},
    }


# the rules of _has_content_or_calls and _has_target, as the document shows them
_CONTENT_OR_CALLS = _else_needs("content", "tool_calls", {"type": "array", "minItems": 1})
_A_TARGET = _else_needs("tool_call_id", "target_seq", {"type": "integer"})


def _has_content_or_calls(event: dict[str, Any]) -> dict[str, Any]:
    if event.get("content") is None and not event.get("tool_calls"):
        raise ValueError("content: an assistant message needs content or tool_calls")
    return event


Tokens = Annotated[int, Field(ge=0, le=MAX_SEQ), WHOLE]


@with_config(ConfigDict(extra="allow"))
class Usage(TypedDict):
    """What a model call cost, in tokens: ``input_tokens`` counts every token the
    model read (those served from a cache too, ``cached_input_tokens`` of them), and
    ``output_tokens`` every token it wrote (reasoning too, ``reasoning_output_tokens``
    of them). Keys a provider adds are kept."""

    input_tokens: NotRequired[Tokens]
    output_tokens: NotRequired[Tokens]
    cached_input_tokens: NotRequired[Tokens]
    reasoning_output_tokens: NotRequired[Tokens]


@with_config(ConfigDict(extra="allow", json_schema_extra=_CONTENT_OR_CALLS))
class AssistantMessage(TypedDict):
    type: Literal["message"]
    role: Literal["assistant"]
    content: NotRequired[AssistantContent | None]
    tool_calls: NotRequired[list[ToolCall] | None]
    model: NotRequired[Annotated[str | None, Field(description="The model that wrote it.")]]
    usage: NotRequired[Usage | None]
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
    through_seq: Annotated[int, Field(ge=0, le=MAX_SEQ), WHOLE]
    ts: NotRequired[Timestamp | None]
    seq: NotRequired[ServerSeq]
    idempotency_key: NotRequired[NoKey]
    batch_size: NotRequired[ServerBatch]


def _has_target(event: dict[str, Any]) -> dict[str, Any]:
    if event.get("tool_call_id") is None and event.get("target_seq") is None:
        raise ValueError("tool_call_id: an eviction needs tool_call_id or target_seq")
    return event


@with_config(ConfigDict(extra="allow", json_schema_extra=_A_TARGET))
class EvictionEvent(TypedDict):
    type: Literal["eviction"]
    tool_call_id: NotRequired[str | None]
    target_seq: NotRequired[Annotated[int, Field(ge=1, le=MAX_SEQ), WHOLE] | None]
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


@with_config(ConfigDict(extra="allow"))
class ReasoningEvent(TypedDict):
    """The model thinking before it answers: ``content`` is what can be read of it (a
    summary, or nothing when the provider keeps it encrypted, in keys of its own)."""

    type: Literal["reasoning"]
    content: NotRequired[TextContent | None]
    ts: NotRequired[Timestamp | None]
    seq: NotRequired[ServerSeq]
    idempotency_key: NotRequired[NoKey]
    batch_size: NotRequired[ServerBatch]


@with_config(ConfigDict(extra="allow"))
class RetractionEvent(TypedDict):
    """An earlier event taken back (an agent framework's "pop the last item"): the
    transcript keeps it, and every view of the session leaves it out from here on. It is
    final: a retraction of a retraction, or of what is taken back already, changes
    nothing (to say it again, append it again)."""

    type: Literal["retraction"]
    target_seq: Annotated[int, Field(ge=1, le=MAX_SEQ), WHOLE]
    reason: NotRequired[Annotated[str | None, Field(max_length=500)]]
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
    | TitleEvent
    | ReasoningEvent
    | RetractionEvent,
    Field(discriminator="type"),
]


def members(union: Any) -> list[Any]:
    """The types a (possibly annotated, possibly nested) union is made of, in order."""
    while get_origin(union) is Annotated:
        union = get_args(union)[0]
    found: list[Any] = []
    for member in get_args(union):
        while get_origin(member) is Annotated:
            member = get_args(member)[0]
        nested = get_origin(member) is Union or isinstance(member, UnionType)
        found += members(member) if nested else [member]
    return found


def _tags(union: Any, key: str) -> tuple[str, ...]:
    """The values of the ``key`` tag across a union's members, in order."""
    tags: list[str] = []
    for member in members(union):
        found = get_args(get_type_hints(member, include_extras=False)[key])
        tags += [tag for tag in found if tag not in tags]
    return tuple(tags)


ROLES = _tags(MessageEvent, "role")  # ("user", "assistant", "tool", "system")
EVENT_TYPES = _tags(Event, "type")  # message, summary, eviction, title, reasoning, retraction
PART_TYPES = _tags(ContentPart, "type")  # ("text", "image_url", "input_audio", "file", "refusal")
RESERVED_HEADER_KEYS = frozenset(
    {"type", "seq", "id", "v", "idempotency_key", "batch_size", "base", "machine", "project_key"}
)
