"""The lifecycle of a session: detach it on the event loop, then trash, restore or purge
its file on the writer thread.

A trashed transcript keeps its name under the project's ``.trash`` folder, beside a marker
saying when and why it went there; every move and deletion is followed by a sync of the
folders it touched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from ...errors import SessionExists, SessionNotFound, UnsafePath
from ...schemas.clock import Clock
from ...schemas.names import check_session_id
from .. import fs
from ..home import ensure_dir, fsync_dir
from ..jsonl import read_bytes
from .places import Places
from .records import Location
from .writers import Writers

HEADER_READ = 1 << 20  # bytes read to find a trashed session's header line


class Trash:
    """Detaching a session on the event loop, then moving it to the trash, back, or out
    for good on the writer thread."""

    def __init__(
        self, places: Places, writers: Writers, *, clock: Clock, on_remove: Callable[[str], None]
    ) -> None:
        self._places = places
        self._writers = writers
        self.home = places.home
        self.clock = clock
        self._on_remove = on_remove

    def detach(self, session_id: str) -> Location:
        """Close the session's writer and hide it from appends (event loop, when not busy)."""
        check_session_id(session_id)
        where = self._places.locations.get(session_id)
        if where is None:
            raise SessionNotFound(f"no session {session_id}")
        self._writers.release(session_id)
        self._places.locations[session_id] = replace(where, trashed=True)
        return where

    def trash(self, session_id: str, where: Location, reason: str = "deleted") -> None:
        """Move a detached session to its project's trash (writer thread)."""
        if where.trashed:
            raise SessionNotFound(
                f"session {session_id} is already in the trash: restore it with "
                f"`aster-persist sessions restore {session_id}` "
                f"(POST /v1/sessions/{session_id}/restore)"
            )
        try:
            path = self._places.path(session_id, where)
            target = self._places.path(session_id, replace(where, trashed=True))
            if not fs.exists(path):  # (a link there is refused before anything is made)
                raise SessionNotFound(f"session {session_id} is gone from disk")
            ensure_dir(target.parent)
            if fs.exists(target):
                raise SessionExists(f"a trashed copy of {session_id} is in the way")
            fs.rename(path, target)
        except BaseException:
            self._places.locations[session_id] = where  # refused: the session stays where it was
            raise
        self._on_remove(session_id)  # it has left the listing, whatever happens next
        stamp = orjson.dumps({"trashed_at": self.clock().timestamp(), "reason": reason})
        fs.atomic_write(_marker(target), stamp, sync=False)
        fsync_dir(path.parent)
        fsync_dir(target.parent)

    def restore(self, session_id: str) -> None:
        """Bring a session back from the trash (writer thread)."""
        check_session_id(session_id)
        where = self._places.locations.get(session_id)
        if where is None:
            raise SessionNotFound(f"no session {session_id}")
        if not where.trashed:
            raise SessionExists(f"session {session_id} is not in the trash")
        source = self._places.path(session_id, where)
        target = self._places.path(session_id, replace(where, trashed=False))
        if fs.exists(target):
            raise SessionExists(f"session {session_id} exists outside the trash")
        fs.rename(source, target)
        fs.unlink(_marker(source))
        fsync_dir(source.parent)
        fsync_dir(target.parent)
        self._places.locations[session_id] = replace(where, trashed=False)

    def trashed_header(self, session_id: str) -> dict[str, Any]:
        """The header of a session in the trash ({} when it is not there, or its first
        line is not a header that can be read)."""
        where = self._places.locations.get(session_id)
        if where is None or not where.trashed:
            return {}
        try:
            head = read_bytes(self._places.path(session_id, where), 0, HEADER_READ)
            header = orjson.loads(head.split(b"\n", 1)[0])
        except (OSError, UnsafePath, orjson.JSONDecodeError):
            return {}
        return header if isinstance(header, dict) and header.get("type") == "session" else {}

    def purge(self, session_id: str, where: Location, *, only_trashed: bool = False) -> bool:
        """Delete a detached session for good, live or trashed (writer thread).

        With ``only_trashed`` (prune), a session restored in the meantime is left alone;
        returns whether anything was deleted.
        """
        if only_trashed:
            now = self._places.locations.get(session_id)
            if now is None or not now.trashed or not where.trashed:
                return False
        path = self._places.path(session_id, where)
        fs.unlink(path)
        fs.unlink(_marker(path))
        fsync_dir(path.parent)
        self._places.locations.pop(session_id, None)
        self._writers.forget(session_id)
        self._on_remove(session_id)
        return True

    def trashed_before(self, cutoff: float) -> list[str]:
        """Trashed sessions moved to the trash at or before ``cutoff`` (epoch seconds)."""
        old = []
        for sid, where in list(self._places.locations.items()):
            if where.trashed:
                path = self._places.path(sid, where)
                try:
                    when = float(orjson.loads(fs.read_bytes(_marker(path)))["trashed_at"])
                except (OSError, ValueError, KeyError, TypeError, UnsafePath):
                    stat = fs.lstat(path)
                    if stat is None:
                        continue
                    when = stat.st_ctime
                if when <= cutoff:
                    old.append(sid)
        return sorted(old)


def _marker(trashed: Path) -> Path:
    """The file beside a trashed transcript that says when and why it went there."""
    return trashed.with_name(trashed.name + ".trashed")
