"""What a write puts in a memory file: core memory and its notes, blocks, duplicate
merges and frontmatter patches.

Each builds the new bytes from the file as the store knows it (settled first) and hands
them to the one write (``_replace_file``), which scans them for secrets before anything
is written. Content whose normalized body equals a live block's in the scope is merged
into that block (importance raised, tags and provenance joined), never written twice; a
patch changes frontmatter keys only, every other byte staying as it was; a note already
in ``ASTER.md`` (normalized) is not added again.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ...errors import BlockNotFound, Invalid, NameTaken, PreconditionFailed
from ...schemas.memory import NOTE_MAX
from .. import frontmatter
from ..conditions import TagCondition
from ..secrets import refuse_secrets
from ..transcripts import format_ts
from .base import StoreBase
from .hygiene import check_relation_names
from .meta import BlockMeta, as_float, as_list, written_fields
from .names import CORE, SCHEMA, check_name, etag_of, normalized
from .writes import _again, _check_etag


class ContentPart(StoreBase):
    """Core memory and notes, blocks, duplicate merges, frontmatter patches."""

    def write_core(self, scope: str, text: str, **options: Any) -> dict[str, Any]:
        """Replace ``ASTER.md`` of a scope; 412 when ``if_match`` is stale."""
        return _again(self._write_core, scope, text, **options)

    def _write_core(
        self,
        scope: str,
        text: str,
        *,
        if_match: TagCondition = None,
        actor: str = "api",
        session: str | None = None,
        op: str = "memory.edit",
    ) -> dict[str, Any]:
        path = self.folder(scope) / CORE
        self._settle(path)
        _, current = self.read_core(scope)
        _check_etag(f"{CORE} of {scope}", if_match, current)
        data = text.encode("utf-8")
        self._replace_file(path, data, op, scope=scope, name=CORE, actor=actor, session=session)
        return {"scope": scope, "etag": etag_of(data), "bytes": len(data)}

    def add_note(self, scope: str, note: str, **options: Any) -> dict[str, Any]:
        """Append a bullet to ``ASTER.md``, unless the same note (normalized) is there; a
        hand edit made meanwhile is kept and the note added to it."""
        return _again(self._add_note, scope, note, **options)

    def _add_note(
        self, scope: str, note: str, *, actor: str = "api", session: str | None = None
    ) -> dict[str, Any]:
        note = " ".join(note.split())
        if not note:
            raise Invalid("the note is empty")
        if len(note) > NOTE_MAX:  # every path adds notes here: the one limit for ASTER.md
            raise Invalid(
                f"note: a note without a title is at most {NOTE_MAX} characters (this one is "
                f"{len(note)}); give it a title to keep it as a block"
            )
        refuse_secrets({"note": note})
        self._settle(self.folder(scope) / CORE)
        text, etag = self.read_core(scope)
        wanted = normalized(note)
        for line in text.splitlines():
            if normalized(line.lstrip("-* ")) == wanted:
                return {"scope": scope, "etag": etag, "duplicate": True}
        if text and not text.endswith("\n"):
            text += "\n"
        result = self._write_core(
            scope, text + f"- {note}\n", actor=actor, session=session, op="memory.write"
        )
        return result | {"duplicate": False}

    def write_block(self, scope: str, name: str, **options: Any) -> tuple[BlockMeta, bool]:
        """Create or replace a block; returns it and whether it was a duplicate merge
        (``_write_block``)."""
        return _again(self._write_block, scope, name, **options)

    def _write_block(
        self,
        scope: str,
        name: str,
        *,
        body: str,
        meta: dict[str, Any],
        replace: bool = False,
        if_match: TagCondition = None,
        actor: str = "api",
        session: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> tuple[BlockMeta, bool]:
        """Create or replace a block; returns it and whether it was a duplicate merge
        (``detail``: why, for the journal, when it is written).

        Content whose normalized body equals an existing block's in the scope returns that
        block, with importance raised and tags and provenance merged (no duplicate).
        A different body under an existing name is 409 unless ``replace``.
        """
        check_name(name)
        check_relation_names(name, meta)
        refuse_secrets({"content": body, **meta, "session_id": session})
        path = self.path(scope, name)
        self._settle(path)
        existing = self.blocks.get((scope, name))
        if if_match is not None:
            if existing is None or existing.archived:
                raise PreconditionFailed(f"block {name!r} does not exist")
            _check_etag(f"block {name!r}", if_match, existing.etag)
        norm = hashlib.sha256(normalized(body).encode()).hexdigest()
        twin = self._by_norm.get((scope, norm))
        if twin is not None and twin != name and normalized(body):
            other = self.blocks.get((scope, twin))
            if other is not None and not other.archived and other.norm == norm:
                return self._merge(other, meta, actor=actor, session=session, detail=detail), True
        if existing is not None and existing.archived:
            raise NameTaken(
                f"an archived block is named {name!r}; restore it or choose another name"
            )
        if existing is not None and not replace and if_match is None:
            if existing.norm == norm and normalized(body):
                return self._merge(
                    existing, meta, actor=actor, session=session, detail=detail
                ), True
            raise NameTaken(
                f"a different block is already named {name!r}; pass replace=true to replace it"
            )
        now = format_ts(self.clock())
        fields: dict[str, Any] = {
            "name": name,
            **written_fields(meta, body),
        }
        for key, value in meta.items():
            if (
                key not in fields
                and key not in ("created_at", "updated_at", "schema")
                and value is not None
            ):
                fields[key] = value
        fields["created_at"] = (
            existing.created_at if existing is not None and existing.created_at else now
        )
        fields["updated_at"] = now
        fields["schema"] = SCHEMA
        self.check_relations(scope, name, fields)
        doc = frontmatter.new_document(fields, body)
        data = doc.render().encode("utf-8")
        op = "memory.write" if existing is None else "memory.edit"
        self._replace_file(
            path, data, op, scope=scope, name=name, actor=actor, session=session, detail=detail
        )
        block = self._index(scope, name, False, data, doc)
        self.relate(scope, name, fields, actor=actor, session=session)
        return block, False

    def holds(self, scope: str, body: str, meta: dict[str, Any]) -> bool:
        """Whether a live block of ``scope`` already has this body (normalized) from this
        provenance (``source_session`` and ``source_seq`` of ``meta``), written or merged."""
        norm = hashlib.sha256(normalized(body).encode()).hexdigest()
        name = self._by_norm.get((scope, norm))
        if name is None:
            return False
        try:
            found = frontmatter.parse(self.read_block(scope, name)[0]).meta
        except (BlockNotFound, Invalid):
            return False
        same = all(found.get(k) == meta.get(k) for k in ("source_session", "source_seq"))
        return same or source_of(meta) in as_list(found.get("sources"))

    def _merge(
        self,
        block: BlockMeta,
        meta: dict[str, Any],
        *,
        actor: str,
        session: str | None,
        detail: dict[str, Any] | None = None,
    ) -> BlockMeta:
        changes: dict[str, Any] = {
            "importance": round(
                min(1.0, max(block.importance, as_float(meta.get("importance"), 0.5)) + 0.1), 3
            ),
            "tags": block.tags + [t for t in as_list(meta.get("tags")) if t not in block.tags],
            "updated_at": format_ts(self.clock()),
            "absorbed": block.absorbed + 1,  # a duplicate merged in: protected from pruning
        }
        if meta.get("source_session"):
            text, _ = self.read_block(block.scope, block.name)
            sources = as_list(frontmatter.parse(text).meta.get("sources"))
            source = source_of(meta)
            if source not in sources:
                changes["sources"] = [*sources, source]
        return self.patch_block(
            block.scope,
            block.name,
            changes,
            actor=actor,
            session=session,
            op="memory.merge",
            detail=detail,
        )

    def patch_block(
        self, scope: str, name: str, changes: dict[str, Any], **options: Any
    ) -> BlockMeta:
        """Change frontmatter keys only (``_patch_block``); a hand edit made meanwhile is
        kept and the keys set on it."""
        return _again(self._patch_block, scope, name, changes, **options)

    def _patch_block(
        self,
        scope: str,
        name: str,
        changes: dict[str, Any],
        *,
        if_match: TagCondition = None,
        actor: str = "api",
        session: str | None = None,
        op: str = "memory.edit",
        detail: dict[str, Any] | None = None,
    ) -> BlockMeta:
        """Change frontmatter keys (and the body, given as ``body``); every other byte of
        the file stays as it was."""
        refuse_secrets(changes)
        self._settle(self.path(scope, name))
        text, block = self.read_block(scope, name)
        _check_etag(f"block {name!r}", if_match, block.etag)
        doc = frontmatter.parse(text)
        if doc.meta_text is None:
            doc = frontmatter.Document("", {}, doc.body)
        keys = sorted(changes)
        if "body" in changes:
            changes = dict(changes)
            body = changes.pop("body")
            doc = frontmatter.Document(
                doc.meta_text, doc.meta, body if body.endswith("\n") else body + "\n"
            )
        if "updated_at" not in changes:
            changes = {**changes, "updated_at": format_ts(self.clock())}
        doc = frontmatter.set_keys(doc, changes)
        data = doc.render().encode("utf-8")
        path = self.path(scope, name)
        self._replace_file(
            path,
            data,
            op,
            scope=scope,
            name=name,
            actor=actor,
            session=session,
            detail={"keys": keys, **(detail or {})},
        )
        block = self._index(scope, name, False, data, doc)
        return block


def source_of(meta: dict[str, Any]) -> str:
    """A block's provenance as a merge lists it under ``sources``: session and seq range."""
    return f"{meta['source_session']}:{meta.get('source_seq', '')}".rstrip(":")
