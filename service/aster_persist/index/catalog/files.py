"""Transcript files as the catalog sees them: an entry found on disk, and the summary
and search documents folded from its bytes (from where the index left off, if it holds).

Reads only; nothing here writes a file or the database.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, NamedTuple

from ... import workers
from ...errors import StorageFailed, UnsafePath
from ...storage.jsonl import parse, read_bytes
from ...storage.packed import content_size_or_own
from ...storage.summary import SessionInfo
from ...storage.transcripts.copies import absorb_shown
from ...storage.transcripts.places import UNREAD
from ..text import Doc, docs_at

log = logging.getLogger("aster_persist")


class FileEntry(NamedTuple):
    """A live transcript file found on disk."""

    id: str
    slug: str
    path: Path | str
    size: int
    mtime_ns: int


def sized(entry: FileEntry, row: tuple[Any, ...]) -> FileEntry:
    """``entry`` with the bytes of content it holds: a compressed transcript's (found
    with ``UNREAD``) is the indexed ``row``'s (slug, size, mtime) when the file has not
    changed since, else read from its frame (0 when it is gone or a link now: reading
    it says so)."""
    if entry.size != UNREAD:
        return entry
    if row[:1] == (entry.slug,) and row[2:3] == (entry.mtime_ns,):
        return entry._replace(size=int(row[1]))
    try:
        return entry._replace(size=content_size_or_own(entry.path))
    except (OSError, UnsafePath):
        return entry._replace(size=0)


def summarize_file(
    entry: FileEntry, previous: SessionInfo | None = None
) -> tuple[SessionInfo, list[Doc]]:
    """Fold a transcript into a summary, from ``previous``'s offset when it still holds
    (the bytes there begin the line after the last one folded: a file rewritten since,
    a copy made whole say, is read from its start, and the summary says ``whole``);
    return it with the search documents of the lines read."""
    info = previous
    if info is None or entry.size < info.offset:
        info = SessionInfo(id=entry.id, slug=entry.slug)
    data = read_bytes(entry.path, info.offset, entry.size)
    parsed = parse(data, base=info.offset, first_line=info.lines + 1)
    if info.offset and not continues(parsed, info.offset, info.last_seq + 1):
        return summarize_file(entry, None)
    info.whole = not info.offset
    if info.offset:
        info.absorb(parsed.lines, parsed.bad)
    elif absorb_shown(info, parsed, Path(entry.path).parent):  # a copy's counts what it refers to
        info.state = "damaged"
    info.offset = parsed.good_end
    info.lines += parsed.line_count
    info.file_size = entry.size
    info.file_mtime_ns = entry.mtime_ns
    if info.lines > 0 and not info.created_at:
        info.state = "damaged"  # no readable header
    sizes = [len(raw) + 1 for raw in parsed.raw]
    return info, docs_at(parsed.lines, parsed.starts, sizes, info.created_at)


# What reading a file for a catch-up gave: its summary and documents, or why not: GONE
# (moved, deleted or a link now: left out) or the error that made it unreadable.
Read = tuple[SessionInfo, list[Doc]] | str

GONE = "gone"
POOL_BYTES = 32 << 20  # bytes to read past which a catch-up reads on other processes
_POOL_CHUNK = 16  # files one task of a reading process reads
_POOL_MAX = 4  # reading processes at most


def _read(entry: FileEntry, previous: SessionInfo | None) -> Read:
    try:
        return summarize_file(entry, previous)
    except (FileNotFoundError, UnsafePath):
        return GONE
    except (OSError, StorageFailed) as exc:  # unreadable: the caller lists it as damaged
        return f"{type(exc).__name__}: {exc}"


def _behind(parent: int) -> None:
    """A reading process gives way to the daemon (requests, and the catalog writing what
    it read): it runs at a lower priority, and ends with the daemon (``parent``)."""
    workers.started(parent, nice=10)


def _read_chunk(jobs: list[tuple[FileEntry, SessionInfo | None]]) -> list[Any]:
    """``_read`` of each job, on a reading process: documents as plain tuples, which
    cross to the catalog's process several times faster than named ones."""
    found = [_read(entry, previous) for entry, previous in jobs]
    return [r if isinstance(r, str) else (r[0], [tuple(d) for d in r[1]]) for r in found]


def _from_chunk(found: list[Any]) -> Iterator[Read]:
    for r in found:
        yield r if isinstance(r, str) else (r[0], [Doc._make(d) for d in r[1]])


def read_files(
    jobs: list[tuple[FileEntry, SessionInfo | None]], pool_bytes: int | None = None
) -> Iterator[Read]:
    """Each file of ``jobs`` summarized (from ``previous``'s offset, when given), in
    order. Past ``pool_bytes`` to read, the files are read, parsed and scanned for
    secrets on other processes (one per processor, a few at most) while the caller
    writes what they gave: a rebuild is bound by that work, not by the database."""
    size = sum(e.size - (p.offset if p is not None else 0) for e, p in jobs)
    processes = min(os.cpu_count() or 1, _POOL_MAX)
    if size <= (POOL_BYTES if pool_bytes is None else pool_bytes) or len(jobs) <= _POOL_CHUNK:
        yield from (_read(entry, previous) for entry, previous in jobs)
        return
    context = multiprocessing.get_context("spawn")  # never a fork of a threaded process
    chunks = [jobs[i : i + _POOL_CHUNK] for i in range(0, len(jobs), _POOL_CHUNK)]
    done = 0  # chunks handed on
    try:
        with ProcessPoolExecutor(
            processes, mp_context=context, initializer=_behind, initargs=(os.getpid(),)
        ) as pool:
            pending: deque[Future[list[Any]]] = deque()
            for chunk in chunks:
                pending.append(pool.submit(_read_chunk, chunk))
                if len(pending) >= 4 * processes:  # a few ahead, never the whole home in memory
                    found = pending.popleft().result()
                    done += 1
                    yield from _from_chunk(found)
            while pending:
                found = pending.popleft().result()
                done += 1
                yield from _from_chunk(found)
    except (OSError, ImportError, NotImplementedError, BrokenProcessPool) as exc:
        # no processes here (no working semaphores), or one was killed: the rest is read
        # in this process, as a small catch-up is
        log.warning("reading on other processes failed (%s); reading the rest here", exc)
        for chunk in chunks[done:]:
            yield from (_read(entry, previous) for entry, previous in chunk)


def continues(parsed: Any, start: int, first_seq: int) -> bool:
    """Whether bytes read from ``start`` begin with the whole line of seq ``first_seq``."""
    if parsed.bad and parsed.bad[0] == 1:
        return False  # the range starts inside a line, or with a broken one
    if parsed.torn is not None and parsed.good_end == start:
        return False  # not even one whole line
    return not parsed.lines or parsed.lines[0].get("seq") == first_seq
