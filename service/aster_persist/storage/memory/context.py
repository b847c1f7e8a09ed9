"""The prompt context, made from core memory and the visible blocks (no I/O).

The context is core memory in full (the global scope's, then the project's), then an
index of at most ``MAX_INDEX_ENTRIES`` blocks, most recent first or most relevant
first. A project's block shadows a global one of the same name. Files holding a secret
left by hand are withheld (named, with their findings, never their content). The
ordering is read from the block index, never the files, and cached until the next
change.
"""

from __future__ import annotations

from typing import Any

from ...schemas.memory import MAX_INDEX_ENTRIES
from ...secrets import found_in, withheld_core
from .meta import BlockMeta
from .names import CORE


def render_context(
    project: str | None,
    cores: tuple[str, str],
    visible: list[BlockMeta],
    relevant: list[str] | None = None,
) -> dict[str, Any]:
    """The markdown for a system prompt: core memory in full (``cores``: the global
    scope's and the project's), then an index of the ``visible`` blocks, most recent
    first, or with ``relevant`` (block names, best first) those first."""
    global_core, project_core = cores
    withheld_blocks = [b for b in visible if b.secrets]  # until fixed by hand
    blocks = [b for b in visible if not b.secrets]
    if relevant is not None:
        rank = {name: n for n, name in enumerate(dict.fromkeys(relevant))}
        first = sorted((b for b in blocks if b.name in rank), key=lambda b: rank[b.name])
        blocks = first + [b for b in blocks if b.name not in rank]
    shown = blocks[:MAX_INDEX_ENTRIES]
    by_scope = [(global_core, "global"), (project_core, project or "")]
    parts = [withheld_core(text, scope).strip() for text, scope in by_scope if text.strip()]
    labels = [
        (
            "Global core memory (ASTER.md)"
            if scope == "global"
            else "Project core memory (ASTER.md)",
            scope,
        )
        for text, scope in by_scope
        if text.strip()
    ]
    if blocks:
        lines = [
            "### Recallable memory",
            "Call recall(name) to read a block in full before relying on it.",
        ]
        for block in shown:
            line = f"- {block.name}: {block.description}"
            if block.conflicts_with:
                line += f" (conflicts with {', '.join(block.conflicts_with)})"
            lines.append(line)
        hidden = len(blocks) - len(shown)
        if hidden > 0:
            lines.append(
                f"({hidden} more blocks are not listed here; find them with "
                "search_memory(query) before assuming nothing is known.)"
            )
        parts.append("\n".join(lines))
        own = sum(1 for b in shown if b.scope != "global")
        labels.append(
            (
                f"Index of blocks ({len(shown)} shown: {len(shown) - own} global, "
                f"{own} of the project)",
                "index",
            )
        )
    text = "\n\n".join(parts) + ("\n" if parts else "")
    return {
        "scope": project or "global",
        "content": text,
        "order": "recency" if relevant is None else "relevance",
        "counts": {
            "blocks": len(blocks),
            "shown": len(shown),
            "hidden": len(blocks) - len(shown),
            "global_core_bytes": len(global_core.encode()),
            "project_core_bytes": len(project_core.encode()),
        },
        "tokens": estimate_tokens(text),
        "parts": [
            {
                "label": label,
                "scope": scope,
                "content": part,
                "chars": len(part),
                "tokens": estimate_tokens(part),
            }
            for (label, scope), part in zip(labels, parts, strict=True)
        ],
        "withheld": [
            {"scope": b.scope, "name": b.name, "secrets": b.secrets} for b in withheld_blocks
        ]
        + [
            {"scope": scope, "name": CORE, "secrets": found_in(text)}
            for text, scope in by_scope
            if text and found_in(text)
        ],
    }


def estimate_tokens(text: str) -> int:
    """About four characters a token for English and code: enough to budget a prompt."""
    return (len(text) + 3) // 4
