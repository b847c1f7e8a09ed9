"""A session's change of form: a cold transcript kept compressed (``<ulid>.jsonl.zst``)
and made plain again when it is appended to.

Either way the new form is written beside the old one whole (under a temporary name,
synced, compressed copies verified byte for byte against what they hold), linked into
place, journaled, and only then is the old form removed. A crash at any step leaves the
old form whole; one that leaves both is settled at start: the plain file is the session
(it is the one that may have been written since), the compressed copy goes.

Threads: ``compress`` runs anywhere (it only reads the session and writes a temporary
file); ``pack``, ``unpack`` and ``settle`` run on the writer thread, where every other
move of a transcript runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import SessionNotFound
from .. import fs, packed
from ..home import fsync_dir
from ..packed import Compressed
from .places import Places
from .records import Location

# Told of each change of form once it is durable and before the old form is removed
# (the journal): the session, ``session.compressed`` or ``session.decompressed``, its
# project's slug and what was done.
OnForm = Callable[[str, str, str, dict[str, Any]], None]


class Forms:
    """Compressing cold sessions, and making them plain again."""

    def __init__(self, places: Places, *, sync: bool, on_form: OnForm) -> None:
        self._places = places
        self._sync = sync
        self._on_form = on_form

    def compress(self, session_id: str) -> Compressed:
        """A live plain session compressed into a temporary file beside it (any thread)."""
        where = self._places.locations.get(session_id)
        if where is None or where.trashed or where.packed:
            raise SessionNotFound(f"no plain session {session_id}")
        return packed.compress(self._places.path(session_id, where), sync=self._sync)

    def pack(self, session_id: str, made: Compressed, detail: dict[str, Any]) -> bool:
        """Put a session's compressed copy in place of its plain file (writer thread; the
        caller has seen that no writer holds it): only while the file is still the one
        compressed; False (and the copy dropped) otherwise."""
        where = self._places.locations.get(session_id)
        try:
            if where is None or where.trashed or where.packed:
                return False
            plain = self._places.path(session_id, where)
            stat = fs.lstat(plain)
            if plain != made.plain or stat is None or packed.identity(stat) != made.read_as:
                return False  # changed (or another file) since it was read
            target = self._places.path(session_id, Location(where.slug, packed=True))
            try:
                fs.link(made.temp, target)
            except FileExistsError:
                return False  # something has the name: left alone
        finally:
            fs.unlink(made.temp)
        try:
            if self._sync:
                fsync_dir(target.parent)
            self._on_form(
                session_id,
                "session.compressed",
                where.slug,
                {"bytes": made.size, "compressed_bytes": made.packed_size, **detail},
            )
        except BaseException:
            fs.unlink(target)  # not journaled: the plain file stays the session
            raise
        now = fs.lstat(plain)
        if now is None or packed.identity(now) != made.read_as:
            # another program wrote to it while it was put in place: it stays plain
            fs.unlink(target)
            self._on_form(
                session_id,
                "session.decompressed",
                where.slug,
                {"by": "another program wrote to it while it was compressed; it stays plain"},
            )
            return False
        self._places.locations[session_id] = Location(where.slug, packed=True)
        fs.unlink(plain)
        if self._sync:
            fsync_dir(plain.parent)
        return True

    def unpack(self, session_id: str, detail: dict[str, Any]) -> None:
        """Make a compressed session plain again (writer thread), before it is written."""
        where = self._places.locations.get(session_id)
        if where is None or where.trashed or not where.packed:
            return
        source = self._places.path(session_id, where)
        plain = Location(where.slug)
        target = self._places.path(session_id, plain)
        data = packed.read_range(source)
        if not fs.exists(target):  # else a plain copy is here already: it is the session
            fs.write_new(target, data, sync=self._sync)
        stat = fs.lstat(target)
        if stat is not None:  # the watcher knows it as the daemon's own
            self._places.placed[session_id] = (stat.st_size, stat.st_mtime_ns)
            self._places.trim()
        self._on_form(
            session_id,
            "session.decompressed",
            where.slug,
            {"bytes": len(data), "compressed_bytes": _size(source), **detail},
        )
        self._places.locations[session_id] = plain
        fs.unlink(source)
        if self._sync:
            fsync_dir(source.parent)

    def settle(self) -> list[str]:
        """Drop the compressed copy of each session the last scan found in both forms
        (writer thread), journaled; the ids settled."""
        settled = []
        for session_id, slug in self._places.doubled:
            source = self._places.path(session_id, Location(slug, packed=True))
            self._on_form(
                session_id,
                "session.decompressed",
                slug,
                {
                    "compressed_bytes": _size(source),
                    "by": "start: a change of form a crash cut short; the plain file stays",
                },
            )
            fs.unlink(source)
            if self._sync:
                fsync_dir(source.parent)
            settled.append(session_id)
        self._places.doubled = []
        return settled


def _size(path: Any) -> int | None:
    stat = fs.lstat(path)
    return stat.st_size if stat is not None else None
