"""Memory hygiene: relations between blocks, procedural records, and pruning.

A block that ``supersedes`` others archives them; ``conflicts_with`` is marked on both
blocks, and relations are refused before anything is written when they could not be
applied. A procedural record never replaces another (``base``, ``base-2``…). Pruning
archives stale, unimportant blocks (never deletes), journaling why and what asked for
it, and never touches a protected one: pinned, recalled three times or more, made or
rewritten by consolidation, holding duplicates it absorbed, or related to another block
(replacing it, or in conflict with it).
"""

from __future__ import annotations

from typing import Any

from ...errors import BlockNotFound, Invalid
from .. import frontmatter
from ..secrets import refuse_document
from .base import StoreBase
from .meta import BlockMeta, as_list
from .names import check_name


def check_relation_names(name: str, meta: dict[str, Any]) -> None:
    """Refuse a relation that could name no block: a bad name, or the block itself
    (checked before anything the store holds is looked at)."""
    for key in ("supersedes", "conflicts_with"):
        for other in as_list(meta.get(key)):
            check_name(other)
            if other == name:
                raise Invalid(f"{key} names the block itself, {name!r}")


class HygienePart(StoreBase):
    """Relations, procedural records, prune."""

    def relate(
        self, scope: str, name: str, meta: dict[str, Any], *, actor: str, session: str | None
    ) -> None:
        """Apply a new block's relations: archive what it supersedes, mark conflicts on both."""
        for other in as_list(meta.get("supersedes")):
            if (
                other != name
                and (scope, other) in self.blocks
                and not self.blocks[(scope, other)].archived
            ):
                why = {"reason": f"superseded by {name}", "trigger": f"{name} written by {actor}"}
                self.move(scope, other, archive=True, actor=actor, session=session, detail=why)
        for other in as_list(meta.get("conflicts_with")):
            block = self.blocks.get((scope, other))
            if block is not None and other != name and name not in block.conflicts_with:
                self.patch_block(
                    scope,
                    other,
                    {"conflicts_with": [*block.conflicts_with, name]},
                    actor=actor,
                    session=session,
                )

    def check_relations(self, scope: str, name: str, meta: dict[str, Any]) -> None:
        """Refuse relations that ``relate`` could not apply, before anything is written."""
        check_relation_names(name, meta)
        for key in ("supersedes", "conflicts_with"):
            for other in as_list(meta.get(key)):
                if (scope, other) not in self.blocks:
                    raise BlockNotFound(f"{key} names {other!r}, which is not a block in {scope}")
                if key == "conflicts_with" and not self.blocks[(scope, other)].archived:
                    text, _ = self.read_block(scope, other)
                    held = text.encode("utf-8")  # marking it would write its secret again
                    refuse_document(held, f"block {other!r}", before=held)
                    try:
                        frontmatter.parse(text)
                    except Invalid as exc:
                        raise Invalid(
                            f"conflicts_with names {other!r}, whose frontmatter cannot be "
                            f"marked: {exc}"
                        ) from None

    def write_procedure(
        self, scope: str, base: str, *, body: str, meta: dict[str, Any], session: str | None
    ) -> tuple[BlockMeta, bool]:
        """A procedural record under ``base``, ``base-2``… (never replacing another record)."""
        name, n = base, 1
        while (scope, name) in self.blocks:
            n += 1
            name = f"{base}-{n}"
        return self.write_block(scope, name, body=body, meta=meta, session=session)

    def prune(
        self,
        scope: str,
        *,
        max_age_days: float,
        max_importance: float,
        dry_run: bool,
        actor: str = "api",
        trigger: str = "prune asked for",
    ) -> dict[str, Any]:
        """Archive stale, unimportant blocks; protected ones are never touched. Each
        archive is journaled with its reason and ``trigger``."""
        now = self.clock().timestamp()
        archived, kept = [], []
        for block in self.list_blocks(scope):
            usage = self.usage(block)
            last = max(block.updated_at, usage["last_recalled_at"] or "")
            protected = protection(block, usage["recall_count"])
            if protected:
                kept.append({"name": block.name, "reason": protected})
                continue
            age_days = (now - _epoch(last)) / 86400 if last else float("inf")
            if age_days >= max_age_days and block.importance <= max_importance:
                archived.append(
                    {
                        "name": block.name,
                        "reason": f"not updated or recalled for {age_days:.0f} days, importance {block.importance}",
                    }
                )
        if not dry_run:
            for item in archived:
                why = {"reason": item["reason"], "trigger": trigger}
                self.move(scope, item["name"], archive=True, actor=actor, detail=why)
        return {"scope": scope, "dry_run": dry_run, "archived": archived, "protected": kept}


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
