"""Watching the data home: people and other programs are writers too.

``watchfiles`` reports changed paths under ``memory/`` and ``sessions/``; each batch is
reconciled against what the stores know: a memory file whose bytes differ from what the
daemon last wrote is a hand edit (or a file added or removed by hand), journaled with
``actor: watcher`` and the content it replaced, so it can be reverted; a transcript
longer than the daemon wrote it was appended to by another program, and is indexed,
announced on the feed and journaled. Comparing contents, not events, makes every way an
editor saves a file look the same (in place, write-then-rename, swap files first), and
makes the daemon's own writes invisible.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from watchfiles import Change, awatch

from ..services.memory import Memory
from ..services.sessions import Sessions
from ..storage.jsonl import TEMP_MARK

log = logging.getLogger("aster_persist")

DEBOUNCE_MS = 400  # the longest a batch of changes is held back
STEP_MS = 50  # a batch is handed over once the files have been quiet this long


def _wanted(change: Change, path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    if name.startswith(TEMP_MARK):
        return False
    # Folders too: files written into a folder just made can come before its watch does,
    # and a folder moved away takes its files with it in one event.
    return name.endswith((".md", ".jsonl")) or (
        change in (Change.added, Change.deleted) and "." not in name
    )


def _files(paths: list[Path], memory: Memory) -> list[Path]:
    """The paths, with every folder replaced by the files in it (or, for a folder that
    is gone, by the memory files the store knew in it)."""
    out = []
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            out += [p for p in path.rglob("*") if p.suffix in (".md", ".jsonl")]
        elif not path.suffix and not path.exists():
            out += memory.known_files(path)
        else:
            out.append(path)
    return out


async def watch(
    service: Memory, sessions: Sessions, stop: asyncio.Event, ready: asyncio.Event
) -> None:
    """Reconcile changed files until ``stop`` is set; ``ready`` is set once watching.

    Watching starts once the index has caught up (so start-up is not slowed by walking
    the tree twice); memory edited in between is found by one comparison of every
    memory file as soon as the watch is in place."""
    await sessions.ready.wait()
    roots = [service.root, sessions.home.sessions]
    for root in roots:
        root.mkdir(parents=True, exist_ok=True)
    changes_seen = awatch(
        *roots,
        watch_filter=_wanted,
        debounce=DEBOUNCE_MS,
        step=STEP_MS,
        stop_event=stop,
        recursive=True,
        yield_on_timeout=True,
        rust_timeout=200,
    )
    async for changes in changes_seen:
        paths = _files([Path(path) for _, path in changes], service)
        if not ready.is_set():
            ready.set()
            # Every file there is now, and every file the store knew (some may be gone).
            paths += [p for p in service.root.rglob("*.md") if ".archive" not in p.parts]
            paths += service.known_files(service.root)
        if not paths:
            continue
        try:
            notes = [p for p in paths if p.suffix == ".md"]
            if notes:
                await service.reconcile(notes)
            transcripts = [p for p in paths if p.suffix == ".jsonl"]
            if transcripts:
                await sessions.reconcile(transcripts)
        except Exception:
            log.exception("could not take in changes made outside the daemon: %s", paths[:5])
