"""``BlockMeta``: what listings, the prompt context and search need of one block, and
the one mapping of a block's frontmatter to those fields; and what a write puts in a
block file, built from what is there (no I/O): a new block's fields, the keys a
duplicate merged in changes, and a patch of frontmatter keys (and the body) that leaves
every other byte as it was.

Frontmatter is written by hand as often as by the daemon, so the mapping takes any
value: a missing, mistyped or non-finite one gets its default, a description missing
is the body's first line, ``updated_at`` falls back to ``created_at``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ...schemas import frontmatter
from .names import SCHEMA


@dataclass
class BlockMeta:
    """What listings and the prompt context need of one block."""

    scope: str
    name: str
    archived: bool
    description: str = ""
    type: str = "semantic"
    tags: list[str] = field(default_factory=list)
    importance: float = 0.5
    confidence: float = 0.5
    pinned: bool = False
    created_at: str = ""
    updated_at: str = ""
    supersedes: list[str] = field(default_factory=list)
    conflicts_with: list[str] = field(default_factory=list)
    etag: str = ""
    bytes: int = 0
    norm: str = ""  # sha256 of the normalized body, for duplicate detection
    secrets: list[dict[str, Any]] = field(default_factory=list)  # left there by hand
    # what protects it from automatic pruning, besides the fields above: made or rewritten
    # by consolidation, and duplicates it absorbed (frontmatter `consolidated`, `absorbed`)
    consolidated: bool = False
    absorbed: int = 0

    def public(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in _INTERNAL}


_INTERNAL = ("norm", "consolidated", "absorbed")


class Fields(TypedDict):
    """A block's fields as its frontmatter gives them."""

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


def fields_of(meta: dict[str, Any], body: str) -> Fields:
    """The one mapping of a block's frontmatter (``meta``) and ``body`` to its fields, read
    by the block index and by the search index alike."""
    return {
        "description": " ".join(str(meta.get("description") or "").split()) or first_line(body),
        "type": str(meta.get("type") or "semantic"),
        "tags": as_list(meta.get("tags")),
        "importance": as_float(meta.get("importance"), 0.5),
        "confidence": as_float(meta.get("confidence"), 0.5),
        "pinned": bool(meta.get("pinned", False)),
        "created_at": str(meta.get("created_at") or ""),
        "updated_at": str(meta.get("updated_at") or meta.get("created_at") or ""),
        "supersedes": as_list(meta.get("supersedes")),
        "conflicts_with": as_list(meta.get("conflicts_with")),
    }


def written_fields(meta: dict[str, Any], body: str) -> dict[str, Any]:
    """The known fields a block is written with, first in its frontmatter and in this
    order: the same mapping, with a description of one line of at most 200 characters."""
    known = fields_of(meta, body)
    return {
        "description": " ".join(str(meta.get("description") or first_line(body)).split())[:200],
        "type": known["type"],
        "tags": known["tags"],
        "importance": known["importance"],
        "confidence": known["confidence"],
        "pinned": known["pinned"],
    }


def as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)]


def as_float(value: Any, default: float) -> float:
    """A number from frontmatter; ``default`` for anything else, NaN and infinities too."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if math.isfinite(number) else default


def first_line(body: str) -> str:
    for line in body.splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text[:200]
    return ""


# -- what a write puts in a block file ---------------------------------------------


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
