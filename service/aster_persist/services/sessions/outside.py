"""Changes other programs made: transcripts appended to or added behind the daemon's
back (taken in, indexed, announced and journaled as the watcher), and sessions found on
disk at start that no journal entry says were created."""

from __future__ import annotations

import asyncio
import logging
import os
from functools import partial
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING, Any

from ...errors import UnsafePath
from ...index.catalog import Catalog, FileEntry
from ...schemas.names import ULID_RE
from ...storage import fs
from ...storage.jsonl import parse, read_bytes
from ...storage.transcripts import Found, Location
from .parts import Appended
from .written import imported_detail

if TYPE_CHECKING:
    from .parts import Parts

log = logging.getLogger("aster_persist")


async def journal_unrecorded(sessions: Parts, found: list[Found]) -> set[str]:
    """Journal each session on disk that no entry says was created (a crash between
    its sync and its ``session.created`` or ``session.imported`` line, or a file another
    program put here),
    so everything on disk is in the journal. One that holds no whole line (a create
    cut short before its header was whole, so never acknowledged) is moved aside
    instead, so the client's retry with the same id finds the name free; the ids of
    those moved aside."""
    aside: set[str] = set()
    if sessions.journal is None:
        return aside
    for sid, slug, path, _size, _mtime in found:
        if sid in sessions.journal.sessions:
            continue
        try:
            head = await asyncio.to_thread(read_bytes, path, 0, 65536)
        except (OSError, UnsafePath):
            continue
        if b"\n" not in head and len(head) < 65536:
            moved = await sessions.committer.call(sessions.store.set_aside_unborn, sid)
            if moved is not None:
                log.warning(
                    "session %s was never whole (a create cut short): its %d bytes moved "
                    "to %s, and its id is free again",
                    sid,
                    len(head),
                    moved,
                )
                aside.add(sid)
                continue
        header = parse(head).lines[:1]
        first = header[0] if header else {}
        # an import's own file says so: journaled as the import it was, so its source
        # is known again (a crash came between its sync and its journal line)
        op = "session.imported" if isinstance(first.get("x_import"), dict) else "session.created"
        detail = imported_detail(first) if op == "session.imported" else {}
        await sessions.record(
            op,
            sid,
            {
                **detail,
                "repo_root": first.get("repo_root"),
                "by": "found at start, with no journal entry",
            },
            slug=slug,
            actor="watcher",
        )
    return aside


async def reconcile(sessions: Parts, paths: list[Path]) -> None:
    """Take in transcripts another program appended to (or added): index them, tell
    the feed, and journal it as the watcher. This daemon's own appends are known by
    their size and left alone."""
    root = Path(os.path.realpath(sessions.home.sessions))
    for path in sorted(set(paths)):
        path = Path(os.path.realpath(path.parent), path.name)  # a link is not followed
        sid, slug = path.name[:-6], path.parent.name
        if path.suffix != ".jsonl" or path.parent.parent != root or not ULID_RE.fullmatch(sid):
            continue
        try:
            stat = fs.lstat(sessions.home.sessions / slug / path.name)
        except UnsafePath:
            stat = None  # reported once; never read
        if stat is not None and not S_ISREG(stat.st_mode):
            fs.refuse(sessions.home.sessions / slug / path.name)
            stat = None
        if stat is None:  # gone, or a link now: the open file is never written again
            if sessions.store.writer(sid) is not None:
                await sessions.committer.quiesce(sid)
                sessions.store.release(sid)
            continue
        writer = sessions.store.writer(sid)
        if writer is None and sessions.store.placed.get(sid) == (stat.st_size, stat.st_mtime_ns):
            continue  # a file of our own import, as we wrote it
        if writer is not None:
            if stat.st_size == writer.size:
                continue  # our own append
            await sessions.committer.quiesce(sid)
            sessions.store.release(sid)
        where = sessions.store.locations.get(sid)
        if where is None:
            sessions.store.locations[sid] = Location(slug)
        elif where.trashed or where.slug != slug:
            continue
        entry = FileEntry(sid, slug, path, stat.st_size, stat.st_mtime_ns)
        taken = await asyncio.wrap_future(sessions.catalog.submit(partial(_take_in, entry)))
        if taken is None:
            continue
        before, info, kinds = taken
        if info.state == "damaged" and (before is None or before.state != "damaged"):
            await sessions.record(
                "session.damaged",
                sid,
                {"bad_lines": info.bad_lines[:20], "by": "another program"},
                slug=slug,
                actor="watcher",
            )
        first = before.last_seq + 1 if before is not None else 1
        if info.last_seq < first:
            continue  # nothing readable was added
        sessions.announce(Appended(sid, f"project:{slug}", first, info.last_seq, kinds=kinds))
        await sessions.record(
            "session.appended",
            sid,
            {"first_seq": first, "last_seq": info.last_seq, "by": "another program"},
            slug=slug,
            actor="watcher",
            before={"bytes": before.file_size if before is not None else 0},
        )


def _take_in(entry: FileEntry, catalog: Catalog) -> Any:
    return catalog.take_in(entry)
