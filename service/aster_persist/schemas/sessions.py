"""Sessions on the wire: what creating, listing, reading, renaming, pruning and
importing sessions take and give (they are also the OpenAPI schemas).

Request bodies are closed: a field a body does not have is refused (422 naming it).
Events are not (a transcript keeps what the service does not know), and neither are a
session's own ``x_…`` fields, kept in its header as verbatim as an event's."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails

from .events import RESERVED_HEADER_KEYS, Event, SessionHeader
from .numbers import WHOLE

MAX_ALIAS = 200  # characters of a session's alias

__all__ = ["SessionHeader"]


class SessionIn(BaseModel):
    """A new session. Fields of the client's own are named `x_…` and kept in the header
    verbatim; any other field this body does not have is refused, so a misspelt one is
    never stored in silence (one the server sets, such as `seq`, is refused saying so)."""

    model_config = ConfigDict(
        strict=True,
        extra="allow",
        json_schema_extra={
            "examples": [
                {"repo_root": "/home/me/src/app", "model": "gpt-5", "title": "Fix the build"}
            ],
            "patternProperties": {"^x_": {}},
            "additionalProperties": False,
        },
    )

    repo_root: str = Field(description="Absolute path of the repository the session runs in.")
    cwd: str | None = None
    model: str | None = None
    aster_version: str | None = None
    title: str | None = Field(default=None, max_length=500)
    id: str | None = Field(
        default=None, description="A ULID, for imports; made by the server when absent."
    )
    alias: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ALIAS,
        pattern=r"^[^\x00-\x1f\x7f]+$",
        description="The caller's own name for the session (an agent framework's session "
        "id, such as `user_123`): one live session holds it at a time (409 "
        "`alias_taken` otherwise); `GET /v1/sessions?alias=` finds it. A session in the "
        "trash lets it go.",
    )

    @model_validator(mode="after")
    def _only_own_extras(self) -> SessionIn:
        extra = self.model_extra or {}
        unknown = [
            InitErrorDetails(type="extra_forbidden", loc=(name,), input=extra[name])
            for name in sorted(extra)
            if not name.startswith("x_") and name not in RESERVED_HEADER_KEYS
        ]
        if unknown:
            raise ValidationError.from_exception_data(type(self).__name__, unknown)
        return self


class EventsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    events: Annotated[list[Event], Field(min_length=1)]
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)


AppendBody = Event | Annotated[list[Event], Field(min_length=1)] | EventsIn


class AppendOut(BaseModel):
    first_seq: int
    last_seq: int
    count: int
    replayed: bool = Field(
        default=False,
        description="True when the idempotency key had been applied already: nothing was "
        "written, and the seqs are those of the first append.",
    )


class SessionSummary(BaseModel):
    id: str
    project: str
    repo_root: str
    title: str | None
    title_source: Literal["event", "header", "first_message"] | None
    created_at: str
    updated_at: str
    events: int
    last_seq: int
    bytes: int
    state: Literal["ok", "damaged", "read_only"]
    source_tool: str | None = Field(
        description="The tool an imported session came from (`claude-code`, `codex`…); "
        "null for one written through this API."
    )
    git_branch: str | None = Field(description="The git branch its source records.")
    parent_id: str | None = Field(
        description="The session that started this one (a sub-agent's parent)."
    )
    parent_tool_call_id: str | None = Field(
        description="The parent's tool call that started it, once the parent says so."
    )
    turns: int = Field(description="User and assistant messages.")
    tool_calls: int
    tool_errors: int = Field(description="Tool results that were errors.")
    tokens_in: int = Field(description="Input tokens of the turns that say (cached ones too).")
    tokens_out: int
    models: list[str] = Field(description="The models that wrote its turns, first used first.")
    duration_ms: int = Field(description="From its first time to its last activity.")
    timed: bool = Field(
        default=True,
        description="Its times are its own. False for an import of a source without "
        "times sent with no `modified_at` (its times are then the import's): listed after "
        "every session with times.",
    )
    alias: str | None = Field(default=None, description="The caller's own name for it.")
    secrets: int = Field(
        default=0,
        description="Secrets its text holds (keys, tokens, passwords), as the index found "
        "them: kept in the transcript, redacted wherever it is handed on. List them with "
        "`has_secrets=true`.",
    )
    machine: str | None = Field(
        default=None,
        description="The team's machine that owns it, when this is its copy (None: this "
        "machine's own).",
    )
    project_key: str | None = Field(
        default=None,
        description="A team's copy: its project, the same on every machine whatever its "
        "path (the git remote, normalised, or `commit:<first commit>`).",
    )
    read_only: bool = Field(
        default=False,
        description="A copy of another machine's session: appends go to its owner (409 "
        "`session_owned_elsewhere` here).",
    )


class ChildSession(BaseModel):
    id: str
    title: str | None
    tool_call_id: str | None = Field(description="The call of the parent that started it.")
    turns: int = 0
    tool_errors: int = Field(default=0, description="Its tool results that were errors.")


class ModelPrice(BaseModel):
    """US dollars per million tokens of each kind."""

    input: float
    cached_input: float
    output: float


class SessionCost(BaseModel):
    cost_usd: float | None = Field(
        description="The estimate for its turns, from the price table (`GET /v1/stats` "
        "names its source and date); None when no model of it has a price."
    )
    unpriced_models: list[str] = Field(
        description="Models whose tokens it counted but could not price."
    )
    prices: dict[str, ModelPrice] = Field(
        description="The price of each of its models that has one, for an estimate per turn."
    )


class SessionDetail(SessionSummary):
    header: dict[str, Any]
    bad_lines: list[int] = Field(default_factory=list)
    children: list[ChildSession] = Field(
        default_factory=list, description="The sessions it started (sub-agents), oldest first."
    )
    cost: SessionCost | None = Field(default=None, description="What its turns cost, estimated.")


class SessionPage(BaseModel):
    items: list[SessionSummary]
    next_cursor: str | None


class RunningSession(SessionSummary):
    last_append: str = Field(description="When the last append of the present came.")


class RunningSessions(BaseModel):
    window_seconds: float = Field(
        description="How long a session stays running after such an append "
        "(`ASTER_RUNNING_SECONDS`)."
    )
    items: list[RunningSession] = Field(description="The sessions running now, latest first.")


class EventPage(BaseModel):
    events: list[dict[str, Any]]
    next_cursor: str | None


class ChatMessages(BaseModel):
    session_id: str
    view: Literal["history", "context"]
    messages: list[dict[str, Any]]


class RenameIn(BaseModel):
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={"examples": [{"title": "Fix the flaky test"}]},
    )

    title: str = Field(min_length=1, max_length=500)


class PruneIn(BaseModel):
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={
            "examples": [{"older_than_days": 90, "keep_latest": 20, "dry_run": True}],
            # say what to prune: at least one of the three, given a value
            "anyOf": [
                {"required": [key], "properties": {key: {"type": kind}}}
                for key, kind in (
                    ("older_than_days", "number"),
                    ("keep_latest", "integer"),
                    ("purge_trash_older_than_days", "number"),
                )
            ],
        },
    )

    older_than_days: float | None = Field(default=None, ge=0, le=36500)
    keep_latest: Annotated[int, Field(ge=0, le=1_000_000), WHOLE] | None = None
    dry_run: bool = True
    purge_trash_older_than_days: float | None = Field(default=None, ge=0, le=36500)


class PrunedSession(BaseModel):
    id: str
    repo_root: str
    title: str | None
    updated_at: str
    reason: str


class PruneOut(BaseModel):
    dry_run: bool
    trashed: list[PrunedSession]
    purged: list[str]


class CompressIn(BaseModel):
    model_config = ConfigDict(
        strict=True, extra="forbid", json_schema_extra={"examples": [{"dry_run": True}]}
    )

    older_than_days: float | None = Field(
        default=None,
        ge=0,
        le=36500,
        description="Sessions with no event for this long (ASTER_COMPRESS_AFTER_DAYS when left out).",
    )
    dry_run: bool = True


class CompressedSession(BaseModel):
    id: str
    bytes: int
    compressed_bytes: int


class LeftPlain(BaseModel):
    id: str
    reason: str


class CompressOut(BaseModel):
    dry_run: bool
    older_than_days: float
    compressed: list[CompressedSession] = Field(
        description="Kept compressed now (or, in a dry run, what would be)."
    )
    skipped: list[LeftPlain] = Field(description="Left plain: written to meanwhile, or why not.")
    bytes: int = Field(description="What they take plain.")
    compressed_bytes: int
    freed_bytes: int


class Project(BaseModel):
    slug: str
    repo_root: str
    sessions: int
    events: int
    last_activity: str


class ProjectList(BaseModel):
    items: list[Project]
    next_cursor: str | None = None


class FacetValue(BaseModel):
    value: str
    sessions: int


class SessionFacets(BaseModel):
    """What sessions can be filtered by, with how many sessions have each value."""

    source_tools: list[FacetValue] = Field(
        description="The tools sessions came from; `api` for those written through the API."
    )
    models: list[FacetValue]


class ActivityDay(BaseModel):
    day: str = Field(description="A day (UTC), as 2026-12-01.")
    events: int


class Activity(BaseModel):
    repo_root: str | None
    since: str
    days: list[ActivityDay] = Field(description="Days with events, oldest first.")


LIST_LIMIT = 500  # a page of a list that is usually read whole (blocks, projects)


class Problem(BaseModel):
    type: str
    title: str
    status: int
    detail: str
    code: str
    errors: list[dict[str, Any]] | None = None


class ImportedSession(BaseModel):
    id: str
    status: Literal["imported", "updated", "already_imported"] = Field(
        description="imported: a new session; updated: the source grew since, and what it "
        "holds now that the session did not was appended; already_imported: nothing new"
    )
    events: int | None = Field(default=None, description="The events written now.")
    rewrite_of: str | None = Field(
        default=None,
        description="The session its source became before it was rewritten: the rewritten "
        "file is a session of its own, kept beside that one, never merged into it.",
    )
    fork_of: str | None = Field(
        default=None,
        description="The session whose records its source begins with (Claude Code writes "
        "a resumed session to a new file that copies the old one's): a fork of that one.",
    )


class ImportOut(BaseModel):
    format: str
    imported: int
    updated: int = 0
    already_imported: int
    sessions: list[ImportedSession]


class ImportedFile(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    path: Annotated[str, Field(min_length=1, max_length=4096)]
    size: Annotated[int, Field(ge=0), WHOLE]
    modified_at: Annotated[str, Field(max_length=64)]


class KnownFilesIn(BaseModel):
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "files": [
                        {
                            "path": "/home/me/.claude/projects/-srv-app/1af7fc5e.jsonl",
                            "size": 26595,
                            "modified_at": "2026-01-02T03:04:05.678Z",
                        }
                    ]
                }
            ]
        },
    )

    # at most a thousand at once: the longest such list is well inside a body's limit
    files: Annotated[list[ImportedFile], Field(max_length=1000)]


class KnownFile(BaseModel):
    path: str
    sessions: list[str]


class KnownFilesOut(BaseModel):
    known: list[KnownFile] = Field(
        description="The files imported before (with `path` on the import) that have the "
        "same size and time now, and whose sessions are all still here: the sessions each "
        "became. Any other file is not known, and is sent."
    )
