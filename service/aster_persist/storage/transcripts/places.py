"""Where every session is: discovery of the live transcripts, each session's folder,
whether it is in the trash and in which form (plain, or compressed), and the files
lately written whole (so the watcher knows them as the daemon's own).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path
from typing import NamedTuple

from ...errors import SessionNotFound
from ...schemas.names import check_session_id, check_slug
from .. import fs, packed
from ..home import PACKED, TRASH, Home, ensure_dir
from .records import PLACED_KEPT, Location

UNREAD = -1  # the content size of a compressed transcript, not read yet


class Found(NamedTuple):
    """A live transcript found on disk: ``size`` is of its content, or ``UNREAD`` for a
    compressed one (what it holds is read from its frame only when the index needs it:
    a start never opens every compressed file), ``mtime_ns`` of the file. ``path`` is
    a string: a hundred thousand ``Path`` objects would cost a start half a second."""

    id: str
    slug: str
    path: str
    size: int
    mtime_ns: int


class Places:
    """Each session's folder (live or trashed), and the files lately written whole."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.locations: dict[str, Location] = {}
        # the size and mtime of files lately written whole, so the watcher knows them
        self.placed: OrderedDict[str, tuple[int, int]] = OrderedDict()
        # sessions found in both forms at the last scan (a change of form a crash cut
        # short): the plain file is the session; the compressed copy is the caller's to drop
        self.doubled: list[tuple[str, str]] = []  # (id, slug)

    def trim(self) -> None:
        while len(self.placed) > PLACED_KEPT:
            self.placed.popitem(last=False)

    # -- discovery ---------------------------------------------------------------

    def scan(self) -> list[Found]:
        """List every live transcript and remember where every session (or its trash) is,
        and in which form; a session found in both is listed plain, in ``doubled``."""
        found: list[Found] = []
        self.locations.clear()
        self.doubled = []
        root = self.home.sessions
        ensure_dir(root)
        for slug in fs.names(root, folders=True):
            if slug.startswith("."):
                continue
            folder = root / slug
            named = os.fspath(folder)
            plain, compressed = _session_files(folder)  # with each one's status, as listed
            for sid in sorted(plain.keys() | compressed.keys()):
                is_packed = sid not in plain
                if not is_packed and sid in compressed:
                    self.doubled.append((sid, slug))
                path = f"{named}/{sid}.jsonl{PACKED if is_packed else ''}"
                stat = compressed[sid] if is_packed else plain[sid]
                size = UNREAD if is_packed else stat.st_size
                found.append(Found(sid, slug, path, size, stat.st_mtime_ns))
                self.locations[sid] = Location(slug, packed=is_packed)
            trashed_plain, trashed_packed = _session_names(folder / TRASH)
            for sid in trashed_plain | trashed_packed:
                where = Location(slug, trashed=True, packed=sid not in trashed_plain)
                self.locations.setdefault(sid, where)
        return found

    def trashed_in(self, slug: str) -> list[str]:
        """The sessions in a project's trash, as its folder lists them (not every
        session's place: a trash is small, a home may hold a hundred thousand)."""
        plain, compressed = _session_names(self.home.sessions / check_slug(slug) / TRASH)
        return sorted(plain | compressed)

    def path_of(self, slug: str, session_id: str) -> Path:
        """The transcript of a session of ``slug`` in the form it is in now, named (its
        folders are not looked at: what opens it refuses a link on the way, as every read
        of the home does)."""
        where = self.locations.get(session_id)
        packed = where is not None and where.packed and where.slug == slug
        name = f"{check_session_id(session_id)}.jsonl{PACKED if packed else ''}"
        return self.home.sessions / check_slug(slug) / name

    def path(self, session_id: str, where: Location) -> Path:
        """Where a session's transcript is, by ``where`` (live or trashed, either form)."""
        if where.trashed:
            return self.home.trash_path(where.slug, session_id, packed=where.packed)
        return self.home.session_path(where.slug, session_id, packed=where.packed)

    def live_path(self, session_id: str) -> Path:
        check_session_id(session_id)
        where = self.locations.get(session_id)
        if where is None or where.trashed:
            raise SessionNotFound(f"no session {session_id}")
        return self.home.session_path(where.slug, session_id, packed=where.packed)

    def content_size(self, session_id: str) -> tuple[int, int] | None:
        """A live session's bytes of content and its file's mtime (ns); None when gone."""
        path = self.live_path(session_id)
        stat = fs.lstat(path)
        if stat is None:
            return None
        try:
            size = packed.content_size(path) if packed.is_packed(path) else stat.st_size
        except FileNotFoundError:
            return None
        return size, stat.st_mtime_ns


def _session_names(folder: Path) -> tuple[set[str], set[str]]:
    """The ids of a folder's session files (regular files only): plain (``<ULID>.jsonl``)
    and compressed (``<ULID>.jsonl.zst``)."""
    plain, compressed = _session_files(folder)
    return set(plain), set(compressed)


def _session_files(
    folder: Path,
) -> tuple[dict[str, os.stat_result], dict[str, os.stat_result]]:
    """``_session_names``, each with the status its file was listed with (one reading
    of the folder)."""
    packed = ".jsonl" + PACKED
    found = fs.statuses(folder, (".jsonl", packed))
    plain = {n[:-6]: st for n, st in found.items() if n.endswith(".jsonl") and len(n) == 32}
    compressed = {
        n[: -len(packed)]: st for n, st in found.items() if n.endswith(packed) and len(n) == 36
    }
    return plain, compressed
