"""The SQLite side of the catalog: opening (rebuilt when unusable), upserts of summaries
and their search documents, catching up with the files, and the queries listing needs.

``Catalog`` is used from one thread only; every write is one transaction, by absolute
value, so replaying one is harmless.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ...errors import UnsafePath
from ...storage import fs
from ...storage.jsonl import parse, read_bytes
from ...storage.summary import SessionInfo
from ...storage.transcripts.records import Written, written_lines
from .. import search
from ..ranking import NUMBER_OF
from ..sqlite import sqlite3
from ..text import Doc, Query, docs_at
from .files import GONE, FileEntry, continues, read_files, sized, summarize_file
from .listing import API_SOURCE, NEWEST, Listing
from .schema import COLUMNS, SCHEMA, SCHEMA_VERSION, SECRETS, UPSERT, info_of, row_of
from .texts import texts_of

if TYPE_CHECKING:  # the semantic extra's
    from ..rerank import Reranker
    from ..semantic import Vectors

log = logging.getLogger("aster_persist")

VECTORS = "vectors.bin"  # semantic search's vectors, kept beside the catalog
_BATCH = 500  # files (or dirty sessions) per transaction
_EVENT_KIND = {"tool_call": "message", "tool_result": "message"}  # document kind -> event type
_CHUNK = 2 << 20  # bytes of a transcript read at once when indexing what was appended


def _writable_again(info: SessionInfo) -> SessionInfo:
    """A session made read-only by a failed sync takes appends again after a restart."""
    info.state = "damaged" if info.bad_lines else "ok"
    return info


WAL_KEPT = 4 << 20  # bytes of write-ahead log kept after a checkpoint (it grows in between)
FREE_KEPT = 64  # free pages (4 KB each) the file keeps before they are given back


class Catalog:
    """The SQLite side; used from one thread only."""

    def __init__(self, folder: Path, locate: Callable[[str, str], Path]) -> None:
        self.path = folder / "catalog.sqlite3"
        self.locate = locate  # a session's transcript, by its project and id
        self.db = self._open()
        self.vectors: Vectors | None = None  # semantic search's, when on
        self.reranker: Reranker | None = None  # ... and its reranker

    def _open(self) -> sqlite3.Connection:
        for attempt in range(2):
            for suffix in ("", "-wal", "-shm"):  # SQLite opens them by name: none is a link
                fs.check(f"{self.path}{suffix}")
            try:
                db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
                db.execute("PRAGMA auto_vacuum=INCREMENTAL")  # a new file's (see give_back)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=OFF")  # derived data: rebuilt if lost
                db.execute(f"PRAGMA journal_size_limit={WAL_KEPT}")  # not an import's WAL
                version = db.execute("PRAGMA user_version").fetchone()[0]
                if version not in (0, SCHEMA_VERSION):
                    raise sqlite3.DatabaseError(f"schema version {version}")
                db.executescript(SCHEMA)
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
        with contextlib.suppress(sqlite3.Error):  # derived data: a next start tidies it
            self.give_back()
        self.db.close()

    def give_back(self) -> int:
        """Give the pages the index no longer uses (merged full-text segments, removed
        sessions) back to the file system once more than ``FREE_KEPT`` are free; how many."""
        free = int(self.db.execute("PRAGMA freelist_count").fetchone()[0])
        if free <= FREE_KEPT:
            return 0
        self.db.execute("PRAGMA incremental_vacuum").fetchall()  # a row a page: step them all
        return free

    def fresh_vectors(self, query: Query, budget: float = 0.1) -> Vectors | None:
        """Semantic search's vectors (None when it is off), those waiting embedded for
        at most ``budget`` seconds first if ``query`` can use them (the rest follow in
        the background)."""
        if self.vectors is not None and query.words is not None:
            self.vectors.catch_up(self.db, self.texts, budget)
        return self.vectors

    def upsert(
        self,
        infos: Iterable[SessionInfo],
        docs: dict[str, list[Doc]] | None = None,
        replace: Iterable[str] = (),
    ) -> None:
        """Write summaries and their sessions' new search documents in one transaction;
        sessions in ``replace`` lose their old documents first."""
        rows = [row_of(info) for info in infos]
        with self._tx():
            for session in replace:
                search.drop_docs(self.db, session)
            self.db.executemany(UPSERT, rows)
            for session, session_docs in (docs or {}).items():
                search.insert_docs(self.db, session, session_docs)

    def texts(self, rowids: list[int]) -> dict[int, str]:
        """The text of each document (by its number) as it was indexed, read back from its
        line in the transcript; one whose line is gone or changed is left out."""
        return texts_of(self.db, self.locate, rowids)

    def refresh(
        self,
        infos: list[SessionInfo],
        stop: Callable[[], bool] | None = None,
        held: dict[str, list[Written]] | None = None,
    ) -> list[SessionInfo]:
        """Write summaries handed over by the store, indexing the bytes each one covers
        that the index has not seen: the lines as the daemon wrote them when ``held``
        has all of them for the session, else read back from the file (the new bytes).

        ``stop`` is asked after each session whose text was indexed: once it says so,
        the rest are left as they were and returned (written by a later call)."""
        indexed: dict[str, tuple[int, int]] = {}
        for start in range(0, len(infos), _BATCH):
            ids = [info.id for info in infos[start : start + _BATCH]]
            marks = ", ".join("?" * len(ids))
            rows = self.db.execute(
                f"SELECT id, offset, last_seq FROM sessions WHERE id IN ({marks})", ids
            )
            indexed.update({sid: (offset, last) for sid, offset, last in rows})
        done = len(infos)
        with self._tx():
            for n, info in enumerate(infos):
                offset, last_seq = indexed.get(info.id, (0, -1))
                if info.offset == offset:
                    continue
                if stop is not None and stop():
                    done = n
                    break
                lines, starts, sizes = written_lines(
                    held.get(info.id) if held else None, offset, info.offset
                )
                if lines and lines[0].get("seq") == last_seq + 1:
                    docs = docs_at(lines, starts, sizes, info.created_at)
                    search.insert_docs(self.db, info.id, docs)
                    continue
                if info.offset < offset or not self._index_range(info, offset, last_seq + 1):
                    # shrunk, or the new bytes do not continue what was indexed: read it all
                    search.drop_docs(self.db, info.id)
                    self._index_range(info, 0, None)
            self.db.executemany(UPSERT, [row_of(info) for info in infos[:done]])
        return infos[done:]

    def _index_range(self, info: SessionInfo, start: int, first_seq: int | None) -> bool:
        """Index the lines of ``[start, info.offset)``, a few megabytes at a time; False
        (nothing indexed) unless they are whole lines that begin with seq ``first_seq``
        (when it is given). The file is looked for again if it changed form meanwhile."""
        pos = start
        locate = self.locate
        path = locate(info.slug, info.id)
        while pos < info.offset:
            try:
                data = read_bytes(path, pos, min(info.offset, pos + _CHUNK))
            except FileNotFoundError:
                if locate(info.slug, info.id) == path:
                    return True  # moved or deleted: left as indexed
                path = locate(info.slug, info.id)  # compressed, or made plain: read on
                continue
            except UnsafePath:
                return True  # a link now (refused): left as indexed
            parsed = parse(data, base=pos)
            if first_seq is not None and pos == start and not continues(parsed, pos, first_seq):
                return False
            sizes = [len(raw) + 1 for raw in parsed.raw]
            docs = docs_at(parsed.lines, parsed.starts, sizes, info.created_at)
            search.insert_docs(self.db, info.id, docs)
            if parsed.good_end <= pos:
                break  # a torn line where a whole one was promised: keep what is whole
            pos = parsed.good_end
        return True

    def remove(self, ids: Iterable[str]) -> None:
        with self._tx():
            for session in ids:
                search.drop_docs(self.db, session, forget=True)
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
        jobs: list[tuple[FileEntry, SessionInfo | None, bool]] = []  # entry, previous, grown
        for entry in files:
            seen.add(entry.id)
            row = known.get(entry.id) or ()
            entry = sized(entry, row)
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
                jobs.append((entry, previous, grown))
        read = read_files([(entry, previous if grown else None) for entry, previous, grown in jobs])
        for n, ((entry, previous, grown), found) in enumerate(zip(jobs, read, strict=True), 1):
            if found == GONE:
                seen.discard(entry.id)
            elif isinstance(found, str):  # unreadable: listed as damaged, never skipped silently
                log.error("cannot read %s: %s", entry.path, found)
                broken = previous or SessionInfo(id=entry.id, slug=entry.slug)
                broken.state = "damaged"
                changed.append(broken)
            else:
                if previous is not None and (not grown or found[0].whole):
                    replace.append(entry.id)  # read again from the start
                changed.append(found[0])
                docs[entry.id] = found[1]
            if len(changed) >= _BATCH:
                self.upsert(changed, docs, replace)
                changed, docs, replace = [], {}, []
            if progress is not None and n % 256 == 0:
                progress(len(files) - len(jobs) + n, len(files))
        self.upsert(changed, docs, replace)
        gone = [i for i in known if i not in seen]
        stats["removed"] = len(gone)
        self.remove(gone)
        self.give_back()
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
        self.upsert([info], {entry.id: docs}, [entry.id] if info.whole and before else [])
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

    def idle_since(self, before: str) -> list[tuple[str, str, int]]:
        """Sessions whose last event is older than ``before`` (a timestamp): id, project
        slug and bytes, the longest idle first."""
        rows = self.db.execute(
            "SELECT id, slug, file_size FROM sessions WHERE updated_at < ? ORDER BY updated_at, id",
            (before,),
        )
        return [(str(i), str(slug), int(size)) for i, slug, size in rows]

    def sizes(self) -> list[tuple[str, str, str, str | None, int]]:
        """Every session's id, project slug and root, source tool and bytes of content."""
        rows = self.db.execute("SELECT id, slug, repo_root, source_tool, file_size FROM sessions")
        return [(str(i), str(s), str(r), t, int(n)) for i, s, r, t, n in rows]

    def all(self) -> list[SessionInfo]:
        return [info_of(r) for r in self.db.execute(f"SELECT {', '.join(COLUMNS)} FROM sessions")]

    def get(self, session_id: str) -> SessionInfo | None:
        row = self.db.execute(
            f"SELECT {', '.join(COLUMNS)}, {SECRETS} FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        return info_of(row) if row else None

    def secrets_of(self, session_id: str) -> int:
        """How many secrets the indexed text of a session held."""
        row = self.db.execute(
            f"SELECT coalesce(sum(secrets), 0) FROM docs WHERE session = {NUMBER_OF.format('?')} AND secrets > 0",
            (session_id,),
        ).fetchone()
        return int(row[0])

    def page(
        self,
        *,
        repo_root: str | None,
        state: str | None,
        limit: int,
        after: tuple[str, str] | None,
        parent: str | None = None,
        alias: str | None = None,
        listing: Listing = NEWEST,
    ) -> list[tuple[SessionInfo, Any]]:
        """A page of sessions in ``listing``'s order, each with its sort value."""
        where, args = listing.where()
        if repo_root is not None:  # its path, or its project at other paths (a team's copies)
            where.append("(repo_root = ? OR project_key = ?)")
            args += [repo_root, listing.project_key]
        if alias is not None:
            where.append("alias = ?")
            args.append(alias)
        if parent is not None:  # the sessions it started: their parent is its source
            where.append("parent_source = (SELECT source_key FROM sessions WHERE id = ?)")
            args.append(parent)
        if state is not None:
            where.append("state = ?")
            args.append(state)
        if after is not None:
            condition, values = listing.after(*after)
            where.append(condition)
            args.extend(values)
        sql = f"SELECT {', '.join(COLUMNS)}, {SECRETS}, {listing.key()} FROM sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY {listing.order()} LIMIT ?"
        args.append(limit)
        return [(info_of(r[:-1]), r[-1]) for r in self.db.execute(sql, args)]

    def by_alias(self, alias: str) -> SessionInfo | None:
        """The live session with this alias (the newest, should two ever have it)."""
        found = self.page(repo_root=None, state=None, limit=1, after=None, alias=alias)
        return found[0][0] if found else None

    def parents(self, infos: Iterable[SessionInfo]) -> dict[str, tuple[str, str | None]]:
        """Of each session another started, the id of that one and the call that did
        (None until the parent's result of it is in): by the child's id."""
        wanted = {i.parent_source: i for i in infos if i.parent_source}
        if not wanted:
            return {}
        marks = ", ".join("?" * len(wanted))
        rows = self.db.execute(
            f"SELECT source_key, id, stats FROM sessions WHERE source_key IN ({marks})",
            list(wanted),
        )
        found = {key: (sid, orjson.loads(stats).get("spawned", {})) for key, sid, stats in rows}
        out = {}
        for info in infos:
            if info.parent_source in found:
                sid, spawned = found[info.parent_source]
                out[info.id] = (sid, spawned.get(info.source_key or "") or None)
        return out

    def referring_to(self, session_id: str) -> list[str]:
        """The sessions whose header refers to events of ``session_id`` (its copies)."""
        rows = self.db.execute("SELECT id FROM sessions WHERE base = ?", (session_id,))
        return [str(sid) for (sid,) in rows]

    def begun_with(self, record: str) -> list[tuple[str, str | None, int]]:
        """The sessions whose first event came from the source record ``record``: id,
        created_at and events of each (what ``CatalogWorker.forked_from`` weighs)."""
        rows = self.db.execute(
            "SELECT id, created_at, events FROM sessions WHERE first_record = ?", (record,)
        )
        return [(str(sid), created, int(events)) for sid, created, events in rows]

    def children(self, info: SessionInfo) -> list[dict[str, Any]]:
        """The sessions a session started, oldest first, each with the call that did."""
        if not info.source_key:
            return []
        rows = self.db.execute(
            f"SELECT {', '.join(COLUMNS)} FROM sessions WHERE parent_source = ? "
            "ORDER BY created_at, id",
            (info.source_key,),
        )
        return [
            {
                "id": child.id,
                "title": child.title,
                "tool_call_id": info.stats.spawned.get(child.source_key or "") or None,
                "turns": child.stats.turns,
                "tool_errors": child.stats.tool_errors,
            }
            for child in map(info_of, rows)
        ]

    def projects(self) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT slug, repo_root, count(*), sum(events), max(updated_at) FROM sessions "
            "GROUP BY slug ORDER BY max(updated_at) DESC"
        )
        return [
            {"slug": s, "repo_root": r, "sessions": c, "events": e, "last_activity": u}
            for s, r, c, e, u in rows
        ]

    def facets(self) -> dict[str, list[dict[str, Any]]]:
        """What sessions can be filtered by, each value with how many sessions have it:
        the tools they came from (``api`` for none) and the models that wrote them."""
        tools = self.db.execute(
            f"SELECT coalesce(source_tool, '{API_SOURCE}'), count(*) FROM sessions "
            "GROUP BY 1 ORDER BY 2 DESC, 1"
        )
        models = self.db.execute(
            "SELECT value, count(*) FROM sessions, json_each(sessions.stats, '$.models') "
            "GROUP BY value ORDER BY 2 DESC, 1"
        )
        return {
            "source_tools": [{"value": v, "sessions": n} for v, n in tools],
            "models": [{"value": v, "sessions": n} for v, n in models],
        }

    def activity(self, repo_root: str | None, since: str) -> list[dict[str, Any]]:
        """Events per day (UTC) from the day ``since`` on, of one project or of all."""
        sql = (
            "SELECT day.key, sum(day.value) FROM sessions, json_each(sessions.stats, "
            "'$.days') AS day WHERE day.key >= ?"
        )
        args: list[Any] = [since]
        if repo_root is not None:
            sql += " AND repo_root = ?"
            args.append(repo_root)
        rows = self.db.execute(sql + " GROUP BY day.key ORDER BY day.key", args)
        return [{"day": day, "events": events} for day, events in rows]

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
