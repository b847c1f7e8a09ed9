"""Memory's files: where each scope and block lives, the bytes of every live file as the
store last wrote or saw them, and every change of a file, journaled.

A replacement is written and synced beside the file, swapped in with one
``renameat2(RENAME_EXCHANGE)`` and journaled with the bytes it replaced; a hand edit
that lands in between is swapped back, journaled (actor watcher) and ``Changed`` raised
for the write to be built again on it. When the journal line fails the change is
undone, so nothing is on disk that is not in the journal; a full disk is 507 with the
file as it was. Moves (archive, restore, forget) link to the new name and unlink the
old, never over a file. ``reconcile`` journals what changed on disk without the store
knowing, with the content it replaced, and keeps the block index in step. The journal
keeps a file as text, or base64 when it is not UTF-8, or only its path, hash and
findings when it holds a secret. Every change runs on the writer thread, one at a time.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import os
import secrets
import threading
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from ...errors import InvalidName, NameTaken, UnsafePath
from ...schemas.names import NAME_RE, SLUG_RE, check_name, check_slug, project_slug
from ...secrets import flagged, refuse_document, refuse_secrets, withheld
from .. import fs
from ..home import Home, ensure_dir, fsync_dir, normalize_repo_root
from ..journal import Journal
from ..jsonl import TEMP_MARK
from .attempts import Changed, disk
from .blocks import BlockIndex, block_of
from .names import ARCHIVE, CORE, key_of
from .sharing import ARCHIVED, LIVE, NONE, UNSHARED, Sharing, Version

log = logging.getLogger("aster_persist")
LATE_WRITES_SECONDS = 0.2  # a replaced file is looked at again this long after its swap


class MemoryFiles:
    """The files of every scope, what the store knows of them, and their journaled
    changes; keeps ``index`` in step with what it finds changed by hand."""

    def __init__(self, home: Home, journal: Journal, index: BlockIndex) -> None:
        self.home = home
        self.root = home.root / "memory"
        self.journal = journal
        self._index = index
        # The bytes of every live memory file as this store last wrote or saw them, so a
        # change on disk that did not come from here (a hand edit) can be told apart and
        # journaled with the content it replaced.
        self._known: dict[str, bytes] = {}
        self.share: Sharing = UNSHARED  # a team's, once the daemon has joined one

    # -- scopes and paths --------------------------------------------------------

    def scope_for(self, repo_root: str | None) -> str:
        if repo_root is None:
            return "global"
        root = normalize_repo_root(repo_root)
        return self.share.scope_of(root) or "project:" + project_slug(root)

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

    def rel(self, path: Path) -> str:
        return str(path.relative_to(self.home.root))

    # -- what the journal keeps of a file -------------------------------------------

    def state(self, path: Path) -> dict[str, Any] | None:
        data = fs.read_or_none(path)
        return None if data is None else self.content_state(path, data)

    def content_state(self, path: Path, data: bytes) -> dict[str, Any]:
        """A file's path and bytes as the journal keeps them: text when they are UTF-8,
        base64 when they are not (a file saved in another encoding), so a revert can
        write them back exactly either way. Content that holds a secret is withheld."""
        hidden = withheld(self.rel(path), data)
        if hidden is not None:
            return hidden
        try:
            return {"path": self.rel(path), "content": data.decode("utf-8")}
        except UnicodeDecodeError:
            return {"path": self.rel(path), "content_base64": base64.b64encode(data).decode()}

    def after(self, path: Path, data: bytes) -> dict[str, Any]:
        return {
            "path": self.rel(path),
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
        }

    # -- what the store knows -------------------------------------------------------

    def known(self, path: Path) -> bytes | None:
        """The bytes of a live file as the store last wrote or saw them."""
        return self._known.get(key_of(path))

    def blocks_on_disk(self) -> Iterator[tuple[str, str, bool, bytes]]:
        """(scope, name, archived, bytes) of every block file, read once at start; the
        live files, ``ASTER.md`` too, become what the store knows. A link is reported
        once and left out."""
        self._known.clear()
        ensure_dir(self.root)
        for scope in ["global", *self.project_scopes()]:
            for archived in (False, True):
                folder = self.folder(scope) / (ARCHIVE if archived else "")
                for file_name in md_files(folder):
                    name = file_name[:-3]
                    if file_name != CORE and not NAME_RE.fullmatch(name):
                        continue
                    if file_name == CORE and archived:
                        continue
                    try:
                        data = fs.read_bytes(folder / file_name)
                    except (UnsafePath, FileNotFoundError):
                        continue
                    if not archived:
                        self._known[key_of(folder / file_name)] = data
                    if file_name != CORE:
                        yield scope, name, archived, data

    def project_scopes(self) -> list[str]:
        """The scopes of the project folders under ``memory/projects`` (a link refused)."""
        projects = self.root / "projects"
        try:
            return [
                f"project:{n}" for n in fs.names(projects, folders=True) if SLUG_RE.fullmatch(n)
            ]
        except UnsafePath:
            return []

    # -- the swap-in write -------------------------------------------------------------

    def settle(self, path: Path) -> None:
        """Journal a hand edit of the live file ``path`` that the watcher has not reached
        yet, so a write never checks an ETag against, or keeps as the content it replaced,
        an outdated picture of the file (writer thread)."""
        if fs.read_or_none(path) != self._known.get(key_of(path)):
            self.reconcile([path])

    def write(self, path: Path, data: bytes) -> None:
        with disk(f"could not write {self.rel(path)}"):
            fs.atomic_write(path, data)  # missing folders are made, each synced
        self._known[key_of(path)] = data

    def unlink(self, path: Path) -> None:
        fs.unlink(path)
        self._known.pop(key_of(path), None)

    def _shared(
        self, share: bool, scope: str, name: str, before: Version, after: Version
    ) -> contextlib.AbstractContextManager[None]:
        return self.share.writing(scope, name, before, after) if share else nullcontext()

    def replace(
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
        share: bool = True,
    ) -> None:
        """Replace ``path`` with ``data`` and journal it with the bytes it replaced.

        The caller built ``data`` from the file as this store knows it (it settled it
        first). The new bytes are written and synced beside the file, then swapped in
        with one ``renameat2(RENAME_EXCHANGE)``, so the bytes replaced are exactly the
        ones now beside it. When they are not the ones the write was built from (an
        editor saved in between), the swap is undone, the edit is journaled as a hand
        edit and ``Changed`` is raised, for the caller to build again on what is there
        now (or answer 412 to an ``If-Match``). When the journal line cannot be written,
        the swap is undone too: nothing is on disk that is not in the journal, and a
        full disk is 507 with the file as it was. Bytes or a session that hold a secret
        are refused (422) before anything is written. A shared file is set in the team
        first (``share``: unless the team's version is what is written)."""
        key = key_of(path)
        known = self._known.get(key)
        refuse_document(data, name if name == CORE else f"block {name!r}", before=known)
        refuse_secrets({"session_id": session})
        now = NONE if known is None else Version(LIVE, known)
        with self._shared(share, scope, name, now, Version(LIVE, data)):
            named = {"scope": scope, "name": name, "actor": actor, "session": session}
            self._write_swapped(path, data, op, known, {**named, "detail": detail})

    def _write_swapped(
        self, path: Path, data: bytes, op: str, known: bytes | None, named: dict[str, Any]
    ) -> None:
        """``replace`` once a team took it; ``named``: what the journal line names."""
        key = key_of(path)
        before = None if known is None else self.content_state(path, known)
        with disk(f"could not write {self.rel(path)}"):
            tmp = fs.write_temp(path, data)
        replaced = known
        try:
            replaced = self._swap_in(tmp, path, known)
            if replaced != known:
                if replaced is not None:  # kept first: an editor may save over it again
                    self._journal_late(path, replaced, "just before a write replaced it")
                self._swap_back(tmp, path, data, replaced)
                self.reconcile([path])
                raise Changed
            with disk(f"could not journal the change of {self.rel(path)}"):
                try:
                    fsync_dir(path.parent)
                    self.journal.record(op, before=before, after=self.after(path, data), **named)
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
            data = fs.read_fd(fd)
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
            now = fs.read_fd(fd)
            if now != data:
                self._journal_late(path, now, "into the replaced file, after the swap")
        except Exception:
            log.exception("could not look again at the file %s replaced", self.rel(path))
        finally:
            os.close(fd)

    def _journal_late(self, path: Path, data: bytes, when: str) -> None:
        scope_name = self.where(path, Path(key_of(self.root)))
        current = fs.read_or_none(path)
        self.journal.record(
            "memory.edit",
            scope=scope_name[0] if scope_name else "global",
            name=scope_name[1] if scope_name else path.name,
            actor="watcher",
            before=self.content_state(path, data),
            after=None if current is None else self.after(path, current),
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
        with disk(f"could not put {self.rel(path)} back"):
            if replaced is None:
                fs.unlink(path)
            elif not fs.exchange(tmp, path):
                fs.atomic_write(path, replaced)

    # -- moves ------------------------------------------------------------------------

    def move_file(self, source: Path, target: Path, *, expected: bytes | None = None) -> bytes:
        """Give ``source`` the name ``target`` (never over a file there) and return its
        bytes; with ``expected``, bytes that differ (a hand edit since the file was read)
        are put back, journaled, and ``Changed`` raised."""
        with disk(f"could not move {self.rel(source)}"):
            try:
                fs.link(source, target)
            except FileExistsError:
                raise NameTaken(f"{self.rel(target)} is in the way") from None
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
            self.move_file(target, source)
            self.reconcile([source])
            raise Changed
        return data

    def remove(self, path: Path, *, scope: str, name: str, actor: str, session: str | None) -> None:
        """Delete a live file, journaled with its content (so it can be reverted); a hand
        edit since the store read it is put back, journaled, and ``Changed`` raised."""
        # a name of its own: one a kill left behind never stands in a later removal's way
        aside = path.parent / f"{TEMP_MARK}{path.name}.gone-{secrets.token_hex(6)}"
        with self.share.writing(scope, name, Version(LIVE, self.known(path)), NONE):
            data = self.move_file(path, aside, expected=self.known(path))
            with disk(f"could not journal the removal of {self.rel(path)}"):
                try:
                    self.journal.record(
                        "memory.delete",
                        scope=scope,
                        name=name,
                        actor=actor,
                        session=session,
                        before=self.content_state(path, data),
                        after=None,
                    )
                except BaseException:
                    self.move_file(aside, path)
                    raise
            with contextlib.suppress(OSError):  # journaled: what is left is a temp file
                fs.unlink(aside)
                fsync_dir(path.parent)
            self._known.pop(key_of(path), None)

    def archive(
        self,
        scope: str,
        name: str,
        *,
        archive: bool,
        actor: str,
        session: str | None,
        detail: dict[str, Any] | None,
    ) -> bytes:
        """Move a block into its scope's archive (or back, ``archive`` False), journaled;
        returns its bytes. A hand edit of the live file since the store read it is put
        back, journaled, and ``Changed`` raised."""
        source = self.path(scope, name, archived=not archive)
        target = self.path(scope, name, archived=archive)
        ensure_dir(target.parent)
        held = fs.read_or_none(source)
        states = (LIVE, ARCHIVED) if archive else (ARCHIVED, LIVE)
        with self.share.writing(scope, name, Version(states[0], held), Version(states[1], held)):
            data = self.move_file(source, target, expected=self.known(source) if archive else None)
            with disk(f"could not journal the move of {self.rel(source)}"):
                try:
                    fsync_dir(source.parent)
                    self.journal.record(
                        "memory.archive" if archive else "memory.restore",
                        scope=scope,
                        name=name,
                        actor=actor,
                        session=session,
                        before=self.content_state(source, data),
                        after=self.after(target, data),
                        detail=detail,
                    )
                except BaseException:
                    self.move_file(target, source)
                    raise
            self._known.pop(key_of(source), None)
            if not archive:
                self._known[key_of(target)] = data
        return data

    # -- changes made by hand ---------------------------------------------------------

    def where(self, path: Path, root: Path) -> tuple[str, str, str] | None:
        """The (scope, name, real path) of a live memory file, given the real path of the
        memory folder; None for anything else."""
        real = key_of(path)
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
        prefix = os.path.join(key_of(folder), "")
        return [Path(key) for key in self._known.copy() if key.startswith(prefix)]

    def reconcile(self, paths: list[Path], *, actor: str = "watcher") -> list[dict[str, Any]]:
        """Journal what changed on disk without this store knowing (a hand edit, a file
        added or removed by hand), with the content it replaced, and index it; return
        the entries. The store's own writes match what it knows and are left alone."""
        entries = []
        root = Path(key_of(self.root))
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
            before = None if known is None else self.content_state(path, known)
            if data is None:
                op = "memory.delete"
                self._known.pop(key, None)
            else:
                op = "memory.write" if known is None else "memory.edit"
                self._known[key] = data
            if name != CORE:
                if data is None:
                    self._index.drop(scope, name)
                else:
                    self._index.put(block_of(scope, name, False, data))
            entries.append(
                self.journal.record(
                    op,
                    scope=scope,
                    name=name,
                    actor=actor,
                    before=before,
                    after=None if data is None else self.after(path, data),
                    detail={"by": "hand", **flagged(data)},
                )
            )
            self.share.changed(scope, name)
        return entries


def md_files(folder: Path) -> dict[str, os.stat_result]:
    """The markdown files of a memory folder, each with its status; a link among them
    is reported, not read."""
    try:
        found = fs.statuses(folder, (".md",))
    except UnsafePath:
        return {}
    return {name: st for name, st in found.items() if not name.startswith(TEMP_MARK)}
