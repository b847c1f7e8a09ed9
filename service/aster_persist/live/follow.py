"""Following other agents' folders: every session they write is imported as it grows.

The folders followed are the ``ASTER_FOLLOW`` setting and the list in
``<home>/follow.json`` (``aster-persist follow add|remove`` edits it; the daemon reads it
again when it changes). Each transcript file in them (``*.jsonl``, ``*.json``,
``*.traj``) is imported when it appears and each time it changes: an import of a source
already here appends exactly the records it gained (``services/sessions/imports.py``),
so a file followed while an agent writes it becomes one session that grows with it.

What was taken in of each file (its size and modification time) is kept in
``<home>/follow-state.json``, so a restart reads again only the files that changed
meanwhile, and nothing is done while nothing changes. A file deleted or truncated at
its source changes nothing here: what was imported stays (the journal says of a deleted
one that its source is gone, ``session.source_gone``); a file rewritten is kept beside
its session as one of its own. Links are never followed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from watchfiles import Change, awatch

from .. import beneath
from ..errors import AsterError, UnsafePath
from ..services.sessions import Sessions
from ..storage import fs

log = logging.getLogger("aster_persist")

LIST = "follow.json"
STATE = "follow-state.json"
SUFFIXES = (".jsonl", ".json", ".traj")
DEBOUNCE_MS = 200  # a line appended is imported within about this, once it is quiet
STEP_MS = 50
USUAL = ("~/.claude/projects", "~/.codex/sessions")  # Claude Code's and Codex's


_SAID: set[str] = set()  # what was said of a home's follow.json: once, not every second


def listed(home: Path) -> list[str]:
    """The folders ``follow.json`` names (a file that is missing or unreadable: none; a
    link or a pipe there is refused, said once, and the configured folders still are)."""
    try:
        data = fs.read_or_none(home / LIST)
    except UnsafePath as exc:
        if str(home) not in _SAID:
            _SAID.add(str(home))
            log.warning("%s; following only the folders of ASTER_FOLLOW", exc.detail)
        return []
    _SAID.discard(str(home))
    try:
        folders = orjson.loads(data).get("folders", []) if data else []
    except (orjson.JSONDecodeError, AttributeError):
        log.warning("%s is not a JSON object with a list of folders; following none", LIST)
        return []
    return [f for f in folders if isinstance(f, str)]


def write_list(home: Path, folders: Iterable[str]) -> None:
    """Replace the list ``follow.json`` holds (atomically: the daemon may be reading)."""
    unique = sorted(set(folders))
    fs.atomic_write(home / LIST, orjson.dumps({"folders": unique}, option=orjson.OPT_INDENT_2))


def usual_locations() -> list[str]:
    """Where Claude Code and Codex keep their sessions, those that are there."""
    return [str(Path(p).expanduser()) for p in USUAL if Path(p).expanduser().is_dir()]


def transcripts(folder: Path) -> list[Path]:
    """Every transcript file under a folder, never through a link."""
    return beneath.files(folder, SUFFIXES)


class Following:
    """The followed folders' files, imported as they change."""

    def __init__(self, sessions: Sessions, home: Path, configured: list[str]) -> None:
        self.sessions = sessions
        self.home = home
        self.configured = configured
        # each file taken in: its size and modification time then, and its session
        self.state: dict[str, list[Any]] = self._load_state()
        self.errors: dict[str, str] = {}  # a file that cannot be imported: why

    def folders(self) -> list[Path]:
        """The folders to follow now: configured and listed, those that are folders."""
        out = []
        for name in dict.fromkeys([*self.configured, *listed(self.home)]):
            folder = Path(name).expanduser()
            if folder.is_absolute() and folder.is_dir() and not folder.is_symlink():
                out.append(folder)
        return out

    async def take_in(self, paths: Iterable[Path]) -> int:
        """Import the files that changed since they were last taken in; how many."""
        done = 0
        roots = self.folders()
        for path in paths:
            root = next((r for r in roots if path.is_relative_to(r)), None)
            if root is None:
                continue
            try:  # every name below the folder opened without following a link
                handle = await asyncio.to_thread(beneath.open_file, root, path)
            except beneath.Refused as exc:
                if self.errors.get(str(path)) != exc.strerror:  # said once, not each change
                    self.errors[str(path)] = str(exc.strerror)
                    log.warning("following %s: not read: %s", path, exc.strerror)
                continue
            except OSError:
                continue  # gone: what was imported of it stays
            with handle:
                stat = os.fstat(handle.fileno())
                seen: list[Any] = [stat.st_size, stat.st_mtime_ns]
                before = self.state.get(str(path), [])
                if before[:2] == seen:
                    continue
                became = before[2:3]  # the session it became
                try:
                    moment = datetime.fromtimestamp(stat.st_mtime, UTC)
                    result = await self.sessions.import_stream(
                        handle,
                        limit=stat.st_size,  # what it held when looked at: no half line more
                        modified_at=moment.isoformat(timespec="milliseconds")[:23] + "Z",
                    )
                    became = [s["id"] for s in result["sessions"]][:1] or became
                    self.errors.pop(str(path), None)
                except AsterError as exc:  # not a transcript, or not yet a whole one
                    self.errors[str(path)] = exc.detail
                    log.info("following %s: not imported: %s", path, exc.detail)
                except OSError as exc:
                    self.errors[str(path)] = str(exc)
                    continue
            self.state[str(path)] = seen + became
            done += 1
        if done:
            await asyncio.to_thread(self._save_state)
        return done

    async def run(self, stop: asyncio.Event) -> None:
        """Follow until ``stop`` is set, taking up a changed list of folders as it comes."""
        await _either(stop, self.sessions.ready).wait()  # once the catalog caught up
        while not stop.is_set():
            try:
                await self._follow(stop)
            except Exception:  # a fault of ours must not end following: log, go on
                log.exception("following failed; starting again in a second")
                await _wait(stop, 1.0)

    async def _follow(self, stop: asyncio.Event) -> None:
        """One round: the folders as listed now, until the list changes (or ``stop``)."""
        folders = self.folders()
        listing = fs.lstat(self.home / LIST)
        mark = (listing.st_mtime_ns, listing.st_size) if listing else None
        for folder in folders:
            await self.take_in(await asyncio.to_thread(transcripts, folder))
        if not folders:  # nothing to watch: look again at the list now and then
            await _wait(stop, 1.0)
            return
        changed = asyncio.Event()
        watching = awatch(
            *folders,
            watch_filter=lambda _change, name: name.endswith(SUFFIXES),
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            stop_event=_either(stop, changed),
            recursive=True,
            yield_on_timeout=True,
            rust_timeout=1000,
        )
        watched = False
        async for batch in watching:
            now = fs.lstat(self.home / LIST)
            if ((now.st_mtime_ns, now.st_size) if now else None) != mark:
                changed.set()  # the list changed: watch its folders instead
                break
            if not watched:  # the watch is set now: once more, what changed before it was
                watched = True
                for folder in folders:
                    await self.take_in(await asyncio.to_thread(transcripts, folder))
            gone = sorted({name for change, name in batch if change == Change.deleted})
            await self.gone(p for p in gone if not Path(p).exists())
            paths = sorted({Path(name) for change, name in batch if change != Change.deleted})
            await self.take_in(paths)  # each opened from its folder down, no link followed

    async def gone(self, paths: Iterable[str]) -> None:
        """Files deleted at their source: each session they became stays as it is, and
        the journal says its source is gone."""
        forgotten = False
        for path in paths:
            taken = self.state.pop(path, None)
            if taken is None:
                continue
            forgotten = True
            if len(taken) > 2 and isinstance(taken[2], str):
                await self.sessions.record(
                    "session.source_gone", taken[2], {"path": path}, actor="watcher"
                )
        if forgotten:
            await asyncio.to_thread(self._save_state)

    def _load_state(self) -> dict[str, list[Any]]:
        """What was taken in of each file; derived data, so anything that cannot be read
        (damaged, a link or a pipe put there) only means reading the files once more."""
        try:
            data = fs.read_or_none(self.home / STATE)
        except UnsafePath as exc:
            log.warning("%s; it is removed and made again from the files", exc.detail)
            fs.unlink(self.home / STATE)  # the name only: a link's target is untouched
            return {}
        try:
            state = orjson.loads(data) if data else {}
        except orjson.JSONDecodeError:
            return {}  # a damaged state only means reading the files once more
        return state if isinstance(state, dict) else {}

    def _save_state(self) -> None:
        fs.atomic_write(self.home / STATE, orjson.dumps(self.state), sync=False)


def _either(stop: asyncio.Event, changed: asyncio.Event) -> asyncio.Event:
    """An event set as soon as either is (watchfiles takes one stop event)."""
    both = asyncio.Event()

    async def relay() -> None:
        waits = [asyncio.ensure_future(e.wait()) for e in (stop, changed)]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for w in waits:
            w.cancel()
        both.set()

    asyncio.get_running_loop().create_task(relay())
    return both


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
