"""The agents' tools, each defined once: its name, its description (the guidance the
model reads) and its parameters with their descriptions, bounds and defaults.

The memory tools ``remember``, ``recall``, ``forget`` and ``search_memory`` are served
as OpenAI function-calling definitions by ``GET /v1/memory/tools``; the MCP server
offers the same tools with the context parameters ``repo_root`` and ``session_id``
added, and more besides (``mcp_tools.py``). Both are made from the definitions here,
so a description or a bound reads the same on either side.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal

from pydantic import Field

from .numbers import integral

MAX_FOUND = 50  # blocks one search_memory call returns at most
FOUND_BY_DEFAULT = 5  # and without k
MAX_HITS = 50  # hits one search_sessions call returns at most
MAX_WINDOW = 200  # events one get_session call returns at most
MAX_LISTED = 200  # sessions one list_sessions call returns at most

JSON_TYPES: dict[type, str] = {str: "string", int: "integer"}


def returns(**fields: str) -> dict[str, Any]:
    """The output schema of a result object with these fields, by JSON type."""
    kinds = {"array": {"type": "array", "items": {"type": "object"}}}
    return {
        "type": "object",
        "properties": {name: kinds.get(kind, {"type": kind}) for name, kind in fields.items()},
        "required": list(fields),
    }


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
    choices: tuple[str, ...] | None = None  # the values a string may take

    def schema(self) -> dict[str, Any]:
        """The parameter's JSON schema in a function-calling definition."""
        out: dict[str, Any] = {"type": JSON_TYPES[self.type]}
        if self.choices is not None:
            out["enum"] = list(self.choices)
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
            if not isinstance(value, str):
                return f"{self.name} must be a string"
            if self.choices is not None and value not in self.choices:
                return f"{self.name} must be one of {', '.join(self.choices)}"
            return None
        value = integral(value)
        if not isinstance(value, int) or isinstance(value, bool):
            return f"{self.name} must be a whole number"
        low = self.minimum if self.minimum is not None else value
        high = self.maximum if self.maximum is not None else value
        return None if low <= value <= high else f"{self.name} must be from {low} to {high}"

    def field(self) -> Any:
        """The parameter as a pydantic field definition, ``(annotation, default)``, or
        the bare annotation when it is required."""
        kind: Any = Literal[self.choices] if self.choices is not None else self.type
        if not self.required and self.default is None:
            kind = kind | None
        annotation = Annotated[
            kind, Field(description=self.description, ge=self.minimum, le=self.maximum)
        ]
        return annotation if self.required else (annotation, self.default)


@dataclass(frozen=True)
class ToolSpec:
    """One tool: the name, what the model is told about it, its parameters, what it
    does to the store (for a client deciding what to ask a person about) and the shape
    of its structured result (``output``, a JSON schema; None when it has none)."""

    name: str
    description: str
    params: tuple[Param, ...]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    output: dict[str, Any] | None = None

    def hints(self) -> dict[str, bool]:
        """The MCP tool annotations: it only reads, it may take away what was there,
        calling it again with the same arguments changes nothing more; never the open
        world (it touches the store only)."""
        return {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent or self.read_only,
            "openWorldHint": False,
        }

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

    def returning(self, **fields: str) -> ToolSpec:
        """The same tool with a structured result of these fields (by JSON type)."""
        return replace(self, output=returns(**fields))


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
    # not idempotent: the same note again is merged (never kept twice), and each time
    # it raises the importance of what it was merged into
    idempotent=False,
)
RECALL = ToolSpec(
    "recall",
    "Read one memory block in full by its name from the 'Recallable memory' index "
    "in your instructions. Recall a block before relying on it: the index shows "
    "only a one-line description. Memory is supporting context; check it against "
    "the current code and commands.",
    (BLOCK_NAME,),
    read_only=True,  # journaled as a recall, which changes no content
)
FORGET = ToolSpec(
    "forget",
    "Delete a memory block that is wrong or no longer true, instead of overwriting "
    "it with a placeholder. The change is journaled and can be undone by a person.",
    (BLOCK_NAME,),
    destructive=True,
    idempotent=True,
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
    read_only=True,
)

MEMORY_TOOLS: tuple[ToolSpec, ...] = (REMEMBER, RECALL, FORGET, SEARCH_MEMORY)
# the names POST /v1/memory/tools/call takes, an enum in the OpenAPI document (a test
# holds it to the tools' own names)
ToolName = Literal["remember", "recall", "forget", "search_memory"]
