"""Rebuilding the catalog offline: from an opened (locked) home's files alone, from scratch.

Used by ``doctor`` and ``reindex`` while no daemon runs; the old database is deleted first.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...storage import fs
from .database import VECTORS, Catalog
from .files import FileEntry


def rebuild(home: Any, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Build the index of an opened (locked) home from its files alone, from scratch."""
    from ...schemas.clock import utc_now
    from ...storage.journal import Journal
    from ...storage.memory import MemoryStore
    from ...storage.transcripts import TranscriptStore

    folder: Path = home.index
    for suffix in ("", "-wal", "-shm"):
        fs.unlink(f"{folder / 'catalog.sqlite3'}{suffix}")
    fs.unlink(folder / VECTORS)  # of the old catalog: embedded again when asked for
    store = TranscriptStore(home)
    files = [FileEntry(*found) for found in store.scan()]
    catalog = Catalog(folder, store.path_of)
    try:
        stats = catalog.catch_up(files, progress)
        journal = Journal(home.root / "journal.jsonl", clock=utc_now)
        memory = MemoryStore(home, journal, clock=utc_now)
        memory.load()
        stats["memory"] = catalog.sync_memory(memory.index_etags(), memory.index_doc)
        stats["documents"] = catalog.db.execute("SELECT count(*) FROM docs").fetchone()[0]
    finally:
        catalog.close()
    return stats
