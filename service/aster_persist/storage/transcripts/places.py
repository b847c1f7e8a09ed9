"""Where every session is: discovery of the live transcripts, each session's folder and
whether it is in the trash, and the files lately written whole (so the watcher knows
them as the daemon's own).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path

from ...errors import SessionNotFound
from ...schemas.names import check_session_id
from .. import fs
from ..home import TRASH, Home, ensure_dir
from .records import PLACED_KEPT, Location


class Places:
    """Each session's folder (live or trashed), and the files lately written whole."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.locations: dict[str, Location] = {}
        # the size and mtime of files lately written whole, so the watcher knows them
        self.placed: OrderedDict[str, tuple[int, int]] = OrderedDict()

    def trim(self) -> None:
        while len(self.placed) > PLACED_KEPT:
            self.placed.popitem(last=False)

    # -- discovery ---------------------------------------------------------------

    def scan(self) -> list[tuple[str, str, Path, os.stat_result]]:
        """List every live transcript and remember where every session (or its trash) is."""
        found: list[tuple[str, str, Path, os.stat_result]] = []
        self.locations.clear()
        root = self.home.sessions
        ensure_dir(root)
        for slug in fs.names(root, folders=True):
            if slug.startswith("."):
                continue
            folder = root / slug
            for name in _jsonl_names(folder):
                stat = fs.lstat(folder / name)
                if stat is None:
                    continue
                found.append((name[:-6], slug, folder / name, stat))
                self.locations[name[:-6]] = Location(slug)
            for name in _jsonl_names(folder / TRASH):
                self.locations.setdefault(name[:-6], Location(slug, trashed=True))
        return found

    def live_path(self, session_id: str) -> Path:
        check_session_id(session_id)
        where = self.locations.get(session_id)
        if where is None or where.trashed:
            raise SessionNotFound(f"no session {session_id}")
        return self.home.session_path(where.slug, session_id)


def _jsonl_names(folder: Path) -> list[str]:
    """The session files (``<ULID>.jsonl``, regular files only) of a folder."""
    return [n for n in fs.names(folder, suffix=".jsonl") if len(n) == 32]
