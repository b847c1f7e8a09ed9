"""What a write puts in a block file, built from what is there (no I/O): a new block's
document, the keys a duplicate merged in changes, and a patch of frontmatter keys (and
the body) that leaves every other byte as it was.
"""

from __future__ import annotations

from typing import Any

from ...schemas import frontmatter
from .meta import BlockMeta, as_float, as_list, written_fields
from .names import SCHEMA


def new_fields(
    name: str, body: str, meta: dict[str, Any], *, created_at: str, now: str
) -> dict[str, Any]:
    """A block's frontmatter: the known fields first, in order, then ``meta``'s own keys,
    then when it was made and changed and the format's version."""
    fields: dict[str, Any] = {"name": name, **written_fields(meta, body)}
    for key, value in meta.items():
        if key not in fields and key not in _SET and value is not None:
            fields[key] = value
    return fields | {"created_at": created_at or now, "updated_at": now, "schema": SCHEMA}


_SET = ("created_at", "updated_at", "schema")


_SET = ("created_at", "updated_at", "schema")


def merged(block: BlockMeta, meta: dict[str, Any], sources: list[str], now: str) -> dict[str, Any]:
    """The keys a duplicate merged into ``block`` changes: importance raised, tags joined,
    its provenance added to ``sources`` (those the block lists), counted as absorbed."""
    importance = max(block.importance, as_float(meta.get("importance"), 0.5))
    changes: dict[str, Any] = {
        "importance": round(min(1.0, importance + 0.1), 3),
        "tags": block.tags + [t for t in as_list(meta.get("tags")) if t not in block.tags],
        "updated_at": now,
        "absorbed": block.absorbed + 1,  # a duplicate merged in: protected from pruning
    }
    if meta.get("source_session") and source_of(meta) not in sources:
        changes["sources"] = [*sources, source_of(meta)]
    return changes


def patched(text: str, changes: dict[str, Any], now: str) -> frontmatter.Document:
    """``text`` with frontmatter keys set (and the body, given as ``body``); every other
    byte stays as it was."""
    doc = frontmatter.parse(text)
    if doc.meta_text is None:
        doc = frontmatter.Document("", {}, doc.body)
    keys = dict(changes)
    if "body" in keys:
        body = keys.pop("body")
        doc = frontmatter.Document(
            doc.meta_text, doc.meta, body if body.endswith("\n") else body + "\n"
        )
    return frontmatter.set_keys(doc, keys if "updated_at" in keys else {**keys, "updated_at": now})


def source_of(meta: dict[str, Any]) -> str:
    """A block's provenance as a merge lists it under ``sources``: session and seq range."""
    return f"{meta['source_session']}:{meta.get('source_seq', '')}".rstrip(":")
