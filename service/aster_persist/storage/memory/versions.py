"""A memory file's version as a team sees it, read and put in place.

``Versions`` reads the version of a block or ``ASTER.md`` (live, archived or none) and
puts another machine's version in its place, journaled with the state it replaced (so
it can be reverted) and the block index kept in step. What it puts was set in the team
already, so it is not sent again. A hand edit not journaled yet is journaled first, so
the version it replaces is never lost. Writer thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import Invalid
from ...secrets import found_in
from .. import fs
from ..home import ensure_dir, fsync_dir
from .attempts import disk
from .blocks import BlockIndex, block_of
from .catchup import held_beside
from .files import MemoryFiles
from .names import CORE
from .sharing import ARCHIVED, LIVE, NONE, Version


class Versions:
    """The team's view of memory files (writer thread)."""

    def __init__(self, files: MemoryFiles, index: BlockIndex) -> None:
        self._files = files
        self._index = index

    def _paths(self, scope: str, name: str) -> tuple[Path, Path | None]:
        if name == CORE:
            return self._files.folder(scope) / CORE, None
        return self._files.path(scope, name), self._files.path(scope, name, archived=True)

    def of(self, scope: str, name: str) -> Version:
        """What the file is here now (a hand edit not journaled yet is journaled first)."""
        live, archived = self._paths(scope, name)
        self._files.settle(live)
        data = fs.read_or_none(live)
        if data is not None:
            return Version(LIVE, data)
        held = fs.read_or_none(archived) if archived is not None else None
        return NONE if held is None else Version(ARCHIVED, held)

    def names(self, scopes: set[str]) -> set[tuple[str, str]]:
        """Every block and ``ASTER.md`` of ``scopes`` here (archived blocks too)."""
        found = {key for key in self._index.snapshot() if key[0] in scopes}
        for scope in scopes:
            if fs.exists(self._files.folder(scope) / CORE):
                found.add((scope, CORE))
        return found

    def put(
        self,
        scope: str,
        name: str,
        version: Version,
        *,
        op: str,
        actor: str,
        detail: dict[str, Any],
    ) -> dict[str, Any]:
        """Make the file ``version`` here; its journal entry. A version holding a secret
        is refused, as any write of memory is."""
        if version.data is not None and found_in(version.data):
            raise Invalid(f"{name} from the team holds a secret; it is not written here")
        live, archived = self._paths(scope, name)
        now = self.of(scope, name)
        if version.state == ARCHIVED and archived is None:
            raise Invalid(f"{CORE} is never archived")
        where = {LIVE: live, ARCHIVED: archived}
        before = None
        if now.state:
            before = self._files.content_state(where[now.state] or live, now.data or b"")
        target = where.get(version.state)
        with held_beside(live, archived):  # what a kill before the journal line replaced
            self._place(version, where, now, (live, archived))
            try:
                entry = self._files.journal.record(
                    op,
                    scope=scope,
                    name=name,
                    actor=actor,
                    before=before,
                    after=None
                    if target is None
                    else self._files.after(target, version.data or b""),
                    detail=detail,
                )
            except BaseException:  # nothing is on disk that is not in the journal
                self._place(now, where, version, (live, archived))
                raise
        if name != CORE:
            if version.state and version.data is not None:
                self._index.put(block_of(scope, name, version.state == ARCHIVED, version.data))
            else:
                self._index.drop(scope, name)
        return entry

    def _place(
        self,
        version: Version,
        where: dict[str, Path | None],
        was: Version,
        paths: tuple[Path, Path | None],
    ) -> None:
        """Put ``version``'s bytes in its file and remove the file ``was`` left."""
        target = where.get(version.state)
        with disk(f"could not write {paths[0].name} of memory"):
            if target is not None and version.data is not None:
                ensure_dir(target.parent)
                if version.state == LIVE:
                    self._files.write(target, version.data)  # what the store knows of it
                else:
                    fs.atomic_write(target, version.data)
            old = where.get(was.state)
            if old is not None and old != target and fs.exists(old):
                if old == paths[0]:
                    self._files.unlink(old)
                else:
                    fs.unlink(old)
                fsync_dir(old.parent)
