"""The block index: what the store knows of every block, held in memory with no I/O.

One ``BlockMeta`` per block (scope, name), the live block each normalized body belongs
to (for duplicate detection), recall counts and when each block was last recalled, and
a version bumped on every change so the cached visible ordering expires. Listings,
the prompt context and recalls read it, never the block files. ``block_of`` makes a
``BlockMeta`` from a file's bytes. Mutations come from the writer thread; readers copy
before iterating.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ...errors import Invalid
from ...schemas import frontmatter
from ...secrets import found_in
from .meta import BlockMeta, fields_of
from .names import etag_of, normalized


def body_hash(body: str) -> str:
    """The fingerprint two blocks share when their bodies are the same, normalized."""
    return hashlib.sha256(normalized(body).encode()).hexdigest()


def block_of(
    scope: str,
    name: str,
    archived: bool,
    data: bytes,
    doc: frontmatter.Document | None = None,
) -> BlockMeta:
    """A block's metadata from its file's bytes (``doc``: their parsed form, when known)."""
    if doc is None:
        try:
            doc = frontmatter.parse(data.decode("utf-8"))
        except (Invalid, UnicodeDecodeError):
            doc = frontmatter.Document(None, {}, data.decode("utf-8", "replace"))
    meta, body = doc.meta, doc.body
    return BlockMeta(
        scope=scope,
        name=name,
        archived=archived,
        **fields_of(meta, body),
        etag=etag_of(data),
        bytes=len(data),
        norm=body_hash(body),
        secrets=found_in(data),
        consolidated=meta.get("consolidated") is True,
        absorbed=max(0, meta["absorbed"]) if type(meta.get("absorbed")) is int else 0,
    )


class BlockIndex:
    """Every block's metadata, duplicates by body, recalls, and the visible ordering."""

    def __init__(self) -> None:
        self._blocks: dict[tuple[str, str], BlockMeta] = {}
        self._by_norm: dict[tuple[str, str], str] = {}  # normalized body -> block name
        self._recalls: dict[tuple[str, str], tuple[int, str]] = {}  # count, last ts
        self._ordered: dict[str | None, tuple[int, list[BlockMeta]]] = {}
        self.version = 0  # bumped on every change, so cached orderings expire

    # -- blocks ------------------------------------------------------------------------

    def clear(self) -> None:
        self._blocks.clear()
        self._by_norm.clear()
        self._recalls.clear()
        self.version += 1

    def get(self, scope: str, name: str) -> BlockMeta | None:
        return self._blocks.get((scope, name))

    def __len__(self) -> int:
        return len(self._blocks)

    def put(self, block: BlockMeta) -> BlockMeta:
        """Index ``block``, in place of the one of its scope and name."""
        self._unlist(self._blocks.get((block.scope, block.name)))
        self._blocks[(block.scope, block.name)] = block
        if not block.archived:
            self._by_norm.setdefault((block.scope, block.norm), block.name)
        self.version += 1
        return block

    def drop(self, scope: str, name: str) -> BlockMeta | None:
        """Forget a block; returns what was indexed, or None."""
        gone = self._blocks.pop((scope, name), None)
        if gone is not None:
            self._unlist(gone)
            self.version += 1
        return gone

    def _unlist(self, block: BlockMeta | None) -> None:
        if block is not None and self._by_norm.get((block.scope, block.norm)) == block.name:
            del self._by_norm[(block.scope, block.norm)]

    def with_body(self, scope: str, norm: str) -> str | None:
        """The name of the live block of ``scope`` whose normalized body hashes to ``norm``."""
        return self._by_norm.get((scope, norm))

    def snapshot(self) -> dict[tuple[str, str], BlockMeta]:
        """A copy of every block by (scope, name), safe to iterate on any thread."""
        return self._blocks.copy()

    def scopes(self) -> list[str]:
        """Every scope that has blocks."""
        return sorted({scope for scope, _ in self.snapshot()})

    # -- listings ----------------------------------------------------------------------

    def listing(
        self,
        scope: str,
        *,
        tags: list[str] | None = None,
        match: str = "all",
        type: str | None = None,
        include_archived: bool = False,
        with_global: bool = False,
    ) -> list[BlockMeta]:
        """Blocks of ``scope`` (and, ``with_global``, of global memory, a project's block
        shadowing a global one of its name) with all (``match="any"``: any) of ``tags``,
        most recently updated first."""
        wanted = [scope, "global"] if with_global and scope != "global" else [scope]
        test = any if match == "any" else all
        shown: dict[str, BlockMeta] = {}  # by name: a live project block hides a global one
        blocks = self.snapshot()
        for where in wanted:
            for (s, name), b in blocks.items():
                hidden = name in shown and not (shown[name].archived and not b.archived)
                if s == where and (include_archived or not b.archived) and not hidden:
                    shown[name] = b
        found = [
            b
            for b in shown.values()
            if (type is None or b.type == type) and (not tags or test(t in b.tags for t in tags))
        ]
        return sorted(found, key=lambda b: (b.updated_at, b.name), reverse=True)

    def visible(self, project: str | None) -> list[BlockMeta]:
        """Unarchived blocks of the global scope and a project, the project's shadowing
        global ones of the same name; most recently updated first (cached)."""
        version = self.version  # read first: a change while sorting expires the result
        cached = self._ordered.get(project)
        if cached is not None and cached[0] == version:
            return cached[1]
        merged: dict[str, BlockMeta] = {}
        for (scope, name), block in self.snapshot().items():
            if block.archived:
                continue
            if (scope == "global" and name not in merged) or scope == project:
                merged[name] = block
        ordered = sorted(merged.values(), key=lambda b: (b.updated_at, b.name), reverse=True)
        self._ordered[project] = (version, ordered)
        return ordered

    # -- recalls -----------------------------------------------------------------------

    def recalled(self, scope: str, name: str, ts: str) -> None:
        count, _ = self._recalls.get((scope, name), (0, ""))
        self._recalls[(scope, name)] = (count + 1, ts)

    def usage(self, block: BlockMeta) -> dict[str, Any]:
        count, last = self._recalls.get((block.scope, block.name), (0, ""))
        return {"recall_count": count, "last_recalled_at": last or None}
