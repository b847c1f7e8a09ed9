"""Memory hygiene's rules: relations a block may name, and what pruning archives or keeps.

A block that ``supersedes`` others archives them; ``conflicts_with`` is marked on both
blocks, and relations are refused before anything is written when they could not be
applied. A procedural record never replaces another (``base``, ``base-2``…). Pruning
archives stale, unimportant blocks (never deletes), journaling why and what asked for
it, and never touches a protected one: pinned, recalled three times or more, made or
rewritten by consolidation, holding duplicates it absorbed, or related to another block
(replacing it, or in conflict with it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import Invalid
from ...schemas.names import check_name
from .meta import BlockMeta, as_list


def check_relation_names(name: str, meta: dict[str, Any]) -> None:
    """Refuse a relation that could name no block: a bad name, or the block itself
    (checked before anything the store holds is looked at)."""
    for key in ("supersedes", "conflicts_with"):
        for other in as_list(meta.get(key)):
            check_name(other)
            if other == name:
                raise Invalid(f"{key} names the block itself, {name!r}")


def stale(
    blocks: list[BlockMeta],
    usage: Callable[[BlockMeta], dict[str, Any]],
    *,
    now: float,
    max_age_days: float,
    max_importance: float,
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """The blocks to archive (not updated or recalled for ``max_age_days``, importance at
    most ``max_importance``) and the protected ones kept, each with its reason."""
    archived, kept = [], []
    for block in blocks:
        used = usage(block)
        last = max(block.updated_at, used["last_recalled_at"] or "")
        protected = protection(block, used["recall_count"])
        if protected:
            kept.append({"name": block.name, "reason": protected})
            continue
        age_days = (now - _epoch(last)) / 86400 if last else float("inf")
        if age_days >= max_age_days and block.importance <= max_importance:
            reason = (
                f"not updated or recalled for {age_days:.0f} days, importance {block.importance}"
            )
            archived.append({"name": block.name, "reason": reason})
    return archived, kept


def protection(block: BlockMeta, recall_count: int) -> str | None:
    """Why a block is never pruned automatically, or None: pinned, recalled often, made
    or rewritten by consolidation, holding duplicates it absorbed, or related to others."""
    if block.pinned:
        return "pinned"
    if recall_count >= 3:
        return f"recalled {recall_count} times"
    if block.consolidated:
        return "consolidated"
    if block.absorbed:
        return f"absorbed {block.absorbed} duplicate{'s' if block.absorbed > 1 else ''}"
    if block.supersedes:
        return "related: replaces " + ", ".join(block.supersedes)
    if block.conflicts_with:
        return "related: conflicts with " + ", ".join(block.conflicts_with)
    return None


def _epoch(ts: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
