"""The write path: files swapped in whole, moved, forgotten, and hand edits reconciled.

A replacement is written and synced beside the file, swapped in with one
``renameat2(RENAME_EXCHANGE)`` and journaled with the bytes it replaced; a hand edit
that lands in between is swapped back, journaled (actor watcher) and the write built
again on it (``_again``: an ``If-Match`` is then stale, 412; 8 edits in a row, 409).
When the journal line fails the change is undone, so nothing is on disk that is not in
the journal; a full disk is 507 with the file as it was. Moves (archive, restore,
forget) link to the new name and unlink the old, never over a file. ``reconcile``
journals what changed on disk without the store knowing, with the content it
replaced. Every mutation runs on the writer thread, one at a time.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ...errors import Conflict, NameTaken, PreconditionFailed, UnsafePath
from .. import fs
from ..conditions import TagCondition, holds
from ..home import SLUG_RE, ensure_dir, fsync_dir
from ..jsonl import TEMP_MARK
from ..secrets import flagged, refuse_document, refuse_secrets
from .base import StoreBase, _disk
from .meta import BlockMeta
from .names import CORE, NAME_RE, _key

_T = TypeVar("_T")
log = logging.getLogger("aster_persist")
LATE_WRITES_SECONDS = 0.2  # a replaced file is looked at again this long after its swap


class WritesPart(StoreBase):
    """The swap-in write, moves and removals, and the reconciling of hand edits."""

    # -- the swap-in write -------------------------------------------------------------

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
        replaced = known
        try:
            replaced = self._swap_in(tmp, path, known)
            if replaced != known:
                if replaced is not None:  # kept first: an editor may save over it again
                    self._journal_late(path, replaced, "just before a write replaced it")
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
            self._discard(tmp, path, (data, known, replaced))

    def _discard(self, tmp: str, path: Path, journaled: tuple[bytes | None, ...]) -> None:
        """Remove ``tmp``; bytes in it that are neither ours nor already journaled (an
        editor saved into the file as it was being swapped) are journaled first. A
        writer that opened the file before the swap may still append to it after: the
        removed file is looked at once more a moment later, and what grew is journaled."""
        try:
            fd = fs.open_file(tmp, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            data = _read_all(fd)
            if data not in journaled:
                self._journal_late(path, data, "while a write replaced the file")
            fs.unlink(tmp)
        except BaseException:
            os.close(fd)
            fs.unlink(tmp)
            raise
        if os.fstat(fd).st_nlink:  # still a name of the live file (a new file was linked)
            os.close(fd)
            return
        later = threading.Timer(LATE_WRITES_SECONDS, self._look_again, (fd, data, path))
        later.daemon = True
        later.start()

    def _look_again(self, fd: int, data: bytes, path: Path) -> None:
        """Journal what a writer appended to a replaced file after it was removed."""
        try:
            now = _read_all(fd)
            if now != data:
                self._journal_late(path, now, "into the replaced file, after the swap")
        except Exception:
            log.exception("could not look again at the file %s replaced", self._rel(path))
        finally:
            os.close(fd)

    def _journal_late(self, path: Path, data: bytes, when: str) -> None:
        scope_name = self.where(path, Path(_key(self.root)))
        current = fs.read_or_none(path)
        self.journal.record(
            "memory.edit",
            scope=scope_name[0] if scope_name else "global",
            name=scope_name[1] if scope_name else path.name,
            actor="watcher",
            before=self._content_state(path, data),
            after=None if current is None else self._after(path, current),
            detail={"by": "hand", "saved": when} | flagged(data),
        )

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

    # -- moves and removals ------------------------------------------------------------

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
        if_match: TagCondition = None,
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
        detail: dict[str, Any] | None = None,
    ) -> BlockMeta:
        """(``detail``: why, for the journal: a reason and what triggered it.)"""
        refuse_secrets({"session_id": session, **(detail or {})})  # the journal keeps it
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
                    detail=detail,
                )
            except BaseException:
                self._move_file(target, source)
                raise
        self._known.pop(_key(source), None)
        if not archive:
            self._known[_key(target)] = data
        return self._index(scope, name, archive, data)

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
        elif path.parent.parent == root / "projects" and SLUG_RE.fullmatch(path.parent.name):
            scope = f"project:{path.parent.name}"
        else:
            return None  # the archive, or deeper
        name = path.name[:-3]
        if path.name != CORE and not NAME_RE.fullmatch(name):
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


def _check_etag(what: str, if_match: TagCondition, etag: str) -> None:
    """412 with the current ETag when ``if_match`` is given and is not it."""
    if not holds(if_match, etag):
        raise PreconditionFailed(f"{what} changed since you read it", current=etag)


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    chunks, pos = [], 0
    while pos < size:
        chunk = os.pread(fd, size - pos, pos)
        if not chunk:
            break
        chunks.append(chunk)
        pos += len(chunk)
    return b"".join(chunks)
