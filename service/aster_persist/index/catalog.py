"""The session catalog: what listing needs, in a disposable SQLite database.

Derived data only. It is kept current on every append (rows are upserted in batches,
by absolute value, so replaying one is harmless), caught up at start from each file's
last folded offset, and rebuilt from the files when missing, corrupt or of an older
schema. One thread owns the connection; callers go through ``CatalogWorker``.
"""

from __future__ import annotations

import base64
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from ..errors import UnsafePath
from ..storage import fs
from ..storage.jsonl import parse, read_bytes
from ..storage.summary import SessionInfo
from . import search
from .text import Doc, docs_of

log = logging.getLogger("aster_persist")

SCHEMA_VERSION = 2
_COLUMNS = (
    "id",
    "slug",
    "repo_root",
    "created_at",
    "updated_at",
    "events",
    "last_seq",
    "header_title",
    "title_event",
    "first_user",
    "state",
    "bad_lines",
    "offset",
    "lines",
    "file_size",
    "file_mtime_ns",
)
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    slug TEXT NOT NULL,
    repo_root TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    events INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    header_title TEXT,
    title_event TEXT,
    first_user TEXT,
    state TEXT NOT NULL,
    bad_lines TEXT NOT NULL,
    offset INTEGER NOT NULL,
    lines INTEGER NOT NULL,
    file_size INTEGER NOT NULL,
    file_mtime_ns INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_activity ON sessions (updated_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS sessions_repo ON sessions (repo_root, updated_at DESC, id DESC);
{search.SCHEMA}
PRAGMA user_version = {SCHEMA_VERSION};
"""
_UPSERT = (
    f"INSERT OR REPLACE INTO sessions ({', '.join(_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _COLUMNS)})"
)
_BATCH = 500  # files (or dirty sessions) per transaction
_EVENT_KIND = {"tool_call": "message", "tool_result": "message"}  # document kind -> event type
_CHUNK = 8 << 20  # bytes of a transcript read at once when indexing what was appended
FLUSH_QUIET = 0.1  # seconds without a write before pending index work is done
FLUSH_MAX_DELAY = 10.0  # ... or at the latest this long after the first pending write


@dataclass(frozen=True)
class FileEntry:
    """A live transcript file found on disk."""

    id: str
    slug: str
    path: Path
    size: int
    mtime_ns: int


def _row(info: SessionInfo) -> tuple[Any, ...]:
    return (
        info.id,
        info.slug,
        info.repo_root,
        info.created_at,
        info.updated_at,
        info.events,
        info.last_seq,
        info.header_title,
        info.title_event,
        info.first_user,
        info.state,
        orjson.dumps(info.bad_lines).decode(),
        info.offset,
        info.lines,
        info.file_size,
        info.file_mtime_ns,
    )


def _info(row: sqlite3.Row) -> SessionInfo:
    values = dict(zip(_COLUMNS, row, strict=True))
    values["bad_lines"] = orjson.loads(values["bad_lines"])
    return SessionInfo(**values)


def _writable_again(info: SessionInfo) -> SessionInfo:
    """A session made read-only by a failed sync takes appends again after a restart."""
    info.state = "damaged" if info.bad_lines else "ok"
    return info


def summarize_file(
    entry: FileEntry, previous: SessionInfo | None = None
) -> tuple[SessionInfo, list[Doc]]:
    """Fold a transcript into a summary, from ``previous``'s offset when it still holds;
    return it with the search documents of the lines read."""
    info = previous
    if info is None or entry.size < info.offset:
        info = SessionInfo(id=entry.id, slug=entry.slug)
    data = read_bytes(entry.path, info.offset, entry.size)
    parsed = parse(data, base=info.offset, first_line=info.lines + 1)
    info.absorb(parsed.lines, parsed.bad)
    info.offset = parsed.good_end
    info.lines += parsed.line_count
    info.file_size = entry.size
    info.file_mtime_ns = entry.mtime_ns
    if info.lines > 0 and not info.created_at:
        info.state = "damaged"  # no readable header
    docs = [doc for line in parsed.lines for doc in docs_of(line, info.created_at)]
    return info, docs


def _continues(parsed: Any, start: int, first_seq: int) -> bool:
    """Whether bytes read from ``start`` begin with the whole line of seq ``first_seq``."""
    if parsed.bad and parsed.bad[0] == 1:
        return False  # the range starts inside a line, or with a broken one
    if parsed.torn is not None and parsed.good_end == start:
        return False  # not even one whole line
    return not parsed.lines or parsed.lines[0].get("seq") == first_seq


def encode_cursor(updated_at: str, session_id: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([updated_at, session_id])).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str] | None:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = orjson.loads(raw)
    except (ValueError, orjson.JSONDecodeError):
        return None
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return value[0], value[1]
    return None


class Catalog:
    """The SQLite side; used from one thread only."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "catalog.sqlite3"
        self.db = self._open()

    def _open(self) -> sqlite3.Connection:
        for attempt in range(2):
            for suffix in ("", "-wal", "-shm"):  # SQLite opens them by name: none is a link
                fs.check(f"{self.path}{suffix}")
            try:
                db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=OFF")  # derived data: rebuilt if lost
                version = db.execute("PRAGMA user_version").fetchone()[0]
                if version not in (0, SCHEMA_VERSION):
                    raise sqlite3.DatabaseError(f"schema version {version}")
                db.executescript(_SCHEMA)
                db.execute("SELECT count(*) FROM sessions").fetchone()
                fd = fs.open_file(self.path, os.O_RDONLY)
                try:
                    os.fchmod(fd, 0o600)
                finally:
                    os.close(fd)
                return db
            except sqlite3.DatabaseError as exc:
                if attempt:
                    raise
                log.warning(
                    "catalog %s is unusable (%s); rebuilding it from the files", self.path, exc
                )
                for suffix in ("", "-wal", "-shm"):
                    fs.unlink(f"{self.path}{suffix}")
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.db.close()

    def upsert(
        self,
        infos: Iterable[SessionInfo],
        docs: dict[str, list[Doc]] | None = None,
        replace: Iterable[str] = (),
    ) -> None:
        """Write summaries and their sessions' new search documents in one transaction;
        sessions in ``replace`` lose their old documents first."""
        rows = [_row(info) for info in infos]
        with self._tx():
            for session in replace:
                search.drop_docs(self.db, session)
            self.db.executemany(_UPSERT, rows)
            for session, session_docs in (docs or {}).items():
                search.insert_docs(self.db, session, session_docs)

    def refresh(self, infos: list[SessionInfo], locate: Callable[[str, str], Path]) -> None:
        """Write summaries handed over by the store, indexing the bytes each one covers
        that the index has not seen (read back from the file: only the new bytes)."""
        indexed: dict[str, tuple[int, int]] = {}
        for start in range(0, len(infos), _BATCH):
            ids = [info.id for info in infos[start : start + _BATCH]]
            marks = ", ".join("?" * len(ids))
            rows = self.db.execute(
                f"SELECT id, offset, last_seq FROM sessions WHERE id IN ({marks})", ids
            )
            indexed.update({sid: (offset, last) for sid, offset, last in rows})
        with self._tx():
            for info in infos:
                offset, last_seq = indexed.get(info.id, (0, -1))
                if info.offset == offset:
                    continue
                path = locate(info.slug, info.id)
                if info.offset < offset or not self._index_range(info, path, offset, last_seq + 1):
                    # shrunk, or the new bytes do not continue what was indexed: read it all
                    search.drop_docs(self.db, info.id)
                    self._index_range(info, path, 0, None)
            self.db.executemany(_UPSERT, [_row(info) for info in infos])

    def _index_range(
        self, info: SessionInfo, path: Path, start: int, first_seq: int | None
    ) -> bool:
        """Index the lines of ``[start, info.offset)``, a few megabytes at a time; False
        (nothing indexed) unless they are whole lines that begin with seq ``first_seq``
        (when it is given)."""
        pos = start
        while pos < info.offset:
            try:
                data = read_bytes(path, pos, min(info.offset, pos + _CHUNK))
            except (FileNotFoundError, UnsafePath):
                return True  # moved, deleted or a link now (refused): left as indexed
            parsed = parse(data, base=pos)
            if first_seq is not None and pos == start and not _continues(parsed, pos, first_seq):
                return False
            docs = [doc for line in parsed.lines for doc in docs_of(line, info.created_at)]
            search.insert_docs(self.db, info.id, docs)
            if parsed.good_end <= pos:
                break  # a torn line where a whole one was promised: keep what is whole
            pos = parsed.good_end
        return True

    def remove(self, ids: Iterable[str]) -> None:
        with self._tx():
            for session in ids:
                search.drop_docs(self.db, session)
                self.db.execute("DELETE FROM sessions WHERE id = ?", (session,))

    def _tx(self) -> _Tx:
        return _Tx(self.db)

    def catch_up(
        self, files: list[FileEntry], progress: Callable[[int, int], None] | None = None
    ) -> dict[str, int]:
        """Bring rows in line with the files; read only what changed since last time."""
        # what tells a changed file from an unchanged one; whole rows only for the changed
        known: dict[str, tuple[Any, ...]] = {
            row[0]: row[1:]
            for row in self.db.execute(
                "SELECT id, slug, file_size, file_mtime_ns, state FROM sessions"
            )
        }
        seen = set()
        changed: list[SessionInfo] = []
        docs: dict[str, list[Doc]] = {}
        replace: list[str] = []
        stats = {"files": len(files), "unchanged": 0, "incremental": 0, "full": 0, "removed": 0}
        for n, entry in enumerate(files, 1):
            seen.add(entry.id)
            row = known.get(entry.id) or ()
            unchanged = row[:3] == (entry.slug, entry.size, entry.mtime_ns)
            if unchanged and row[3] != "read_only":
                stats["unchanged"] += 1
            elif unchanged:  # read-only until a restart, and this is one
                previous = self.get(entry.id)
                assert previous is not None
                changed.append(_writable_again(previous))
                stats["unchanged"] += 1
            else:
                previous = self.get(entry.id) if row else None
                if previous is not None and previous.state == "read_only":
                    _writable_again(previous)
                grown = (
                    previous is not None
                    and previous.slug == entry.slug
                    and entry.size >= previous.file_size
                )
                stats["incremental" if grown else "full"] += 1
                try:
                    info, new_docs = summarize_file(entry, previous if grown else None)
                    if not grown and previous is not None:  # read again from the start
                        replace.append(entry.id)
                    changed.append(info)
                    docs[entry.id] = new_docs
                except (FileNotFoundError, UnsafePath):
                    seen.discard(entry.id)
                except OSError as exc:  # unreadable: listed as damaged, never skipped silently
                    log.error("cannot read %s: %s", entry.path, exc)
                    broken = previous or SessionInfo(id=entry.id, slug=entry.slug)
                    broken.state = "damaged"
                    changed.append(broken)
            if len(changed) >= _BATCH:
                self.upsert(changed, docs, replace)
                changed, docs, replace = [], {}, []
            if progress is not None and n % 256 == 0:
                progress(n, len(files))
        self.upsert(changed, docs, replace)
        gone = [i for i in known if i not in seen]
        stats["removed"] = len(gone)
        self.remove(gone)
        if progress is not None:
            progress(len(files), len(files))
        return stats

    def take_in(self, entry: FileEntry) -> tuple[SessionInfo | None, SessionInfo, list[str]] | None:
        """Index a transcript another program changed; None when the index already has it.
        Returns the summary before, the summary now and the kinds of the new events."""
        before = self.get(entry.id)
        if before is not None and (before.file_size, before.slug) == (entry.size, entry.slug):
            return None
        grown = before is not None and before.slug == entry.slug and entry.size >= before.offset
        previous = replace(before, bad_lines=list(before.bad_lines)) if grown and before else None
        info, docs = summarize_file(entry, previous)
        self.upsert([info], {entry.id: docs}, [] if grown else [entry.id])
        kinds = sorted({_EVENT_KIND.get(doc.kind, doc.kind) for doc in docs})
        return before, info, kinds

    def refresh_memory(self, keys: Iterable[tuple[str, str]], load: MemoryDoc) -> None:
        """Index memory files again (``load`` reads one; None when it is gone)."""
        with self._tx():
            for scope, name in keys:
                doc = load(scope, name)
                if doc is None:
                    search.drop_memory(self.db, scope, name)
                else:
                    search.upsert_memory(self.db, doc)

    def sync_memory(self, etags: dict[tuple[str, str], str], load: MemoryDoc) -> int:
        """Bring the memory index in line with ``etags`` (every live file's); return how
        many documents changed."""
        indexed = search.memory_etags(self.db)
        changed = [key for key, etag in etags.items() if indexed.get(key) != etag]
        gone = [key for key in indexed if key not in etags]
        self.refresh_memory([*changed, *gone], load)
        return len(changed) + len(gone)

    def all(self) -> list[SessionInfo]:
        return [_info(r) for r in self.db.execute(f"SELECT {', '.join(_COLUMNS)} FROM sessions")]

    def get(self, session_id: str) -> SessionInfo | None:
        row = self.db.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        return _info(row) if row else None

    def page(
        self,
        *,
        repo_root: str | None,
        state: str | None,
        limit: int,
        after: tuple[str, str] | None,
    ) -> list[SessionInfo]:
        where = []
        args: list[Any] = []
        if repo_root is not None:
            where.append("repo_root = ?")
            args.append(repo_root)
        if state is not None:
            where.append("state = ?")
            args.append(state)
        if after is not None:
            where.append("(updated_at, id) < (?, ?)")
            args.extend(after)
        sql = f"SELECT {', '.join(_COLUMNS)} FROM sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated_at DESC, id DESC LIMIT ?"
        args.append(limit)
        return [_info(r) for r in self.db.execute(sql, args)]

    def projects(self) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT slug, repo_root, count(*), sum(events), max(updated_at) FROM sessions "
            "GROUP BY slug ORDER BY max(updated_at) DESC"
        )
        return [
            {"slug": s, "repo_root": r, "sessions": c, "events": e, "last_activity": u}
            for s, r, c, e, u in rows
        ]

    def count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM sessions").fetchone()[0])


class _Tx:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


MemoryDoc = Callable[[str, str], "dict[str, Any] | None"]  # (scope, name) -> document or None


class CatalogWorker:
    """Owns the catalog on one thread; writers hand it summaries and changed memory,
    which it writes shortly after (and always before the next read)."""

    def __init__(self, folder: Path, locate: Callable[[str, str], Path]) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aster-index")
        self.catalog: Catalog = self.executor.submit(Catalog, folder).result()
        self.locate = locate
        self.memory_doc: MemoryDoc | None = None  # set once memory is loaded
        self._dirty: dict[str, SessionInfo] = {}
        self._removed: set[str] = set()
        self._memory: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._ticker = threading.Thread(target=self._tick, name="aster-index-tick", daemon=True)
        self._ticker.start()

    def mark(self, info: SessionInfo) -> None:
        """Record a session's new summary; written before the next read (any thread)."""
        with self._lock:
            self._dirty[info.id] = info
            self._removed.discard(info.id)
        self._wake.set()

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._dirty.pop(session_id, None)
            self._removed.add(session_id)
        self._wake.set()

    def mark_memory(self, scope: str, name: str) -> None:
        """A memory file changed (or went away): index it again before the next read."""
        with self._lock:
            self._memory.add((scope, name))
        self._wake.set()

    def _tick(self) -> None:
        """Flush once writes pause, so the index stays current without a reader.

        Indexing competes with appends for the processor, so during a burst of writes it
        waits (up to ``FLUSH_MAX_DELAY``) and then takes the whole burst in one pass; a
        read flushes first anyway, so nobody ever sees a stale index."""
        while not self._closed:
            self._wake.wait()
            if self._closed:
                return
            self._wake.clear()
            first = time.monotonic()
            while time.monotonic() - first < FLUSH_MAX_DELAY and not self._closed:
                time.sleep(FLUSH_QUIET)
                if not self._wake.is_set():
                    break  # no write during the pause
                self._wake.clear()
            try:
                self.executor.submit(self.flush)
            except RuntimeError:  # shut down
                return

    def flush(self) -> None:
        """Write pending summaries and memory; runs on the catalog thread."""
        with self._lock:
            dirty, self._dirty = self._dirty, {}
            removed, self._removed = self._removed, set()
            memory, self._memory = self._memory, set()
        try:
            if dirty:
                self.catalog.refresh(list(dirty.values()), self.locate)
            if removed:
                self.catalog.remove(removed)
            if memory and self.memory_doc is not None:
                self.catalog.refresh_memory(memory, self.memory_doc)
        except Exception as exc:
            # Derived data: keep what is pending and try again on the next flush.
            log.warning("index write failed (%s); will retry", exc)
            with self._lock:
                for sid, info in dirty.items():
                    self._dirty.setdefault(sid, info)
                self._removed |= removed - self._dirty.keys()
                self._memory |= memory

    def run(self, fn: Callable[[Catalog], Any]) -> Any:
        """Run ``fn(catalog)`` on the catalog thread after flushing (blocking)."""
        return self.executor.submit(self._call, fn).result()

    def _call(self, fn: Callable[[Catalog], Any]) -> Any:
        self.flush()
        return fn(self.catalog)

    def submit(self, fn: Callable[[Catalog], Any]) -> Any:
        """Like ``run`` but returns a concurrent future."""
        return self.executor.submit(self._call, fn)

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        try:
            self.executor.submit(self.flush).result()
            self.executor.submit(self.catalog.close).result()
        finally:
            self.executor.shutdown(wait=True)


def rebuild(home: Any, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Build the index of an opened (locked) home from its files alone, from scratch."""
    from ..storage.journal import Journal
    from ..storage.memory import MemoryStore
    from ..storage.transcripts import TranscriptStore, utc_now

    folder: Path = home.index
    for suffix in ("", "-wal", "-shm"):
        fs.unlink(f"{folder / 'catalog.sqlite3'}{suffix}")
    files = [
        FileEntry(sid, slug, path, stat.st_size, stat.st_mtime_ns)
        for sid, slug, path, stat in TranscriptStore(home).scan()
    ]
    catalog = Catalog(folder)
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
