"""Memory: ``ASTER.md`` core memory and named markdown blocks, per scope.

A scope is ``global`` (``memory/``) or ``project:<slug>`` (``memory/projects/<slug>/``).
Every write is atomic (temp file beside it, fsync, rename, fsync the folder) and
journaled with the file's previous state, so any change can be reverted byte for byte.
A block's metadata is kept in memory (``BlockMeta``), so listing and the prompt context
never read block files per request. Mutations run on the writer thread.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import math
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from ..errors import (
    BlockNotFound,
    Conflict,
    InsufficientStorage,
    Invalid,
    InvalidName,
    NameTaken,
    PreconditionFailed,
    StorageFailed,
    UnsafePath,
)
from ..schemas.memory import NOTE_MAX
from . import frontmatter, fs
from .home import (
    SLUG_RE,
    Home,
    check_slug,
    ensure_dir,
    fsync_dir,
    normalize_repo_root,
    project_slug,
)
from .journal import Journal
from .jsonl import TEMP_MARK
from .secrets import (
    flagged,
    found_in,
    refuse_document,
    refuse_journaled,
    refuse_secrets,
    withheld,
    withheld_core,
)
from .transcripts import Clock, format_ts

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_T = TypeVar("_T")
CORE = "ASTER.md"
ARCHIVE = ".archive"
SCHEMA = "aster.memory.v1"


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise InvalidName(
            "a block name is 1 to 64 characters of a-z, 0-9 and '-', starting with a letter or digit"
        )
    return name


def slugify(title: str) -> str:
    """A block name from a title: 'API conventions!' -> 'api-conventions'."""
    refuse_secrets({"title": title})  # a name is kept: a secret must not become one
    text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode().lower()
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")[:64].strip("-")
    if not slug:
        raise InvalidName(f"the title {title[:60]!r} gives no usable block name")
    return slug


def normalized(text: str) -> str:
    """Text folded for duplicate detection: case, whitespace and punctuation."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"[^\w\s]", " ", text)
    return " ".join(text.split())


def etag_of(data: bytes) -> str:
    return '"' + hashlib.sha256(data).hexdigest() + '"'


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

    def public(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "norm"}
        return out


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)]


def _as_float(value: Any, default: float) -> float:
    """A number from frontmatter; ``default`` for anything else, NaN and infinities too."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if math.isfinite(number) else default


class MemoryStore:
    def __init__(self, home: Home, journal: Journal, *, clock: Clock) -> None:
        self.home = home
        self.root = home.root / "memory"
        self.journal = journal
        self.clock = clock
        self.blocks: dict[tuple[str, str], BlockMeta] = {}
        self.recalls: dict[tuple[str, str], tuple[int, str]] = {}  # derived from the journal
        self.version = 0  # bumped on every change, so cached context orderings expire
        self._ordered: dict[str | None, tuple[int, list[BlockMeta]]] = {}
        self._by_norm: dict[tuple[str, str], str] = {}  # normalized body -> block name
        # The bytes of every live memory file as this store last wrote or saw them, so a
        # change on disk that did not come from here (a hand edit) can be told apart and
        # journaled with the content it replaced.
        self._known: dict[str, bytes] = {}

    # -- scopes and paths --------------------------------------------------------

    def scope_for(self, repo_root: str | None) -> str:
        if repo_root is None or repo_root == "":
            return "global"
        return "project:" + project_slug(normalize_repo_root(repo_root))

    def folder(self, scope: str) -> Path:
        if scope == "global":
            return self.root
        if scope.startswith("project:"):
            return self.root / "projects" / check_slug(scope[8:])
        raise InvalidName(f"not a memory scope: {scope[:80]!r}")

    def path(self, scope: str, name: str, *, archived: bool = False) -> Path:
        folder = self.folder(scope)
        if archived:
            folder = folder / ARCHIVE
        return folder / f"{check_name(name)}.md"

    def _rel(self, path: Path) -> str:
        return str(path.relative_to(self.home.root))

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
                    if file_name != CORE and not NAME_RE.match(name):
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
            return [f"project:{n}" for n in fs.names(projects, folders=True) if SLUG_RE.match(n)]
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
            description=" ".join(str(meta.get("description") or "").split()) or _first_line(body),
            type=str(meta.get("type") or "semantic"),
            tags=_as_list(meta.get("tags")),
            importance=_as_float(meta.get("importance"), 0.5),
            confidence=_as_float(meta.get("confidence"), 0.5),
            pinned=bool(meta.get("pinned", False)),
            created_at=str(meta.get("created_at") or ""),
            updated_at=str(meta.get("updated_at") or meta.get("created_at") or ""),
            supersedes=_as_list(meta.get("supersedes")),
            conflicts_with=_as_list(meta.get("conflicts_with")),
            etag=etag_of(data),
            bytes=len(data),
            norm=hashlib.sha256(normalized(body).encode()).hexdigest(),
            secrets=found_in(data),
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
        type: str | None = None,
        include_archived: bool = False,
    ) -> list[BlockMeta]:
        out = [
            b
            for (s, _), b in self.blocks.copy().items()  # the writer thread changes it
            if s == scope
            and (include_archived or not b.archived)
            and (type is None or b.type == type)
            and all(t in b.tags for t in tags or [])
        ]
        return sorted(out, key=lambda b: (b.updated_at, b.name), reverse=True)

    # -- writing ----------------------------------------------------------------

    def _state(self, path: Path) -> dict[str, Any] | None:
        data = fs.read_or_none(path)
        return None if data is None else self._content_state(path, data)

    def _content_state(self, path: Path, data: bytes) -> dict[str, Any]:
        """A file's path and bytes as the journal keeps them: text when they are UTF-8,
        base64 when they are not (a file saved in another encoding), so a revert can
        write them back exactly either way. Content that holds a secret is withheld."""
        hidden = withheld(self._rel(path), data)
        if hidden is not None:
            return hidden
        try:
            return {"path": self._rel(path), "content": data.decode("utf-8")}
        except UnicodeDecodeError:
            return {"path": self._rel(path), "content_base64": base64.b64encode(data).decode()}

    def _after(self, path: Path, data: bytes) -> dict[str, Any]:
        return {
            "path": self._rel(path),
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
        }

    def _settle(self, path: Path) -> None:
        """Journal a hand edit of the live file ``path`` that the watcher has not reached
        yet, so a write never checks an ETag against, or keeps as the content it replaced,
        an outdated picture of the file (writer thread)."""
        if fs.read_or_none(path) != self._known.get(_key(path)):
            self.reconcile([path])

    def _write(self, path: Path, data: bytes) -> None:
        with _disk(f"could not write {self._rel(path)}"):
            fs.atomic_write(path, data)  # missing folders are made, each synced
        self._known[_key(path)] = data

    def _unlink(self, path: Path) -> None:
        fs.unlink(path)
        self._known.pop(_key(path), None)

    def _replace_file(
        self,
        path: Path,
        data: bytes,
        op: str,
        *,
        scope: str,
        name: str,
        actor: str,
        session: str | None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        """Replace ``path`` with ``data`` and journal it with the bytes it replaced.

        The caller built ``data`` from the file as this store knows it (it settled it
        first). The new bytes are written and synced beside the file, then swapped in
        with one ``renameat2(RENAME_EXCHANGE)``, so the bytes replaced are exactly the
        ones now beside it. When they are not the ones the write was built from (an
        editor saved in between), the swap is undone, the edit is journaled as a hand
        edit and ``_Changed`` is raised, for the caller to build again on what is there
        now (or answer 412 to an ``If-Match``). When the journal line cannot be written,
        the swap is undone too: nothing is on disk that is not in the journal, and a
        full disk is 507 with the file as it was. Bytes or a session that hold a secret
        are refused (422) before anything is written."""
        key = _key(path)
        known = self._known.get(key)
        refuse_document(data, name if name == CORE else f"block {name!r}", before=known)
        refuse_secrets({"session_id": session})
        before = None if known is None else self._content_state(path, known)
        with _disk(f"could not write {self._rel(path)}"):
            tmp = fs.write_temp(path, data)
        try:
            replaced = self._swap_in(tmp, path, known)
            if replaced != known:
                self._swap_back(tmp, path, data, replaced)
                self.reconcile([path])
                raise _Changed
            with _disk(f"could not journal the change of {self._rel(path)}"):
                try:
                    fsync_dir(path.parent)
                    self.journal.record(
                        op,
                        scope=scope,
                        name=name,
                        actor=actor,
                        session=session,
                        before=before,
                        after=self._after(path, data),
                        detail=detail,
                    )
                except BaseException:
                    self._swap_back(tmp, path, data, replaced)
                    raise
            self._known[key] = data
        finally:
            self._discard(tmp, path, (data, known))

    def _discard(self, tmp: str, path: Path, journaled: tuple[bytes | None, ...]) -> None:
        """Remove ``tmp``; bytes in it that are neither ours nor already journaled (an
        editor saved into the file as it was being swapped) are journaled first."""
        try:
            data = fs.read_or_none(tmp)
            if data is not None and data not in journaled:
                scope_name = self.where(path, Path(_key(self.root)))
                current = fs.read_or_none(path)
                self.journal.record(
                    "memory.edit",
                    scope=scope_name[0] if scope_name else "global",
                    name=scope_name[1] if scope_name else path.name,
                    actor="watcher",
                    before=self._content_state(path, data),
                    after=None if current is None else self._after(path, current),
                    detail={"by": "hand", "saved": "while a write replaced the file"}
                    | flagged(data),
                )
        finally:
            fs.unlink(tmp)

    def _swap_in(self, tmp: str, path: Path, known: bytes | None) -> bytes | None:
        """Put ``tmp`` at ``path``; return what was there (``tmp`` holds it now, unless
        nothing was). A file made at ``path`` since it was read counts as replaced."""
        if known is None:
            try:
                fs.link(tmp, path)  # never over a file made in the meantime
                return None
            except FileExistsError:
                return fs.read_or_none(path)
        try:
            if fs.exchange(tmp, path):
                return fs.read_or_none(tmp)
        except FileNotFoundError:  # removed by hand since it was read
            return self._swap_in(tmp, path, None)
        current = fs.read_or_none(path)  # no exchange here: compare, then rename
        if current == known:
            fs.replace(tmp, path)
        return current

    def _swap_back(self, tmp: str, path: Path, data: bytes, replaced: bytes | None) -> None:
        """Undo ``_swap_in``: ``path`` holds ``replaced`` again (or is gone, when it did not
        exist), unless the swap never happened."""
        if fs.read_or_none(path) != data:
            return  # never swapped in (or replaced again since): nothing of ours to undo
        with _disk(f"could not put {self._rel(path)} back"):
            if replaced is None:
                fs.unlink(path)
            elif not fs.exchange(tmp, path):
                fs.atomic_write(path, replaced)

    def write_core(self, scope: str, text: str, **options: Any) -> dict[str, Any]:
        """Replace ``ASTER.md`` of a scope; 412 when ``if_match`` is stale."""
        return _again(self._write_core, scope, text, **options)

    def _write_core(
        self,
        scope: str,
        text: str,
        *,
        if_match: str | None = None,
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
        if_match: str | None = None,
        actor: str = "api",
        session: str | None = None,
    ) -> tuple[BlockMeta, bool]:
        """Create or replace a block; returns it and whether it was a duplicate merge.

        Content whose normalized body equals an existing block's in the scope returns that
        block, with importance raised and tags and provenance merged (no duplicate).
        A different body under an existing name is 409 unless ``replace``.
        """
        check_name(name)
        refuse_secrets({"content": body, **meta, "session_id": session})
        path = self.path(scope, name)
        self._settle(path)
        existing = self.blocks.get((scope, name))
        if if_match is not None:
            if existing is None or existing.archived:
                raise PreconditionFailed(f"block {name!r} does not exist", headers={"ETag": '""'})
            _check_etag(f"block {name!r}", if_match, existing.etag)
        norm = hashlib.sha256(normalized(body).encode()).hexdigest()
        twin = self._by_norm.get((scope, norm))
        if twin is not None and twin != name and normalized(body):
            other = self.blocks.get((scope, twin))
            if other is not None and not other.archived and other.norm == norm:
                return self._merge(other, meta, actor=actor, session=session), True
        if existing is not None and existing.archived:
            raise NameTaken(
                f"an archived block is named {name!r}; restore it or choose another name"
            )
        if existing is not None and not replace and if_match is None:
            if existing.norm == norm and normalized(body):
                return self._merge(existing, meta, actor=actor, session=session), True
            raise NameTaken(
                f"a different block is already named {name!r}; pass replace=true to replace it"
            )
        now = format_ts(self.clock())
        fields: dict[str, Any] = {
            "name": name,
            "description": " ".join(str(meta.get("description") or _first_line(body)).split())[
                :200
            ],
            "type": meta.get("type") or "semantic",
            "tags": _as_list(meta.get("tags")),
            "importance": _as_float(meta.get("importance"), 0.5),
            "confidence": _as_float(meta.get("confidence"), 0.5),
            "pinned": bool(meta.get("pinned", False)),
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
        self._replace_file(path, data, op, scope=scope, name=name, actor=actor, session=session)
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
        return same or source_of(meta) in _as_list(found.get("sources"))

    def write_procedure(
        self, scope: str, base: str, *, body: str, meta: dict[str, Any], session: str | None
    ) -> tuple[BlockMeta, bool]:
        """A procedural record under ``base``, ``base-2``… (never replacing another record)."""
        name, n = base, 1
        while (scope, name) in self.blocks:
            n += 1
            name = f"{base}-{n}"
        return self.write_block(scope, name, body=body, meta=meta, session=session)

    def _merge(
        self, block: BlockMeta, meta: dict[str, Any], *, actor: str, session: str | None
    ) -> BlockMeta:
        changes: dict[str, Any] = {
            "importance": round(
                min(1.0, max(block.importance, _as_float(meta.get("importance"), 0.5)) + 0.1), 3
            ),
            "tags": block.tags + [t for t in _as_list(meta.get("tags")) if t not in block.tags],
            "updated_at": format_ts(self.clock()),
        }
        if meta.get("source_session"):
            text, _ = self.read_block(block.scope, block.name)
            sources = _as_list(frontmatter.parse(text).meta.get("sources"))
            source = source_of(meta)
            if source not in sources:
                changes["sources"] = [*sources, source]
        return self.patch_block(
            block.scope, block.name, changes, actor=actor, session=session, op="memory.merge"
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
        if_match: str | None = None,
        actor: str = "api",
        session: str | None = None,
        op: str = "memory.edit",
    ) -> BlockMeta:
        """Change frontmatter keys only; every other byte of the file stays as it was."""
        refuse_secrets(changes)
        self._settle(self.path(scope, name))
        text, block = self.read_block(scope, name)
        _check_etag(f"block {name!r}", if_match, block.etag)
        doc = frontmatter.parse(text)
        if doc.meta_text is None:
            doc = frontmatter.Document("", {}, doc.body)
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
            detail={"keys": sorted(changes)},
        )
        block = self._index(scope, name, False, data, doc)
        return block

    def forget(self, scope: str, name: str, **options: Any) -> None:
        """Delete a block; the journal keeps its content, so it can be reverted."""
        _again(self._forget, scope, name, **options)

    def _forget(
        self,
        scope: str,
        name: str,
        *,
        actor: str = "api",
        session: str | None = None,
        if_match: str | None = None,
    ) -> None:
        refuse_secrets({"session_id": session})  # the journal keeps it
        self._settle(self.path(scope, name))
        _, block = self.read_block(scope, name)
        _check_etag(f"block {name!r}", if_match, block.etag)
        path = self.path(scope, name)
        aside = path.parent / f"{TEMP_MARK}{path.name}.gone"
        data = self._move_file(path, aside, expected=self._known.get(_key(path)))
        with _disk(f"could not journal the removal of {self._rel(path)}"):
            try:
                self.journal.record(
                    "memory.delete",
                    scope=scope,
                    name=name,
                    actor=actor,
                    session=session,
                    before=self._content_state(path, data),
                    after=None,
                )
            except BaseException:
                self._move_file(aside, path)
                raise
        with contextlib.suppress(OSError):  # journaled: what is left is a temp file
            fs.unlink(aside)
            fsync_dir(path.parent)
        self._known.pop(_key(path), None)
        gone = self.blocks.pop((scope, name))
        if self._by_norm.get((scope, gone.norm)) == name:
            del self._by_norm[(scope, gone.norm)]
        self.version += 1

    def _move_file(self, source: Path, target: Path, *, expected: bytes | None = None) -> bytes:
        """Give ``source`` the name ``target`` (never over a file there) and return its
        bytes; with ``expected``, bytes that differ (a hand edit since the file was read)
        are put back, journaled, and ``_Changed`` raised."""
        with _disk(f"could not move {self._rel(source)}"):
            try:
                fs.link(source, target)
            except FileExistsError:
                raise NameTaken(f"{self._rel(target)} is in the way") from None
            try:
                fs.unlink(source)
                fsync_dir(target.parent)
            except BaseException:  # the file keeps its old name, and only that
                if not fs.exists(source):
                    fs.link(target, source)
                fs.unlink(target)
                raise
        data = fs.read_bytes(target)
        if expected is not None and data != expected:
            self._move_file(target, source)
            self.reconcile([source])
            raise _Changed
        return data

    def move(self, scope: str, name: str, **options: Any) -> BlockMeta:
        """Archive a block (it leaves listings and the context) or restore it."""
        return _again(self._move, scope, name, **options)

    def _move(
        self,
        scope: str,
        name: str,
        *,
        archive: bool,
        actor: str = "api",
        session: str | None = None,
    ) -> BlockMeta:
        refuse_secrets({"session_id": session})  # the journal keeps it
        self._settle(self.path(scope, name))
        self.read_block(scope, name, archived=not archive)
        source = self.path(scope, name, archived=not archive)
        target = self.path(scope, name, archived=archive)
        ensure_dir(target.parent)
        data = self._move_file(
            source, target, expected=self._known.get(_key(source)) if archive else None
        )
        with _disk(f"could not journal the move of {self._rel(source)}"):
            try:
                fsync_dir(source.parent)
                self.journal.record(
                    "memory.archive" if archive else "memory.restore",
                    scope=scope,
                    name=name,
                    actor=actor,
                    session=session,
                    before=self._content_state(source, data),
                    after=self._after(target, data),
                )
            except BaseException:
                self._move_file(target, source)
                raise
        self._known.pop(_key(source), None)
        if not archive:
            self._known[_key(target)] = data
        return self._index(scope, name, archive, data)

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

    # -- changes made by hand ---------------------------------------------------------

    def where(self, path: Path, root: Path) -> tuple[str, str, str] | None:
        """The (scope, name, real path) of a live memory file, given the real path of the
        memory folder; None for anything else."""
        real = _key(path)
        path = Path(real)
        if path.suffix != ".md" or path.name.startswith(TEMP_MARK):
            return None
        if path.parent == root:
            scope = "global"
        elif path.parent.parent == root / "projects" and SLUG_RE.match(path.parent.name):
            scope = f"project:{path.parent.name}"
        else:
            return None  # the archive, or deeper
        name = path.name[:-3]
        if path.name != CORE and not NAME_RE.match(name):
            return None
        return scope, path.name if path.name == CORE else name, real

    def known_files(self, folder: Path) -> list[Path]:
        """The live memory files under ``folder`` as the store last wrote or saw them."""
        prefix = os.path.join(_key(folder), "")
        return [Path(key) for key in self._known.copy() if key.startswith(prefix)]

    def reconcile(self, paths: list[Path], *, actor: str = "watcher") -> list[dict[str, Any]]:
        """Journal what changed on disk without this store knowing (a hand edit, a file
        added or removed by hand), with the content it replaced, and index it; return
        the entries. The store's own writes match what it knows and are left alone."""
        entries = []
        root = Path(_key(self.root))
        for path in sorted(set(paths)):
            found = self.where(path, root)
            if found is None:
                continue
            scope, name, key = found
            path = self.folder(scope) / (CORE if name == CORE else f"{name}.md")
            known = self._known.get(key)
            try:
                data = fs.read_or_none(path)
            except UnsafePath:
                continue  # reported once; left as it is
            if data == known:
                continue
            before = None if known is None else self._content_state(path, known)
            if data is None:
                op = "memory.delete"
                self._known.pop(key, None)
            else:
                op = "memory.write" if known is None else "memory.edit"
                self._known[key] = data
            if name != CORE:
                if data is None:
                    gone = self.blocks.pop((scope, name), None)
                    if gone is not None and self._by_norm.get((scope, gone.norm)) == name:
                        del self._by_norm[(scope, gone.norm)]
                    self.version += 1
                else:
                    self._index(scope, name, False, data)
            entries.append(
                self.journal.record(
                    op,
                    scope=scope,
                    name=name,
                    actor=actor,
                    before=before,
                    after=None if data is None else self._after(path, data),
                    detail={"by": "hand", **flagged(data)},
                )
            )
        return entries

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
        relations = {
            key: _as_list(meta.get(key))
            for key in ("supersedes", "conflicts_with")
            if meta.get(key)
        }
        return doc | {
            "kind": "block",
            "updated_at": str(meta.get("updated_at") or meta.get("created_at") or ""),
            "importance": _as_float(meta.get("importance"), 0.5),
            "description": " ".join(str(meta.get("description") or "").split())
            or _first_line(body),
            "tags": _as_list(meta.get("tags")),
            "body": body,
            "relations": relations,
        }

    # -- the prompt context ---------------------------------------------------------

    def visible(self, project: str | None) -> list[BlockMeta]:
        """Unarchived blocks of the global scope and a project, the project's shadowing
        global ones of the same name; most recently updated first (cached)."""
        version = self.version  # read first: a change while sorting expires the result
        cached = self._ordered.get(project)
        if cached is not None and cached[0] == version:
            return cached[1]
        merged: dict[str, BlockMeta] = {}
        for (scope, name), block in self.blocks.copy().items():
            if block.archived:
                continue
            if (scope == "global" and name not in merged) or scope == project:
                merged[name] = block
        ordered = sorted(merged.values(), key=lambda b: (b.updated_at, b.name), reverse=True)
        self._ordered[project] = (version, ordered)
        return ordered

    def render_context(
        self, project: str | None, relevant: list[str] | None = None
    ) -> dict[str, Any]:
        """The markdown for a system prompt: core memory in full, then an index of blocks,
        most recent first, or with ``relevant`` (block names, best first) those first."""
        global_core, _ = self.read_core("global", strict=False)
        project_core = self.read_core(project, strict=False)[0] if project else ""
        withheld_blocks = [b for b in self.visible(project) if b.secrets]  # until fixed by hand
        blocks = [b for b in self.visible(project) if not b.secrets]
        if relevant is not None:
            rank = {name: n for n, name in enumerate(dict.fromkeys(relevant))}
            first = sorted((b for b in blocks if b.name in rank), key=lambda b: rank[b.name])
            blocks = first + [b for b in blocks if b.name not in rank]
        shown = blocks[:MAX_INDEX_ENTRIES]
        cores = [(global_core, "global"), (project_core, project or "")]
        parts = [withheld_core(text, scope).strip() for text, scope in cores if text.strip()]
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
            "withheld": [
                {"scope": b.scope, "name": b.name, "secrets": b.secrets} for b in withheld_blocks
            ]
            + [
                {"scope": scope, "name": CORE, "secrets": found_in(text)}
                for text, scope in cores
                if text and found_in(text)
            ],
        }

    # -- hygiene: relations, procedures, prune -------------------------------------

    def relate(
        self, scope: str, name: str, meta: dict[str, Any], *, actor: str, session: str | None
    ) -> None:
        """Apply a new block's relations: archive what it supersedes, mark conflicts on both."""
        for other in _as_list(meta.get("supersedes")):
            if (
                other != name
                and (scope, other) in self.blocks
                and not self.blocks[(scope, other)].archived
            ):
                self.move(scope, other, archive=True, actor=actor, session=session)
        for other in _as_list(meta.get("conflicts_with")):
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
        for key in ("supersedes", "conflicts_with"):
            for other in _as_list(meta.get(key)):
                if other == name or (scope, other) not in self.blocks:
                    raise Invalid(f"{key} names {other!r}, which is not a block in {scope}")
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

    def scopes(self) -> list[str]:
        """Every scope that has blocks."""
        return sorted({scope for scope, _ in self.blocks.copy()})

    def prune(
        self,
        scope: str,
        *,
        max_age_days: float,
        max_importance: float,
        dry_run: bool,
        actor: str = "api",
    ) -> dict[str, Any]:
        """Archive stale, unimportant blocks; protected ones are never touched."""
        now = self.clock().timestamp()
        archived, kept = [], []
        for block in self.list_blocks(scope):
            usage = self.usage(block)
            last = max(block.updated_at, usage["last_recalled_at"] or "")
            protected = _protection(block, usage["recall_count"])
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
                self.move(scope, item["name"], archive=True, actor=actor)
        return {"scope": scope, "dry_run": dry_run, "archived": archived, "protected": kept}

    # -- revert -------------------------------------------------------------------

    def revert(self, entry: dict[str, Any], *, actor: str = "api") -> dict[str, Any]:
        """Put the file an entry changed back as it was before; journaled, so revertible."""
        if not str(entry.get("op", "")).startswith("memory.") or entry["op"] == "memory.recall":
            raise Invalid(f"a {entry.get('op')} entry changes no memory file; nothing to revert")
        before, after = entry.get("before"), entry.get("after")
        if isinstance(before, dict):
            refuse_journaled(before)  # content withheld from the journal, or holding a secret
        paths = {state["path"] for state in (before, after) if isinstance(state, dict)}
        targets = [self._inside(p) for p in sorted(paths)]
        current = {self._rel(p): self._state(p) for p in targets}
        held = {self._rel(p): fs.read_or_none(p) for p in targets}  # the state may withhold it
        now_state = next((s for s in current.values() if s is not None), None)
        if isinstance(after, dict) and after["path"] != (before or {}).get("path"):
            if before is not None and current[before["path"]] is not None:
                raise NameTaken(
                    f"{before['path']} exists again; move it away to revert this {entry['op']}"
                )
            self._unlink(self._inside(after["path"]))
        if before is None:
            if isinstance(after, dict):
                self._unlink(self._inside(after["path"]))
            data = None
        else:
            data = _content_bytes(before)
            self._write(self._inside(before["path"]), data)
        for path in targets:
            if fs.is_dir(path.parent):
                fsync_dir(path.parent)
        restored_path = self._inside(before["path"]) if before else None
        with _disk(f"could not journal the revert of {entry['id']}"):
            try:
                recorded = self.journal.record(
                    "memory.revert",
                    scope=entry["scope"],
                    name=entry.get("name"),
                    actor=actor,
                    before=now_state,
                    after=self._after(restored_path, data)
                    if restored_path is not None and data is not None
                    else None,
                    detail={"reverted": entry["id"]},
                )
            except BaseException:
                for rel, old in held.items():  # not journaled: put every file back
                    if old is None:
                        self._unlink(self._inside(rel))
                    else:
                        self._write(self._inside(rel), old)
                self._reindex(targets)
                raise
        self._reindex(targets)
        return recorded

    def _inside(self, rel: str) -> Path:
        """The memory file a journal entry names (relative to the home), refusing any
        that would lead outside memory; the home's own path may pass through a link."""
        parts = [p for p in str(rel).split("/") if p not in ("", ".")]
        if len(parts) < 2 or parts[0] != "memory" or ".." in parts or not rel.endswith(".md"):
            raise Invalid("the journal entry names a file outside memory")
        return self.home.root.joinpath(*parts)

    def _reindex(self, paths: list[Path]) -> None:
        for path in paths:
            archived = path.parent.name == ARCHIVE
            folder = path.parent.parent if archived else path.parent
            scope = "global" if folder == self.root else f"project:{folder.name}"
            name = path.name[:-3]
            if path.name == CORE:
                continue
            data = fs.read_or_none(path)
            if data is not None:
                self._index(scope, name, archived, data)
            elif (scope, name) in self.blocks and self.blocks[(scope, name)].archived == archived:
                gone = self.blocks.pop((scope, name))
                if self._by_norm.get((scope, gone.norm)) == name:
                    del self._by_norm[(scope, gone.norm)]
                self.version += 1


class _Changed(Exception):
    """The file changed by hand between reading it and replacing it (journaled)."""


_ATTEMPTS = 8


def _again(write: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """Run ``write`` until no hand edit lands between its read and its replace; each
    edit that does is journaled first, and the next attempt builds on it (an
    ``If-Match`` is then stale: 412)."""
    with _disk("could not change memory"):
        for _ in range(_ATTEMPTS - 1):
            try:
                return write(*args, **kwargs)
            except _Changed:
                continue
        try:
            return write(*args, **kwargs)
        except _Changed:
            raise Conflict(
                f"the file was edited by hand {_ATTEMPTS} times while this write was made; "
                "every edit is journaled: try again"
            ) from None


@contextlib.contextmanager
def _disk(what: str) -> Iterator[None]:
    """A full disk as 507 and any other I/O error as 500, saying what could not be done."""
    try:
        yield
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise InsufficientStorage(f"{what}: the disk is full") from exc
        raise StorageFailed(f"{what}: {exc.strerror or exc}") from exc


def source_of(meta: dict[str, Any]) -> str:
    """A block's provenance as a merge lists it under ``sources``: session and seq range."""
    return f"{meta['source_session']}:{meta.get('source_seq', '')}".rstrip(":")


def _check_etag(what: str, if_match: str | None, etag: str) -> None:
    """412 with the current ETag when ``if_match`` is given and is not it."""
    if if_match is not None and if_match != etag:
        raise PreconditionFailed(f"{what} changed since you read it", headers={"ETag": etag})


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


def _content_bytes(state: dict[str, Any]) -> bytes:
    if "content_base64" in state:
        return base64.b64decode(state["content_base64"])
    return str(state["content"]).encode("utf-8")


def _key(path: Path) -> str:
    """The name a memory file is known by: its folder's real path, and its own name
    (a link at the name is never followed)."""
    return os.path.join(os.path.realpath(path.parent), path.name)


MAX_INDEX_ENTRIES = 60


def estimate_tokens(text: str) -> int:
    """About four characters a token for English and code: enough to budget a prompt."""
    return (len(text) + 3) // 4


def _protection(block: BlockMeta, recall_count: int) -> str | None:
    if block.pinned:
        return "pinned"
    if recall_count >= 3:
        return f"recalled {recall_count} times"
    if block.supersedes:
        return "consolidated (supersedes others)"
    if block.conflicts_with:
        return "carries a conflict"
    return None


def _epoch(ts: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _first_line(body: str) -> str:
    for line in body.splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text[:200]
    return ""
