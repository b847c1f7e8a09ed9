"""Memory on the wire: blocks, core memory, notes, remember and recall, the prompt
context, the agent tools, procedures and prune (they are also the OpenAPI schemas).

Request bodies are closed, but for a block's own ``x_…`` frontmatter keys."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import InitErrorDetails

from .tools import ToolName

_OWN_KEYS: dict[str, Any] = {"patternProperties": {"^x_": {}}, "additionalProperties": False}


class BlockFields(BaseModel):
    """A block's body and the frontmatter keys to set, as ``PUT /v1/memory/blocks/{name}``
    takes them (the path names the block). Keys of the client's own are named `x_…` and
    kept in the frontmatter; any other key this body does not have is refused, so a
    misspelt one is never written in silence."""

    model_config = ConfigDict(
        strict=True,
        extra="allow",
        json_schema_extra={
            **_OWN_KEYS,
            "examples": [
                {
                    "content": "Run the tests with `make test`; they need Docker running.",
                    "description": "how to run the tests",
                    "tags": ["ci"],
                    "importance": 0.7,
                }
            ],
        },
    )

    content: str = Field(min_length=1, max_length=256 * 1024)
    description: str | None = Field(default=None, max_length=500)
    type: Literal["semantic", "procedural"] = "semantic"
    tags: list[str] = Field(default_factory=list)
    importance: float = Field(default=0.5, ge=0, le=1)
    confidence: float = Field(default=0.5, ge=0, le=1)
    pinned: bool = False
    session_id: str | None = None
    supersedes: list[str] | None = Field(
        default=None, description="blocks this one replaces (they are archived)"
    )
    conflicts_with: list[str] | None = Field(
        default=None, description="blocks this one contradicts (both stay, both marked)"
    )
    reason: str | None = Field(default=None, max_length=500, description="why it will matter")

    @model_validator(mode="after")
    def _only_own_extras(self) -> BlockFields:
        extra = self.model_extra or {}
        unknown = [
            InitErrorDetails(type="extra_forbidden", loc=(name,), input=extra[name])
            for name in sorted(extra)
            if not name.startswith("x_")
        ]
        if unknown:
            raise ValidationError.from_exception_data(type(self).__name__, unknown)
        return self


class BlockIn(BlockFields):
    """A block to remember (``POST /v1/memory/blocks``): its body and frontmatter keys,
    and its name, or a title to make one from (else the content's start). A different
    body under a name taken is 409 unless ``replace``."""

    model_config = ConfigDict(
        json_schema_extra={
            **_OWN_KEYS,
            "examples": [
                {
                    "name": "testing",
                    "content": "Run the tests with `make test`; they need Docker running.",
                    "description": "how to run the tests",
                    "tags": ["ci"],
                    "importance": 0.7,
                }
            ],
        },
    )

    name: str | None = None
    title: str | None = Field(default=None, max_length=200)
    replace: bool = False


class KnownKeys(BaseModel):
    """A block's known frontmatter keys, each of its kind when given."""

    model_config = ConfigDict(strict=True)

    description: str | None = Field(default=None, max_length=500)
    type: Literal["semantic", "procedural"] | None = None
    tags: list[str] | None = None
    importance: float | None = Field(default=None, ge=0, le=1)
    confidence: float | None = Field(default=None, ge=0, le=1)
    pinned: bool | None = None


class BlockPatch(KnownKeys):
    """The metadata keys to change (at least one: an empty patch is refused)."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={"minProperties": 1, "examples": [{"pinned": True, "importance": 0.9}]},
    )

    body: Annotated[str, Field(min_length=1, max_length=256 * 1024)] | SkipJsonSchema[None] = Field(
        default=None,
        description="A new body (the markdown after the frontmatter); the frontmatter keys "
        "not named here stay as they are.",
    )


class Frontmatter(KnownKeys):
    """The known keys of a block's frontmatter as a client writes them (``PUT`` with raw
    markdown): each, when present, must be of its kind (``importance: lots`` is refused,
    never read as the default); keys of its own are kept as they are."""

    model_config = ConfigDict(strict=True, extra="allow")

    supersedes: list[str] | None = None
    conflicts_with: list[str] | None = None


NOTE_MAX = 4000  # a bullet of ASTER.md, which goes into every prompt
MAX_INDEX_ENTRIES = 60  # the blocks the prompt context lists, at most
# A character that is not white space (str.isspace, written out so every regex engine
# reads it alike): a note needs one.
NOT_SPACE = r"[^\t\n\v\f\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"


class NoteIn(BaseModel):
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={"examples": [{"note": "Prefer small commits."}]},
    )

    note: str = Field(min_length=1, max_length=NOTE_MAX)
    session_id: str | None = None


class RememberIn(BaseModel):
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"note": "Prefer small commits."},
                {"note": "Postgres listens on 5433 here.", "title": "Database port"},
            ]
        },
    )

    note: str = Field(min_length=1, max_length=256 * 1024)
    title: str | None = Field(default=None, max_length=200)
    tags: list[str] = Field(default_factory=list)
    replace: bool = False
    session_id: str | None = None


class SecretFound(BaseModel):
    """Where a file holds what looks like a secret: its kind and place, never the secret."""

    loc: str = Field(description="The frontmatter key, or `content` for the body.")
    kind: str
    line: int = Field(description="The line in the file.")
    column: int
    msg: str


WITHHELD = (
    "Non-empty when a hand edit left what looks like a secret in the file: it is kept out "
    "of the prompt context, the tools' results and search until a person removes it."
)


class Block(BaseModel):
    scope: str
    name: str
    archived: bool
    description: str
    type: str
    tags: list[str]
    importance: float
    confidence: float
    pinned: bool
    created_at: str
    updated_at: str
    supersedes: list[str]
    conflicts_with: list[str]
    etag: str
    bytes: int
    secrets: list[SecretFound] = Field(default_factory=list, description=WITHHELD)
    recall_count: int = Field(default=0, description="Recalls, counted from the journal.")
    last_recalled_at: str | None = Field(default=None, description="The last recall's time.")


class BlockList(BaseModel):
    items: list[Block]
    next_cursor: str | None = None


class BlockRead(Block):
    content: str = Field(description="The whole file: frontmatter and body.")
    body: str = Field(description="The markdown after the frontmatter.")
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="The frontmatter as parsed, keys the service does not know included.",
    )


class SavedBlock(Block):
    merged: bool = Field(description="True when the content matched a block already kept.")


class Core(BaseModel):
    scope: str
    content: str
    etag: str
    secrets: list[SecretFound] = Field(default_factory=list, description=WITHHELD)


class CoreWritten(BaseModel):
    scope: str
    etag: str
    bytes: int | None = None


class Note(CoreWritten):
    duplicate: bool = Field(default=False, description="True when the note was already there.")


class PruneItem(BaseModel):
    name: str
    reason: str


class MemoryPruneOut(BaseModel):
    scope: str
    dry_run: bool
    archived: list[PruneItem]
    protected: list[PruneItem]


class ToolList(BaseModel):
    tools: list[dict[str, Any]]


class RevertResult(BaseModel):
    """A memory revert answers with its own journal entry; a session revert with the
    entry it undid (`reverted`) and the session."""

    model_config = ConfigDict(extra="allow")

    id: str | None = None
    op: str | None = None
    reverted: str | None = None
    session: str | None = None


class WithheldFile(BaseModel):
    scope: str
    name: str
    secrets: list[SecretFound]


class ContextSection(BaseModel):
    label: str = Field(description="What this part is, as a person reads it.")
    scope: str = Field(description="`global`, the project's scope, or `index`.")
    content: str
    chars: int
    tokens: int = Field(description="Estimated: about four characters a token.")


class ContextOut(BaseModel):
    scope: str
    content: str
    order: Literal["recency", "relevance"]
    counts: dict[str, int]
    tokens: int
    parts: list[ContextSection] = Field(
        default_factory=list,
        description="The content in its parts, in order (joined by blank lines).",
    )
    withheld: list[WithheldFile] = Field(
        default_factory=list,
        description="Memory files left out because a hand edit left a secret in them.",
    )


class MemoryToolCall(BaseModel):
    """A call of one of the memory tools (``POST /v1/memory/tools/call``); not the chat
    completions' ``ToolCall`` of an assistant message."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={"examples": [{"name": "recall", "arguments": {"name": "testing"}}]},
    )

    name: ToolName
    arguments: dict[str, Any] | str
    session_id: str | None = None
    repo_root: str | None = None


class ToolResult(BaseModel):
    name: str
    content: str = Field(description="The text for the model.")
    is_error: bool = Field(
        default=False, description="The call failed; `content` says why and what to do."
    )


class ProcedureIn(BaseModel):
    """A task done, or failed, and how: kept as a procedural block."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"outcome": "success", "task": "release", "tools": ["make"], "result": "tagged"}
            ]
        },
    )

    outcome: Literal["success", "failure"]
    task: str = Field(min_length=1, max_length=200)
    tools: list[str] = Field(default_factory=list)
    result: str | None = Field(default=None, max_length=8000)
    error: str | None = Field(default=None, max_length=8000)
    importance: float = Field(default=0.5, ge=0, le=1)
    session_id: str | None = None


class MemoryPruneIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    max_age_days: float = Field(default=90, ge=0, le=36500)
    max_importance: float = Field(default=0.3, ge=0, le=1)
    dry_run: bool = True
