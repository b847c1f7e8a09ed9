"""``MemoryStore``: core memory and blocks of every scope, over three objects it holds.

``BlockIndex`` knows every block without reading a file; ``MemoryFiles`` writes, moves
and reconciles the files, each change journaled; ``Reverter`` puts a journaled change
back. The store builds what a write puts in a file from the file as it knows it (settled
first) and hands it to the one write, which scans it for secrets before anything is
written. Content whose normalized body equals a live block's in the scope is merged into
that block (importance raised, tags and provenance joined), never written twice; a patch
changes frontmatter keys only, every other byte staying as it was; a note already in
``ASTER.md`` (normalized) is not added again. A write a hand edit overtook is built
again on it (``retried``). Mutations run on the writer thread.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...errors import BlockNotFound, Invalid, NameTaken, PreconditionFailed, UnsafePath
from ...schemas import frontmatter
from ...schemas.clock import Clock, format_ts
from ...schemas.conditions import TagCondition
from ...schemas.memory import NOTE_MAX
from ...schemas.names import check_name
from ...secrets import found_in, refuse_document, refuse_secrets
from .. import fs
from ..home import Home
from ..journal import Journal
from .attempts import check_etag, retried
from .blocks import BlockIndex, block_of, body_hash
from .catchup import Catchup
from .context import render_context
from .documents import search_document
from .files import MemoryFiles
from .hygiene import check_relation_names, stale
from .meta import BlockMeta, as_list, merged, new_fields, patched, source_of
from .names import CORE, etag_of, normalized
from .revert import Reverter
from .sharing import Sharing
from .versions import Versions


class MemoryStore:
    """Core memory and blocks of every scope."""

    def __init__(self, home: Home, journal: Journal, *, clock: Clock) -> None:
        self.journal = journal
        self.clock = clock
        self._index = BlockIndex()
        self._files = MemoryFiles(home, journal, self._index)
        self._reverter = Reverter(self._files, self._index)
        self.versions = Versions(self._files, self._index)  # what a team reads and puts
        self.root = self._files.root
        # what the objects it holds answer for it
        self.scope_for = self._files.scope_for
        self.folder = self._files.folder
        self.path = self._files.path
        self.where = self._files.where  # (scope, name, real path) of a live file
        self.known_files = self._files.known_files  # as last written or seen, under a folder
        self.reconcile = self._files.reconcile  # journal and index what changed by hand
        self.block = self._index.get  # a block as the index knows it (no file read), or None
        self.count = self._index.__len__  # blocks, archived ones included
        self.scopes = self._index.scopes
        self.list_blocks = self._index.listing
        self.visible = self._index.visible
        self.usage = self._index.usage
        self.revert = self._reverter.revert  # journaled itself, so a revert can be reverted

    def share_with(self, sharing: Sharing) -> None:
        self._files.share = sharing

    # -- loading and reading -----------------------------------------------------------

    def catch_up(self) -> list[dict[str, Any]]:
        """Journal every memory file the journal does not describe as it is (changed
        while the daemon was stopped, or by a change a kill cut short before its journal
        line); at start, before ``load``. The entries written."""
        return Catchup(self._files, self.journal).run()

    def load(self) -> None:
        """Read every block's frontmatter once, and recall counts from the journal."""
        self._index.clear()
        for entry in self.journal.of_op("memory.recall"):
            if entry.get("name"):
                self._index.recalled(str(entry["scope"]), str(entry["name"]), entry.get("ts") or "")
        for scope, name, archived, data in self._files.blocks_on_disk():
            self._index.put(block_of(scope, name, archived, data))

    def read_core(self, scope: str, *, strict: bool = True) -> tuple[str, str]:
        """``ASTER.md`` of a scope and its ETag; a link there is refused, or with
        ``strict`` False (the prompt context, the search index) read as empty."""
        path = self.folder(scope) / CORE
        try:
            data = fs.read_or_none(path) or b""
        except UnsafePath:
            if strict:
                raise
            data = b""
        return data.decode("utf-8", "replace"), etag_of(data)

    def read_block(self, scope: str, name: str, *, archived: bool = False) -> tuple[str, BlockMeta]:
        block = self._index.get(scope, check_name(name))
        if block is None or block.archived != archived:
            where = "archived " if archived else ""
            raise BlockNotFound(f"no {where}memory block {name!r} in {scope}")
        try:
            data = fs.read_bytes(self.path(scope, name, archived=archived))
        except (FileNotFoundError, NotADirectoryError):  # removed by hand: the watcher journals it
            raise BlockNotFound(f"no memory block {name!r} in {scope}") from None
        etag = etag_of(data)
        if etag != block.etag:  # edited by hand since it was indexed: answer with what is read
            block = replace(block, etag=etag, bytes=len(data), secrets=found_in(data))
        return data.decode("utf-8", "replace"), block

    def render_context(
        self, project: str | None, relevant: list[str] | None = None
    ) -> dict[str, Any]:
        """The prompt context of a project (or of global memory): see ``render_context``."""
        global_core, _ = self.read_core("global", strict=False)
        project_core = self.read_core(project, strict=False)[0] if project else ""
        return render_context(project, (global_core, project_core), self.visible(project), relevant)

    # -- recalls -----------------------------------------------------------------------

    def recall(
        self, scope: str, name: str, *, actor: str = "api", session: str | None = None
    ) -> tuple[str, BlockMeta]:
        """A block's text, journaled as a recall (not synced: a lost recall changes no
        content)."""
        found = self.try_recall(scope, name, actor=actor, session=session, blocking=True)
        assert found is not None
        return found

    def try_recall(
        self,
        scope: str,
        name: str,
        *,
        actor: str = "api",
        session: str | None = None,
        blocking: bool = False,
    ) -> tuple[str, BlockMeta] | None:
        """``recall``; without ``blocking``, None when the journal is busy on another thread."""
        refuse_secrets({"session_id": session})  # the journal keeps it
        text, block = self.read_block(scope, name)
        entry = self.journal.try_record(
            "memory.recall",
            scope=scope,
            name=name,
            actor=actor,
            session=session,
            sync=False,
            blocking=blocking,
        )
        if entry is None:
            return None
        self._index.recalled(scope, name, entry["ts"])
        return text, block

    # -- what the search index holds ---------------------------------------------------

    def index_etags(self) -> dict[tuple[str, str], str]:
        """Every live memory file the search index should hold, with its ETag."""
        blocks = self._index.snapshot()
        out = {key: b.etag for key, b in blocks.items() if not b.archived and not b.secrets}
        scopes = {"global"} | {scope for scope, _ in blocks} | set(self._files.project_scopes())
        for scope in scopes:
            text, etag = self.read_core(scope, strict=False)
            if text and not found_in(text):
                out[(scope, CORE)] = etag
        return out

    def index_doc(self, scope: str, name: str) -> dict[str, Any] | None:
        """The search document of a block or of ``ASTER.md`` as it is on disk now."""
        try:
            path = self.folder(scope) / CORE if name == CORE else self.path(scope, name)
            data = fs.read_bytes(path)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError, Invalid, UnsafePath):
            return None  # a link is reported once and left out of search
        return search_document(scope, name, data)

    # -- core memory -------------------------------------------------------------------

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
        """Replace ``ASTER.md`` of a scope; 412 when ``if_match`` is stale."""
        path = self.folder(scope) / CORE
        self._files.settle(path)
        _, current = self.read_core(scope)
        check_etag(f"{CORE} of {scope}", if_match, current)
        data = text.encode("utf-8")
        self._files.replace(path, data, op, scope=scope, name=CORE, actor=actor, session=session)
        return {"scope": scope, "etag": etag_of(data), "bytes": len(data)}

    write_core = retried(_write_core)

    @retried
    def add_note(
        self, scope: str, note: str, *, actor: str = "api", session: str | None = None
    ) -> dict[str, Any]:
        """Append a bullet to ``ASTER.md``, unless the same note (normalized) is there; a
        hand edit made meanwhile is kept and the note added to it."""
        note = " ".join(note.split())
        if not note:
            raise Invalid("the note is empty")
        if len(note) > NOTE_MAX:  # every path adds notes here: the one limit for ASTER.md
            raise Invalid(
                f"note: a note without a title is at most {NOTE_MAX} characters (this one is "
                f"{len(note)}); give it a title to keep it as a block"
            )
        refuse_secrets({"note": note})
        self._files.settle(self.folder(scope) / CORE)
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

    # -- blocks ------------------------------------------------------------------------

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
        self._files.settle(path)
        existing = self._index.get(scope, name)
        if if_match is not None:
            if existing is None or existing.archived:
                raise PreconditionFailed(f"block {name!r} does not exist")
            check_etag(f"block {name!r}", if_match, existing.etag)
        norm = body_hash(body)
        twin = self._index.with_body(scope, norm)
        if twin is not None and twin != name and normalized(body):
            other = self._index.get(scope, twin)
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
        created = existing.created_at if existing is not None else ""
        fields = new_fields(name, body, meta, created_at=created, now=now)
        self.check_relations(scope, name, fields)
        doc = frontmatter.new_document(fields, body)
        data = doc.render().encode("utf-8")
        op = "memory.write" if existing is None else "memory.edit"
        self._files.replace(
            path, data, op, scope=scope, name=name, actor=actor, session=session, detail=detail
        )
        block = self._index.put(block_of(scope, name, False, data, doc))
        self.relate(scope, name, fields, actor=actor, session=session)
        return block, False

    write_block = retried(_write_block)

    def holds(self, scope: str, body: str, meta: dict[str, Any]) -> bool:
        """Whether a live block of ``scope`` already has this body (normalized) from this
        provenance (``source_session`` and ``source_seq`` of ``meta``), written or merged."""
        name = self._index.with_body(scope, body_hash(body))
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
        sources: list[str] = []
        if meta.get("source_session"):
            text, _ = self.read_block(block.scope, block.name)
            sources = as_list(frontmatter.parse(text).meta.get("sources"))
        changes = merged(block, meta, sources, format_ts(self.clock()))
        return self.patch_block(
            block.scope,
            block.name,
            changes,
            actor=actor,
            session=session,
            op="memory.merge",
            detail=detail,
        )

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
        self._files.settle(self.path(scope, name))
        text, block = self.read_block(scope, name)
        check_etag(f"block {name!r}", if_match, block.etag)
        doc = patched(text, changes, format_ts(self.clock()))
        data = doc.render().encode("utf-8")
        path = self.path(scope, name)
        self._files.replace(
            path,
            data,
            op,
            scope=scope,
            name=name,
            actor=actor,
            session=session,
            detail={"keys": sorted(changes), **(detail or {})},
        )
        block = self._index.put(block_of(scope, name, False, data, doc))
        return block

    patch_block = retried(_patch_block)

    # -- moves and removals ------------------------------------------------------------

    @retried
    def forget(
        self,
        scope: str,
        name: str,
        *,
        actor: str = "api",
        session: str | None = None,
        if_match: TagCondition = None,
    ) -> None:
        """Delete a block; the journal keeps its content, so it can be reverted."""
        refuse_secrets({"session_id": session})  # the journal keeps it
        path = self.path(scope, name)
        self._files.settle(path)
        _, block = self.read_block(scope, name)
        check_etag(f"block {name!r}", if_match, block.etag)
        self._files.remove(path, scope=scope, name=name, actor=actor, session=session)
        self._index.drop(scope, name)

    @retried
    def move(
        self,
        scope: str,
        name: str,
        *,
        archive: bool,
        actor: str = "api",
        session: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> BlockMeta:
        """Archive a block (it leaves listings and the context) or restore it
        (``detail``: why, for the journal: a reason and what triggered it)."""
        refuse_secrets({"session_id": session, **(detail or {})})  # the journal keeps it
        self._files.settle(self.path(scope, name))
        self.read_block(scope, name, archived=not archive)
        data = self._files.archive(
            scope, name, archive=archive, actor=actor, session=session, detail=detail
        )
        return self._index.put(block_of(scope, name, archive, data))

    # -- relations, procedures, pruning ----------------------------------------------

    def relate(
        self, scope: str, name: str, meta: dict[str, Any], *, actor: str, session: str | None
    ) -> None:
        """Apply a new block's relations: archive what it supersedes, mark conflicts on both."""
        for other in as_list(meta.get("supersedes")):
            block = self._index.get(scope, other)
            if other != name and block is not None and not block.archived:
                why = {"reason": f"superseded by {name}", "trigger": f"{name} written by {actor}"}
                self.move(scope, other, archive=True, actor=actor, session=session, detail=why)
        for other in as_list(meta.get("conflicts_with")):
            block = self._index.get(scope, other)
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
                block = self._index.get(scope, other)
                if block is None:
                    raise BlockNotFound(f"{key} names {other!r}, which is not a block in {scope}")
                if key == "conflicts_with" and not block.archived:
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
        while self._index.get(scope, name) is not None:
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
        archived, kept = stale(
            self.list_blocks(scope),
            self._index.usage,
            now=self.clock().timestamp(),
            max_age_days=max_age_days,
            max_importance=max_importance,
        )
        if not dry_run:
            for item in archived:
                why = {"reason": item["reason"], "trigger": trigger}
                self.move(scope, item["name"], archive=True, actor=actor, detail=why)
        return {"scope": scope, "dry_run": dry_run, "archived": archived, "protected": kept}
