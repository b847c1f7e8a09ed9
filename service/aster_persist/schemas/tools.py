"""The agents' tools, each defined once: its name, its description (the guidance the
model reads) and its parameters with their descriptions, bounds and defaults.

The memory tools ``remember``, ``recall``, ``forget`` and ``search_memory`` are served
as OpenAI function-calling definitions by ``GET /v1/memory/tools``; the MCP server
offers the same tools with the context parameters ``repo_root`` and ``session_id``
added, and the session tools ``search_sessions``, ``get_session`` and
``list_sessions`` besides. Both are made from the definitions here, so a description
or a bound reads the same on either side.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from .numbers import integral

MAX_FOUND = 50  # blocks one search_memory call returns at most
FOUND_BY_DEFAULT = 5  # and without k
MAX_HITS = 50  # hits one search_sessions call returns at most
MAX_WINDOW = 200  # events one get_session call returns at most
MAX_LISTED = 200  # sessions one list_sessions call returns at most

JSON_TYPES: dict[type, str] = {str: "string", int: "integer"}


@dataclass(frozen=True)
class Param:
    """One parameter of a tool. Without ``required`` it may be left out: then it is
    ``default`` (None when no default is given, which the caller may also send)."""

    name: str
    type: type[str] | type[int]
    description: str
    required: bool = False
    default: int | None = None
    minimum: int | None = None
    maximum: int | None = None

    def schema(self) -> dict[str, Any]:
        """The parameter's JSON schema in a function-calling definition."""
        out: dict[str, Any] = {"type": JSON_TYPES[self.type]}
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        out["description"] = self.description
        return out

    def nullable(self) -> bool:
        """Whether the caller may send null, meaning "not given"."""
        return not self.required and self.default is None

    def refusal(self, value: Any) -> str | None:
        """Why ``value`` cannot be this parameter's, or None when it can."""
        if value is None:
            return None if self.nullable() else f"{self.name} must not be null"
        if self.type is str:
            return None if isinstance(value, str) else f"{self.name} must be a string"
        value = integral(value)
        if not isinstance(value, int) or isinstance(value, bool):
            return f"{self.name} must be a whole number"
        low = self.minimum if self.minimum is not None else value
        high = self.maximum if self.maximum is not None else value
        return None if low <= value <= high else f"{self.name} must be from {low} to {high}"

    def field(self) -> Any:
        """The parameter as a pydantic field definition, ``(annotation, default)``, or
        the bare annotation when it is required."""
        kind: Any = self.type
        if not self.required and self.default is None:
            kind = kind | None
        annotation = Annotated[
            kind, Field(description=self.description, ge=self.minimum, le=self.maximum)
        ]
        return annotation if self.required else (annotation, self.default)


@dataclass(frozen=True)
class ToolSpec:
    """One tool: the name, what the model is told about it, and its parameters."""

    name: str
    description: str
    params: tuple[Param, ...]

    def parameters(self, *, nulls: bool = False) -> dict[str, Any]:
        """The JSON schema of the tool's arguments: a closed object (``nulls``: with the
        null an optional parameter may be sent as, which a model is not told of)."""

        def schema(p: Param) -> dict[str, Any]:
            out = p.schema()
            return {"anyOf": [out, {"type": "null"}]} if nulls and p.nullable() else out

        return {
            "type": "object",
            "properties": {p.name: schema(p) for p in self.params},
            "required": [p.name for p in self.params if p.required],
            "additionalProperties": False,
        }

    def function(self) -> dict[str, Any]:
        """The tool as an OpenAI function-calling definition."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters(),
            },
        }

    def fields(self) -> dict[str, Any]:
        """The parameters as pydantic field definitions, by name."""
        return {p.name: p.field() for p in self.params}

    def taking(self, *params: Param) -> ToolSpec:
        """The same tool with more parameters after its own."""
        return replace(self, params=self.params + params)


# -- the memory tools ---------------------------------------------------------------------

BLOCK_NAME = Param("name", str, "The block's name.", required=True)

REMEMBER = ToolSpec(
    "remember",
    "Save a durable fact for future sessions. Remember what will change a future "
    "answer or action and is not obvious from the code: a gotcha, a convention, a "
    "user preference, a decision and why it was made, a workflow that worked or a "
    "failure to avoid. Do not remember what the repository already shows, "
    "temporary state, anything from this turn only, or secrets (keys, tokens, "
    "passwords are refused). With a title the note becomes a named block you can "
    "recall later; without one it is added as a short line to core memory, which "
    "is in every prompt, so keep it to one sentence.",
    (
        Param("note", str, "The fact, in a sentence or a short paragraph.", required=True),
        Param("title", str, "A short title; makes a named, recallable block."),
    ),
)
RECALL = ToolSpec(
    "recall",
    "Read one memory block in full by its name from the 'Recallable memory' index "
    "in your instructions. Recall a block before relying on it: the index shows "
    "only a one-line description. Memory is supporting context; check it against "
    "the current code and commands.",
    (BLOCK_NAME,),
)
FORGET = ToolSpec(
    "forget",
    "Delete a memory block that is wrong or no longer true, instead of overwriting "
    "it with a placeholder. The change is journaled and can be undone by a person.",
    (BLOCK_NAME,),
)
SEARCH_MEMORY = ToolSpec(
    "search_memory",
    "Find memory blocks about a question (project and global), most relevant and "
    "recent first, when the 'Recallable memory' index in your instructions does "
    "not list what you need (it shows at most 60). Then recall(name) the ones "
    "that matter.",
    (
        Param("query", str, "A question, or some words.", required=True),
        Param(
            "k",
            int,
            f"How many blocks to return ({FOUND_BY_DEFAULT} unless given).",
            default=FOUND_BY_DEFAULT,
            minimum=1,
            maximum=MAX_FOUND,
        ),
    ),
)

MEMORY_TOOLS: tuple[ToolSpec, ...] = (REMEMBER, RECALL, FORGET, SEARCH_MEMORY)
if TYPE_CHECKING:
    ToolName = str
else:  # the names POST /v1/memory/tools/call takes, an enum in the OpenAPI document
    ToolName = Literal[tuple(tool.name for tool in MEMORY_TOOLS)]

# -- what an MCP call says about where it comes from ---------------------------------------

REPO_ROOT = Param(
    "repo_root",
    str,
    "The repository root of the project whose memory to use; without it, the global memory.",
)
SESSION_ID = Param(
    "session_id",
    str,
    "The id of the session making the call; the memory journal records it, and a new "
    "block names it as its source.",
)
SESSIONS_OF = Param(
    "repo_root", str, "Only sessions in this repository root. Without it, every session."
)

# -- the MCP tools ------------------------------------------------------------------------

SEARCH_SESSIONS = ToolSpec(
    "search_sessions",
    "Search past sessions (turns, tool calls and results, summaries): any of the "
    'words, best first; "phrases", prefix*, AND/OR/NOT and repo:/role:/after: '
    "filters work. Each hit names its session and turn for get_session.",
    (
        Param("query", str, "Words, phrases and filters to search for.", required=True),
        SESSIONS_OF,
        Param(
            "limit",
            int,
            "How many hits to return (10 unless given).",
            default=10,
            minimum=1,
            maximum=MAX_HITS,
        ),
    ),
)
GET_SESSION = ToolSpec(
    "get_session",
    "Read a window of a session's transcript: the events after seq `after`, at "
    "most `limit` of them (long contents cut).",
    (
        Param(
            "session_id",
            str,
            "The session's id, as search_sessions and list_sessions give it.",
            required=True,
        ),
        Param(
            "after",
            int,
            "Start after the event with this seq (0, the start, unless given).",
            default=0,
            minimum=0,
        ),
        Param(
            "limit",
            int,
            "How many events to return at most (50 unless given).",
            default=50,
            minimum=1,
            maximum=MAX_WINDOW,
        ),
    ),
)
LIST_SESSIONS = ToolSpec(
    "list_sessions",
    "List sessions, most recently active first.",
    (
        SESSIONS_OF,
        Param(
            "limit",
            int,
            "How many sessions to return (20 unless given).",
            default=20,
            minimum=1,
            maximum=MAX_LISTED,
        ),
    ),
)

MCP_TOOLS: tuple[ToolSpec, ...] = (
    REMEMBER.taking(REPO_ROOT, SESSION_ID),
    RECALL.taking(REPO_ROOT, SESSION_ID),
    FORGET.taking(REPO_ROOT),
    SEARCH_MEMORY.taking(REPO_ROOT),
    SEARCH_SESSIONS,
    GET_SESSION,
    LIST_SESSIONS,
)
