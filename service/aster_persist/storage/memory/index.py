"""The block index: loading, indexing, reading, listing and recalls, and the documents
the search index holds.

``load`` reads every block's frontmatter once (and recall counts from the journal);
from then on listings and recalls read the in-memory index, never the block files per
request, and a file read answers with what is on disk when a hand edit got there first.
A link inside memory is reported once and left out; a file holding a secret left by
hand is flagged (``secrets``) and kept out of search.
"""

from __future__ import annotations

import hashlib
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...errors import BlockNotFound, Invalid, UnsafePath
from .. import frontmatter, fs
from ..home import SLUG_RE, ensure_dir
from ..jsonl import TEMP_MARK
from ..secrets import found_in, refuse_secrets
from .base import StoreBase
from .meta import BlockMeta, fields_of
from .names import ARCHIVE, CORE, NAME_RE, _key, check_name, etag_of, normalized


class IndexPart(StoreBase):
    """Loading, indexing, reading and listing blocks; recalls; search documents."""

    # -- loading ----------------------------------------------------------------

    def load(self) -> None:
        """Read every block's frontmatter once, and recall counts from the journal."""
        self.blocks.clear()
        self.recalls.clear()
        self._by_norm.clear()
        for entry in self.journal.entries():
            if entry.get("op") == "memory.recall" and entry.get("name"):
                key = (str(entry["scope"]), str(entry["name"]))
                count, _ = self.recalls.get(key, (0, ""))
                self.recalls[key] = (count + 1, str(entry.get("ts") or ""))
        ensure_dir(self.root)
        for scope in ["global", *self._project_scopes()]:
            for archived in (False, True):
                folder = self.folder(scope) / (ARCHIVE if archived else "")
                for file_name in _md_names(folder):
                    file = folder / file_name
                    name = file_name[:-3]
                    if file_name != CORE and not NAME_RE.fullmatch(name):
                        continue
                    if file_name == CORE and archived:
                        continue
                    try:
                        data = fs.read_bytes(file)
                    except (UnsafePath, FileNotFoundError):
                        continue  # a link is reported once and left out
                    if not archived:
                        self._known[_key(file)] = data
                    if file_name != CORE:
                        self._index(scope, name, archived, data)

    def _project_scopes(self) -> list[str]:
        """The scopes of the project folders under ``memory/projects`` (a link refused)."""
        projects = self.root / "projects"
        try:
            return [
                f"project:{n}" for n in fs.names(projects, folders=True) if SLUG_RE.fullmatch(n)
            ]
        except UnsafePath:
            return []

    def _index(
        self,
        scope: str,
        name: str,
        archived: bool,
        data: bytes,
        doc: frontmatter.Document | None = None,
    ) -> BlockMeta:
        """Index a block file's bytes; ``doc`` is their parsed form when the caller has it."""
        if doc is None:
            try:
                doc = frontmatter.parse(data.decode("utf-8"))
            except (Invalid, UnicodeDecodeError):
                doc = frontmatter.Document(None, {}, data.decode("utf-8", "replace"))
        meta, body = doc.meta, doc.body
        block = BlockMeta(
            scope=scope,
            name=name,
            archived=archived,
            **fields_of(meta, body),
            etag=etag_of(data),
            bytes=len(data),
            norm=hashlib.sha256(normalized(body).encode()).hexdigest(),
            secrets=found_in(data),
            consolidated=meta.get("consolidated") is True,
            absorbed=max(0, meta["absorbed"]) if type(meta.get("absorbed")) is int else 0,
        )
        previous = self.blocks.get((scope, name))
        if previous is not None and self._by_norm.get((scope, previous.norm)) == name:
            del self._by_norm[(scope, previous.norm)]
        self.blocks[(scope, name)] = block
        if not archived:
            self._by_norm.setdefault((scope, block.norm), name)
        self.version += 1
        return block

    # -- reading ----------------------------------------------------------------

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
        block = self.blocks.get((scope, check_name(name)))
        if block is None or block.archived != archived:
            where = "archived " if archived else ""
            raise BlockNotFound(f"no {where}memory block {name!r} in {scope}")
        try:
            data = fs.read_bytes(self.path(scope, name, archived=archived))
        except (
            FileNotFoundError,
            NotADirectoryError,
        ):  # removed by hand; the watcher will journal it
            raise BlockNotFound(f"no memory block {name!r} in {scope}") from None
        etag = etag_of(data)
        if etag != block.etag:  # edited by hand since it was indexed: answer with what is read
            block = replace(block, etag=etag, bytes=len(data), secrets=found_in(data))
        return data.decode("utf-8", "replace"), block

    def list_blocks(
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
        blocks = self.blocks.copy()  # the writer thread changes it
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

    def scopes(self) -> list[str]:
        """Every scope that has blocks."""
        return sorted({scope for scope, _ in self.blocks.copy()})

    # -- recalls ----------------------------------------------------------------------

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
        count, _ = self.recalls.get((scope, name), (0, ""))
        self.recalls[(scope, name)] = (count + 1, entry["ts"])
        return text, block

    def usage(self, block: BlockMeta) -> dict[str, Any]:
        count, last = self.recalls.get((block.scope, block.name), (0, ""))
        return {"recall_count": count, "last_recalled_at": last or None}

    # -- what the search index holds ------------------------------------------------

    def index_etags(self) -> dict[tuple[str, str], str]:
        """Every live memory file the search index should hold, with its ETag."""
        blocks = self.blocks.copy()
        out = {key: b.etag for key, b in blocks.items() if not b.archived and not b.secrets}
        scopes = {"global"} | {scope for scope, _ in blocks} | set(self._project_scopes())
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
        text = data.decode("utf-8", "replace")
        if found_in(data):
            return None  # a secret left by hand stays out of search until it is removed
        doc: dict[str, Any] = {
            "scope": scope,
            "name": name,
            "etag": etag_of(data),
            "relations": {},
        }
        if name == CORE:
            if not text.strip():
                return None
            return doc | {
                "kind": "core",
                "updated_at": "",
                "importance": 1.0,
                "description": "core memory",
                "tags": [],
                "body": text,
            }
        try:
            parsed = frontmatter.parse(text)
            meta, body = parsed.meta, parsed.body
        except Invalid:
            meta, body = {}, text
        fields = fields_of(meta, body)
        related = (
            ("supersedes", fields["supersedes"]),
            ("conflicts_with", fields["conflicts_with"]),
        )
        return doc | {
            "kind": "block",
            "updated_at": fields["updated_at"],
            "importance": fields["importance"],
            "description": fields["description"],
            "tags": fields["tags"],
            "body": body,
            "relations": {key: names for key, names in related if meta.get(key)},
        }


def _md_names(folder: Path) -> list[str]:
    """The markdown files of a memory folder; a link among them is reported, not read."""
    try:
        entries = fs.listdir(folder)
    except UnsafePath:
        return []
    out = []
    for name, mode in entries:
        if not name.endswith(".md") or name.startswith(TEMP_MARK):
            continue
        if stat.S_ISLNK(mode):
            fs.refuse(folder / name)
        elif stat.S_ISREG(mode):
            out.append(name)
    return out
