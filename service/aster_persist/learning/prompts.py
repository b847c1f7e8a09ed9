"""What the model is asked: the system prompts for extraction, titles and consolidation,
and the JSON schemas its answers are asked to follow (``response_format``).

Plain constants, no I/O. ``SCHEMA_NAME`` is the version every learned block is tagged
with; an answer that ignores a schema is still checked by `validation`.
"""

from __future__ import annotations

from typing import Any

SCHEMA_NAME = "aster.memory.v1"

ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {"enum": ["semantic", "procedural"]},
        "title": {"type": "string"},
        "content": {"type": "string"},
        "importance": {"type": "number", "minimum": 0, "maximum": 1},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "scope": {"enum": ["project", "global"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "reason": {"type": "string"},
        "supersedes": {"type": "array", "items": {"type": "string"}},
        "conflicts_with": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["type", "title", "content", "importance", "confidence", "scope", "reason"],
}
EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": ITEM_SCHEMA}},
    "required": ["items"],
}
TITLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"title": {"type": "string"}},
    "required": ["title"],
}
CONSOLIDATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "merges": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "into": {"type": "string"},
                    "from": {"type": "array", "items": {"type": "string"}},
                    "content": {"type": "string"},
                    "reason": {"type": "string"},
                },
                "required": ["into", "from", "content", "reason"],
            },
        },
        "archives": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "reason": {"type": "string"}},
                "required": ["name", "reason"],
            },
        },
        "new": {"type": "array", "items": ITEM_SCHEMA},
    },
    "required": ["merges", "archives", "new"],
}

EXTRACTION_PROMPT = """You keep the long-term memory of a coding agent.
From the conversation turn below, extract only what would change a future answer:
the user's stated preferences, project conventions, facts about the environment,
and procedures that worked or failed. Nothing that is only true for this turn.
Tool calls and results are context: never copy them into memory as they are.
Answer with JSON: {"items": [...]}, at most %(max_items)d items, or {"items": []}.
Each item: type (semantic or procedural), title (a few words), content (one to three
sentences), importance and confidence (0 to 1), scope (project, or global for what
holds across projects), tags, reason (why it will matter later), and optionally
supersedes / conflicts_with: names of the existing memories below that it replaces or
contradicts. Use only those names.
Never include secrets, tokens, passwords or keys."""

TITLE_PROMPT = """Give this coding session a short title (at most 8 words) that says
what it is about. Answer with JSON: {"title": "..."}."""

CONSOLIDATION_PROMPT = """You tidy the long-term memory of a coding agent. Below are its
memory blocks (name, description, start of the content). Propose:
- merges: blocks that say the same thing, merged "into" one of them (with the merged
  content), the others ("from") archived;
- archives: blocks that are stale or contradicted by another;
- new: distilled blocks that generalise several (same fields as a memory item).
Use only the names shown. Give a reason for each. Answer with JSON:
{"merges": [...], "archives": [...], "new": [...]}; empty lists when all is well."""
