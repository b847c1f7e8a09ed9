"""The memory tools for agents, as OpenAI function-calling definitions and their runner.

The guidance lives in the tool descriptions (what belongs in memory, what does not,
recall before relying), so an agent in any language wires memory in with two calls:
``GET /v1/memory/tools`` into its tool list, ``POST /v1/memory/tools/call`` for each call.
Results are the text the model should see, friendly for misses and conflicts too. A
block in which a hand edit left a secret is never given to the model: recall says it is
withheld and why (the kinds and lines, never the secret).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import AsterError, BlockNotFound, Invalid, NameTaken, SecretDetected
from ..index.text import parse_query
from ..schemas.numbers import integral
from ..schemas.tools import FOUND_BY_DEFAULT, MAX_FOUND, MEMORY_TOOLS
from ..secrets import LEFT_BY_HAND, found_in, kinds, lines_of
from ..storage.memory import MemoryStore, slugify

if TYPE_CHECKING:
    from .sessions import Sessions

TOOLS: list[dict[str, Any]] = [spec.function() for spec in MEMORY_TOOLS]

PARAMETERS: dict[str, frozenset[str]] = {
    spec.name: frozenset(p.name for p in spec.params) for spec in MEMORY_TOOLS
}
_SPECS = {spec.name: spec for spec in MEMORY_TOOLS}


class ToolAnswer(NamedTuple):
    """What the model is told, and whether the call failed (MCP's ``isError``, REST's
    ``is_error``): a miss, a refusal, a withheld block are failures said in words."""

    text: str
    failed: bool = False


def run_tool(
    memory: MemoryStore,
    scope: str,
    name: str,
    arguments: dict[str, Any] | str,
    *,
    session: str | None = None,
) -> ToolAnswer:
    """Run one tool call (writer thread); the text result is what the model sees."""
    args = _arguments(arguments, name)
    try:
        if name == "remember":
            return ToolAnswer(_remember(memory, scope, args, session))
        if name == "recall":
            return _recall(memory, scope, _string(args, "name"), session)
        if name == "forget":
            target = _string(args, "name")
            memory.forget(scope, target, actor="tool", session=session)
            return ToolAnswer(
                f"Forgot {target!r}. A person can restore it from the journal if needed."
            )
    except AsterError as exc:
        return ToolAnswer(failure(name, args, exc), failed=True)
    raise Invalid(
        f"unknown tool {name[:40]!r}; the tools are remember, recall, forget and search_memory"
    )


async def search_memory(
    sessions: Sessions, scope: str, query: str, k: int = FOUND_BY_DEFAULT
) -> tuple[str, list[dict[str, Any]]]:
    """The ``search_memory`` tool: the text the model sees, and the hits."""
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_FOUND:
        raise Invalid(f"k must be a whole number from 1 to {MAX_FOUND}")
    scopes = ["global"] if scope == "global" else [scope, "global"]
    hits: list[dict[str, Any]] = await sessions.search_memory(
        parse_query(query), scopes=scopes, kinds=("block",), k=k
    )
    lines = [f"- {h['name']} ({h['scope']}): {h['description']}{relations(h)}" for h in hits]
    return "\n".join(lines) or "No memory matches that.", hits


def relations(block: dict[str, Any]) -> str:
    """A block's relations as a line of memory shows them: "(replaces a; conflicts with
    b)", or nothing."""
    said = [
        f"{label} {', '.join(block.get(key) or [])}"
        for key, label in (("supersedes", "replaces"), ("conflicts_with", "conflicts with"))
        if block.get(key)
    ]
    return f" ({'; '.join(said)})" if said else ""


def failure(name: str, args: dict[str, Any], exc: AsterError) -> str:
    """What the model is told of a failed call: what went wrong, and what to do."""
    if isinstance(exc, BlockNotFound):
        return (
            f"No memory block is named {args.get('name')!r}. Use a name from the "
            "'Recallable memory' index in your instructions, or search_memory."
        )
    if isinstance(exc, SecretDetected):
        if LEFT_BY_HAND in exc.detail:  # the file holds one already, not this note
            return f"Not remembered: {exc.detail}."
        found = kinds(exc.errors or [])
        return (
            f"Not remembered: it looks like it contains a secret ({found}). Secrets never "
            "go into memory; remember the fact without it."
        )
    if isinstance(exc, NameTaken):
        return f"Not remembered: {exc.detail}. Recall the existing block first, or choose another title."
    return f"The {name} call failed: {exc.detail}"


async def run_search_tool(
    sessions: Sessions, scope: str, arguments: dict[str, Any] | str
) -> ToolAnswer:
    """``search_memory`` called through ``POST /v1/memory/tools/call``; failures are text."""
    args = _arguments(arguments, "search_memory")
    try:
        text, _ = await search_memory(
            sessions, scope, _string(args, "query"), args.get("k", FOUND_BY_DEFAULT)
        )
    except AsterError as exc:
        return ToolAnswer(failure("search_memory", args, exc), failed=True)
    return ToolAnswer(text)


def _recall(memory: MemoryStore, scope: str, name: str, session: str | None) -> ToolAnswer:
    """A block's text, unless it holds a secret (then not journaled as a recall either)."""
    text, _ = memory.read_block(scope, name)
    if withheld(name, text) is None:
        text, _ = memory.recall(scope, name, actor="tool", session=session)
    notice = withheld(name, text)  # (a hand edit may have come in between)
    return ToolAnswer(notice, failed=True) if notice is not None else ToolAnswer(text)


def withheld(name: str, text: str) -> str | None:
    """What the model is told instead of a block that holds a secret; None for others."""
    found = found_in(text)
    if not found:
        return None
    return (
        f"The memory block {name!r} is withheld: it holds what looks like a secret "
        f"({kinds(found)}) on {lines_of(found)}, {LEFT_BY_HAND}. A person has to remove "
        "it first."
    )


def _remember(memory: MemoryStore, scope: str, args: dict[str, Any], session: str | None) -> str:
    note = _string(args, "note")
    title = args.get("title")
    if title is None or not str(title).strip():
        result = memory.add_note(scope, note, actor="tool", session=session)
        if result["duplicate"]:
            return "Already in core memory; nothing added."
        return "Added to core memory."
    meta: dict[str, Any] = {"source_session": session} if session else {}
    block, merged = memory.write_block(
        scope, slugify(str(title)), body=note, meta=meta, actor="tool", session=session
    )
    if merged:
        return f"Already remembered as {block.name!r}; its importance was raised."
    return f"Remembered as {block.name!r}. It is listed in the memory index as: {block.description}"


def _arguments(arguments: dict[str, Any] | str, tool: str) -> dict[str, Any]:
    """A call's arguments as an object: a key given twice, or one the tool does not take
    (a misspelt ``titel`` would file a note instead of a block), is refused by name."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}", object_pairs_hook=_once)
        except ValueError as exc:
            raise Invalid(f"arguments is not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise Invalid("arguments must be a JSON object")
    known = PARAMETERS.get(tool)
    unknown = sorted(set(arguments) - known) if known is not None else []
    if unknown:
        raise Invalid(
            f"the {tool} tool takes no argument {', '.join(map(repr, unknown))}; "
            f"it takes {', '.join(sorted(known or ()))}"
        )
    for param in _SPECS[tool].params if tool in _SPECS else ():
        if param.name not in arguments:
            if param.required:
                raise Invalid(f"the {tool} tool needs the argument {param.name!r}")
        elif (refusal := param.refusal(arguments[param.name])) is not None:
            raise Invalid(f"the {tool} tool's argument {refusal}")
        else:
            arguments[param.name] = integral(arguments[param.name])
    return arguments


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} is given twice")
        out[key] = value
    return out


def _string(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"the {key} argument must be a non-empty string")
    return value
