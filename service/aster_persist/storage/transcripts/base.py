"""The state every part of the transcript store shares, and discovery.

``_Store`` declares the open writers, where each session is and the sync bookkeeping;
the parts (creation, writers, lifecycle, reads) are mixins over it. Discovery lists the
live transcripts and remembers where every session, live or trashed, is.
"""

from __future__ import annotations

import os
from collections import Counter, OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import SessionNotFound
from .. import fs
from ..home import TRASH, Home, check_session_id, ensure_dir
from ..summary import Naming, SessionInfo
from .clock import Clock, utc_now
from .records import Location, _Writer

if TYPE_CHECKING:
    from ..jsonl import Parsed
    from .records import _Lines


class _Store:
    """What the parts of ``TranscriptStore`` share: its settings and its bookkeeping."""

    def __init__(
        self,
        home: Home,
        *,
        durability: str = "fsync",
        clock: Clock = utc_now,
        max_event_bytes: int = 4 * 1024 * 1024,
        open_files: int = 256,
        on_change: Callable[[SessionInfo], None] | None = None,
        on_remove: Callable[[str], None] | None = None,
    ) -> None:
        self.home = home
        self.durability = durability
        self.clock = clock
        self.max_event_bytes = max_event_bytes
        self.open_files = open_files
        self.on_change = on_change or (lambda info: None)
        self.on_remove = on_remove or (lambda session_id: None)
        self.locations: dict[str, Location] = {}
        self._writers: OrderedDict[str, _Writer] = OrderedDict()
        self._read_only: set[str] = set()
        self._unsynced: set[str] = set()  # written since the last sync pass began
        self._inflight: Counter[str] = Counter()  # in sync passes now running
        # the size and mtime of files lately written whole, so the watcher knows them
        self.placed: OrderedDict[str, tuple[int, int]] = OrderedDict()

    if TYPE_CHECKING:  # defined by one part and used by another (writers.py, __init__.py)

        def _lines(
            self,
            events: list[dict[str, Any]],
            first: int,
            key: str | None,
            naming: Naming,
            *,
            keys: list[str | None] | None = None,
            runs: list[int] | None = None,
        ) -> _Lines: ...

        def _release(self, writer: _Writer) -> None: ...

        def read(self, session_id: str) -> tuple[Parsed, SessionInfo]: ...

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

    def _live_path(self, session_id: str) -> Path:
        check_session_id(session_id)
        where = self.locations.get(session_id)
        if where is None or where.trashed:
            raise SessionNotFound(f"no session {session_id}")
        return self.home.session_path(where.slug, session_id)


def _jsonl_names(folder: Path) -> list[str]:
    """The session files (``<ULID>.jsonl``, regular files only) of a folder."""
    return [n for n in fs.names(folder, suffix=".jsonl") if len(n) == 32]
