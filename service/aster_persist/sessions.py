"""Sessions: the transcript store, its group committer and its catalog behind one async API.

Mutations go to the writer thread (through the committer); listings go to the catalog
thread; reads of one transcript go to a worker thread. The event loop never touches
the disk.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING, Any

import orjson

from . import importers
from .errors import Invalid, SessionExists, SessionNotFound, UnsafePath
from .feed import APPENDED, Feed
from .index import search
from .index.catalog import Catalog, CatalogWorker, FileEntry, decode_cursor, encode_cursor
from .index.text import Query
from .storage import fs
from .storage.blobs import BlobStore
from .storage.commit import GroupCommitter
from .storage.home import ULID_RE, Home, normalize_repo_root, project_slug
from .storage.journal import Journal
from .storage.jsonl import parse, remove_leftover_temps
from .storage.summary import SessionInfo
from .storage.transcripts import (
    AppendRequest,
    AppendResult,
    Clock,
    Location,
    TranscriptStore,
    utc_now,
)

log = logging.getLogger("aster_persist")
TAIL_STEP = 16 * 1024  # bytes a session tail reads back at a time to find where it starts


@dataclass
class Page:
    items: list[SessionInfo]
    next_cursor: str | None


if TYPE_CHECKING:
    from .learning.learner import Learner


class Sessions:
    def __init__(
        self,
        home: Home,
        *,
        durability: str = "fsync",
        clock: Clock = utc_now,
        max_event_bytes: int = 4 * 1024 * 1024,
        open_files: int = 256,
        sync_interval: float = 0.2,
        journal: Journal | None = None,
        blob_threshold: int = 64 * 1024,
    ) -> None:
        self.home = home
        self.blobs = BlobStore(home.root / "blobs", blob_threshold)
        self.catalog = CatalogWorker(home.index, home.session_path)
        self.store = TranscriptStore(
            home,
            durability=durability,
            clock=clock,
            max_event_bytes=max_event_bytes,
            open_files=open_files,
            on_change=self.catalog.mark,
            on_remove=self.catalog.forget,
        )
        self.committer = GroupCommitter(self.store, sync_interval=sync_interval)
        self.journal = journal
        self.feed: Feed | None = None  # set once the event loop runs
        self.learner: Learner | None = None  # set when learning is configured
        self.ready = asyncio.Event()
        self.progress = {"done": 0, "total": 0}
        self.catch_up_stats: dict[str, Any] = {}
        self._catch_up: asyncio.Task[None] | None = None

    async def start(self, memory_etags: dict[tuple[str, str], str] | None = None) -> None:
        """Find every session, then catch the catalog up in the background (and the
        memory index, from every live memory file's ETag)."""
        started = time.perf_counter()
        removed = await asyncio.to_thread(remove_leftover_temps, self.home.root)
        if removed:
            log.warning("removed %d temporary files left by an interrupted rewrite", removed)
        found = await self.committer.call(self.store.scan)
        files = [
            FileEntry(sid, slug, path, stat.st_size, stat.st_mtime_ns)
            for sid, slug, path, stat in found
        ]
        self.progress["total"] = len(files)
        self.committer.start()
        await self._journal_unrecorded(found)

        def report(done: int, total: int) -> None:
            self.progress["done"] = done

        async def catch_up() -> None:
            try:
                future = self.catalog.submit(lambda catalog: catalog.catch_up(files, report))
                stats = await asyncio.wrap_future(future)
                if memory_etags is not None and self.catalog.memory_doc is not None:
                    load = self.catalog.memory_doc
                    stats["memory"] = await asyncio.wrap_future(
                        self.catalog.submit(lambda c: c.sync_memory(memory_etags, load))
                    )
                stats["seconds"] = round(time.perf_counter() - started, 3)
                self.catch_up_stats = stats
                log.info("catalog caught up: %s", stats)
            finally:
                self.ready.set()

        self._catch_up = asyncio.get_running_loop().create_task(catch_up())

    async def _journal_unrecorded(self, found: list[tuple[str, str, Path, Any]]) -> None:
        """Journal each session on disk that no entry says was created (a crash between
        its sync and its ``session.created`` line, or a file another program put here),
        so everything on disk is in the journal."""
        if self.journal is None:
            return
        for sid, slug, path, _stat in found:
            if sid in self.journal.sessions:
                continue
            try:
                header = parse(await asyncio.to_thread(fs.read_bytes, path, 0, 65536)).lines[:1]
            except (OSError, UnsafePath):
                continue
            root = header[0].get("repo_root") if header else None
            await self._record(
                "session.created",
                sid,
                {"repo_root": root, "by": "found at start, with no journal entry"},
                slug=slug,
                actor="watcher",
            )

    async def close(self) -> None:
        try:
            if self._catch_up is not None:
                await self._catch_up
        finally:  # whatever became of the index, the transcripts are synced and closed
            await self.committer.close()
            await asyncio.to_thread(self.catalog.close)

    # -- writes ----------------------------------------------------------------

    async def _record(
        self,
        op: str,
        session_id: str,
        detail: dict[str, Any],
        *,
        slug: str | None = None,
        actor: str = "api",
        before: Any = None,
    ) -> None:
        """Journal a lifecycle change (durably, on the writer thread) once it is done."""
        if self.journal is None:
            return
        if slug is None:
            where = self.store.locations.get(session_id)
            slug = where.slug if where is not None else "unknown"
        await self.committer.call(
            self.journal.record,
            op,
            scope=f"project:{slug}",
            actor=actor,
            session=session_id,
            detail=detail,
            before=before,
        )

    async def create(self, *, actor: str = "api", **fields: Any) -> dict[str, Any]:
        """Create a session. A create retried with the same ``session_id`` and the same
        fields, once the first one made the file, answers with that session's header
        (``replayed``) and makes sure it is journaled."""
        replayed = False
        try:
            header = await self._create(fields)
        except SessionExists:
            same = await self._same_create(fields)
            if same is None:
                raise
            header, replayed = same, True
        if self.journal is None or header["id"] not in self.journal.sessions:
            await self._record(
                "session.created",
                header["id"],
                {"repo_root": header["repo_root"]},
                slug=project_slug(header["repo_root"]),
                actor=actor,
            )
        return {**header, "replayed": True} if replayed else header

    async def _same_create(self, fields: dict[str, Any]) -> dict[str, Any] | None:
        """The header of the live session ``fields`` would create again, when every
        field it asks for is what that session was created with; None otherwise."""
        sid = fields.get("session_id")
        where = self.store.locations.get(sid) if isinstance(sid, str) else None
        if where is None or where.trashed:
            return None
        lines, _raw, _info = await self.read(str(sid), inline=False)
        header = lines[0] if lines else {}
        wanted = {
            "repo_root": normalize_repo_root(str(fields.get("repo_root"))),
            **{k: fields[k] for k in ("cwd", "model", "title") if fields.get(k) is not None},
            **{k: v for k, v in (fields.get("extra") or {}).items()},
        }
        if fields.get("aster_version"):
            wanted["aster_version"] = fields["aster_version"]
        if any(header.get(key) != value for key, value in wanted.items()):
            return None
        return header

    async def _create(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Write the header and keep the new file open for its first append."""
        header, writer = await self.committer.call(self.store.create, **fields)
        self.store.install(header["id"], writer)
        return header

    async def append(
        self,
        session_id: str,
        events: list[dict[str, Any]],
        *,
        key: str | None = None,
        if_match: int | None = None,
        learn: bool = True,
    ) -> AppendResult:
        """Append durably; ``learn`` lets a completed turn queue an extraction (imports of
        old history do not: ``POST /v1/sessions/{id}/extract`` does that on demand)."""
        if self.blobs.needed(events):  # large contents go to blobs first, synced
            events = await asyncio.to_thread(self.blobs.extract, events)
        result = await self.committer.append(AppendRequest(session_id, events, key, if_match))
        if not result.replayed:
            if self.feed is not None and self.feed.subscribers:
                kinds = sorted({str(e.get("type")) for e in events})
                self.notify(session_id, result.first_seq, result.last_seq, kinds)
            if self.learner is not None and learn:
                self.learner.appended(session_id, events, result.first_seq)
        return result

    def notify(self, session_id: str, first: int, last: int, kinds: list[str]) -> None:
        """Tell the change feed that a session's events ``first``..``last`` are durable."""
        if self.feed is None:
            return
        where = self.store.locations.get(session_id)
        slug = where.slug if where is not None else "unknown"
        self.feed.publish(
            APPENDED,
            {
                "session_id": session_id,
                "scope": f"project:{slug}",
                "first_seq": first,
                "last_seq": last,
                "kinds": kinds,
            },
        )

    async def rename(
        self,
        session_id: str,
        title: str,
        *,
        detail: dict[str, Any] | None = None,
        if_match: int | None = None,
    ) -> AppendResult:
        _lines, _raw, info = await self.read(session_id)
        result = await self.append(
            session_id, [{"type": "title", "title": title, "source": "user"}], if_match=if_match
        )
        await self._record(
            "session.renamed",
            session_id,
            {"title": title, "seq": result.last_seq, **(detail or {})},
            before={"title": info.title, "title_source": info.title_source},
        )
        return result

    async def revert(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Undo a session lifecycle change; the undo is journaled as its own change."""
        op, sid = entry.get("op"), entry.get("session")
        if not isinstance(sid, str):
            raise Invalid("the journal entry names no session")
        detail = {"reverted": entry["id"]}
        if op in ("session.deleted", "session.pruned"):
            await self.restore(sid, detail=detail)
        elif op in ("session.restored", "session.created", "session.imported"):
            await self.delete(sid, reason=f"revert of {entry['id']}", detail=detail)
        elif op == "session.renamed":
            previous = (entry.get("before") or {}).get("title")
            if not previous:
                raise Invalid("the session had no title before; rename it instead")
            await self.rename(sid, previous, detail=detail)
        else:
            raise Invalid(f"a {op} entry cannot be reverted: a purged session is gone for good")
        return {"reverted": entry["id"], "session": sid}

    async def delete(
        self,
        session_id: str,
        *,
        purge: bool = False,
        reason: str = "deleted",
        op: str = "",
        only_trashed: bool = False,
        detail: dict[str, Any] | None = None,
        if_match: int | None = None,
    ) -> None:
        """Move to the trash, or delete for good; appends waiting for a sync finish first.
        With ``if_match``, only while the session's last seq is that (else 412)."""
        if only_trashed:
            where = self.store.locations.get(session_id)
            if where is None or not where.trashed:
                return
        else:
            where = await self.committer.detach(session_id, if_match=if_match)
        if purge:
            deleted = await self.committer.call(
                self.store.purge, session_id, where, only_trashed=only_trashed
            )
            if not deleted:
                return
            await self._record(
                op or "session.purged",
                session_id,
                {"reason": reason, **(detail or {})},
                slug=where.slug,
            )
        else:
            await self.committer.call(self.store.trash, session_id, where, reason)
            await self._record(
                op or "session.deleted",
                session_id,
                {"reason": reason, **(detail or {})},
                slug=where.slug,
            )

    async def restore(self, session_id: str, *, detail: dict[str, Any] | None = None) -> None:
        await self.committer.call(self.store.restore, session_id)
        await self._record("session.restored", session_id, detail or {})

    # -- reads -------------------------------------------------------------------

    async def read(
        self, session_id: str, *, inline: bool = True
    ) -> tuple[list[dict[str, Any]], list[bytes], SessionInfo]:
        """The acknowledged lines (large contents put back unless ``inline`` is False),
        the bytes of each, and the summary."""

        def read() -> tuple[list[dict[str, Any]], list[bytes], SessionInfo]:
            parsed, info = self.store.read(session_id)
            lines, raw = parsed.lines, parsed.raw
            if inline:
                lines, changed = self.blobs.inline(lines)
                if changed:
                    raw = [orjson.dumps(line) for line in lines]
            return lines, raw, info

        return await asyncio.to_thread(read)

    async def export(self, session_id: str) -> bytes:
        """The transcript as stored, with large contents put back in place."""

        def export() -> bytes:
            data = self.store.export_bytes(session_id)
            if b'"content_ref"' not in data:
                return data
            lines, _changed = self.blobs.inline(parse(data).lines)
            return b"".join(orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE) for line in lines)

        return await asyncio.to_thread(export)

    # -- what session tails read (worker threads) ----------------------------------------

    def read_piece(
        self, session_id: str, offset: int, until: int
    ) -> tuple[list[dict[str, Any]], int]:
        """The acknowledged lines from byte ``offset`` to ``until``, large contents put
        back, and the offset after them."""
        lines, end = self.store.read_tail(session_id, offset, until)
        return self.blobs.inline(lines)[0], end

    def line_before(self, session_id: str, seq: int, before: int) -> int:
        """A line boundary, at most ``before``, that no event past ``seq`` comes before:
        pieces are read back from ``before`` in doubling steps, so what is read is about
        twice what follows that line, not the transcript."""
        step = TAIL_STEP
        while True:
            start = max(0, before - step)
            lines, end = self.store.read_tail(session_id, start, min(before, start + TAIL_STEP))
            seqs = [s for line in lines if isinstance(s := line.get("seq"), int)]
            if seqs and seqs[-1] <= seq:
                return end
            if start == 0:
                return 0
            step *= 2

    def tail_end(self, session_id: str) -> tuple[int, int]:
        """The offset past the last acknowledged line, and the seq of the last event
        (-1: none), read back from the end of the file."""
        where = self.store.locations.get(session_id)
        if where is None or where.trashed:
            raise SessionNotFound(f"no session {session_id}")
        stat = fs.lstat(self.home.session_path(where.slug, session_id))
        if stat is None:
            raise SessionNotFound(f"no session {session_id}")
        size = stat.st_size
        step = TAIL_STEP
        while True:
            lines, end = self.store.read_tail(session_id, max(0, size - step), size)
            seqs = [s for line in lines if isinstance(s := line.get("seq"), int)]
            if seqs or step >= size:
                return end, seqs[-1] if seqs else -1
            step *= 2

    async def listing(
        self,
        *,
        repo_root: str | None = None,
        state: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page:
        after = None
        if cursor:
            after = decode_cursor(cursor)
            if after is None:
                raise Invalid("cursor is not one this service handed out")
        # resolving a worktree reads <repo_root>/.git: a thread, never the event loop
        root = (
            await asyncio.to_thread(normalize_repo_root, repo_root)
            if repo_root is not None
            else None
        )
        await self.ready.wait()
        items = await asyncio.wrap_future(
            self.catalog.submit(
                lambda c: c.page(repo_root=root, state=state, limit=limit + 1, after=after)
            )
        )
        next_cursor = None
        if len(items) > limit:
            items = items[:limit]
            last = items[-1]
            next_cursor = encode_cursor(last.updated_at, last.id)
        return Page(items, next_cursor)

    # -- import -------------------------------------------------------------------

    async def import_file(
        self, data: bytes, *, format: str = "auto", repo_root: str | None = None
    ) -> dict[str, Any]:
        """Sessions from a file another tool wrote (or an export of this one). Every
        conversation is read and checked before anything is written, then all are written
        whole at once; one already here (same source, so same id) is reported, not copied.
        """
        found, conversations = await asyncio.to_thread(importers.read, data, format)
        for conversation in conversations:
            if not (repo_root or conversation.source.get("repo_root") or conversation.cwd):
                raise importers.ImportProblem(
                    "the file does not say which project it belongs to; pass repo_root"
                )
        written = await self.committer.call(self._write_imported, found, conversations, repo_root)
        results: list[dict[str, Any]] = []
        for conversation, done in zip(conversations, written, strict=True):
            sid = conversation.id()
            if done is None:
                results.append({"id": sid, "status": "already_imported"})
                continue
            _header, info = done
            results.append({"id": sid, "status": "imported", "events": info.events})
            if info.events:
                kinds = sorted({str(e.get("type")) for e in conversation.events})
                self.notify(sid, 1, info.last_seq, kinds)
        return {
            "format": found,
            "imported": sum(r["status"] == "imported" for r in results),
            "already_imported": sum(r["status"] == "already_imported" for r in results),
            "sessions": results,
        }

    def _write_imported(
        self,
        found: str,
        conversations: list[importers.Conversation],
        repo_root: str | None,
    ) -> list[tuple[dict[str, Any], SessionInfo] | None]:
        """Write every new conversation of an import whole, then journal them with one
        sync (writer thread, so a concurrent import of the same file finds them)."""
        sessions = []
        for conversation in conversations:
            events = conversation.events
            if self.blobs.needed(events):  # large contents go to blobs first, synced
                events = self.blobs.extract(events)
            sessions.append(
                (
                    _header_fields(found, conversation, repo_root),
                    _keyed_runs(events, conversation.keys),
                )
            )
        written = self.store.create_whole(sessions)
        if self.journal is not None:
            new = [done[0] for done in written if done is not None]
            for n, header in enumerate(new, 1):
                source = header.get("x_import") or {}
                self.journal.record(
                    "session.imported",
                    scope=f"project:{project_slug(header['repo_root'])}",
                    session=header["id"],
                    detail={
                        "repo_root": header["repo_root"],
                        "format": source.get("format", "native"),
                    },
                    sync=n == len(new),
                )
        return written

    # -- changes made by other programs ---------------------------------------------

    async def reconcile(self, paths: list[Path]) -> None:
        """Take in transcripts another program appended to (or added): index them, tell
        the feed, and journal it as the watcher. This daemon's own appends are known by
        their size and left alone."""
        root = Path(os.path.realpath(self.home.sessions))
        for path in sorted(set(paths)):
            path = Path(os.path.realpath(path.parent), path.name)  # a link is not followed
            sid, slug = path.name[:-6], path.parent.name
            if path.suffix != ".jsonl" or path.parent.parent != root or not ULID_RE.match(sid):
                continue
            try:
                stat = fs.lstat(self.home.sessions / slug / path.name)
            except UnsafePath:
                stat = None  # reported once; never read
            if stat is not None and not S_ISREG(stat.st_mode):
                fs.refuse(self.home.sessions / slug / path.name)
                stat = None
            if stat is None:  # gone, or a link now: the open file is never written again
                if self.store.writer(sid) is not None:
                    await self.committer.quiesce(sid)
                    self.store.release(sid)
                continue
            writer = self.store.writer(sid)
            if writer is None and self.store.placed.get(sid) == (stat.st_size, stat.st_mtime_ns):
                continue  # a file of our own import, as we wrote it
            if writer is not None:
                if stat.st_size == writer.size:
                    continue  # our own append
                await self.committer.quiesce(sid)
                self.store.release(sid)
            where = self.store.locations.get(sid)
            if where is None:
                self.store.locations[sid] = Location(slug)
            elif where.trashed or where.slug != slug:
                continue
            entry = FileEntry(sid, slug, path, stat.st_size, stat.st_mtime_ns)
            taken = await asyncio.wrap_future(self.catalog.submit(partial(_take_in, entry)))
            if taken is None:
                continue
            before, info, kinds = taken
            if info.state == "damaged" and (before is None or before.state != "damaged"):
                await self._record(
                    "session.damaged",
                    sid,
                    {"bad_lines": info.bad_lines[:20], "by": "another program"},
                    slug=slug,
                    actor="watcher",
                )
            first = before.last_seq + 1 if before is not None else 1
            if info.last_seq < first:
                continue  # nothing readable was added
            self.notify(sid, first, info.last_seq, kinds)
            await self._record(
                "session.appended",
                sid,
                {"first_seq": first, "last_seq": info.last_seq, "by": "another program"},
                slug=slug,
                actor="watcher",
                before={"bytes": before.file_size if before is not None else 0},
            )

    async def search(
        self, query: Query, *, limit: int, cursor: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Transcript hits for ``query``, best first; sees every acknowledged append."""
        if query.repo is not None:
            query.repo = await asyncio.to_thread(normalize_repo_root, query.repo)
        await self.ready.wait()
        return await asyncio.wrap_future(
            self.catalog.submit(
                lambda c: search.search_docs(c.db, query, limit=limit, cursor=cursor)
            )
        )

    async def search_memory(
        self, query: Query, *, scopes: list[str], kinds: tuple[str, ...], k: int
    ) -> list[dict[str, Any]]:
        """Memory hits for ``query`` in ``scopes``: relevance raised by recency."""
        await self.ready.wait()
        now = self.store.clock()
        return await asyncio.wrap_future(
            self.catalog.submit(
                lambda c: search.search_memory(
                    c.db, query, scopes=scopes, kinds=kinds, now=now, k=k
                )
            )
        )

    async def latest(self, repo_root: str) -> SessionInfo:
        page = await self.listing(repo_root=repo_root, limit=1)
        if not page.items:
            raise SessionNotFound(f"no session for {repo_root}")
        return page.items[0]

    async def projects(self) -> list[dict[str, Any]]:
        await self.ready.wait()
        projects: list[dict[str, Any]] = await asyncio.wrap_future(
            self.catalog.submit(lambda c: c.projects())
        )
        return projects

    async def prune(
        self,
        *,
        older_than_days: float | None,
        keep_latest: int | None,
        dry_run: bool,
        purge_trash_older_than_days: float | None,
        now: float | None = None,
    ) -> dict[str, Any]:
        """Trash old sessions (by activity, or beyond the newest N per project); purge old trash."""
        await self.ready.wait()
        infos: list[SessionInfo] = await asyncio.wrap_future(self.catalog.submit(lambda c: c.all()))
        moment = self.store.clock().timestamp() if now is None else now
        chosen: dict[str, dict[str, Any]] = {}
        if older_than_days is not None:
            from datetime import UTC, datetime, timedelta

            cutoff = (
                datetime.fromtimestamp(moment, UTC) - timedelta(days=older_than_days)
            ).isoformat()
            cutoff = cutoff.replace("+00:00", "Z")
            for info in infos:
                if info.updated_at < cutoff:
                    chosen[info.id] = _pruned(info, f"no activity since {info.updated_at}")
        if keep_latest is not None:
            by_project: dict[str, list[SessionInfo]] = {}
            for info in infos:
                by_project.setdefault(info.slug, []).append(info)
            for group in by_project.values():
                group.sort(key=lambda i: (i.updated_at, i.id), reverse=True)
                for info in group[keep_latest:]:
                    chosen.setdefault(info.id, _pruned(info, f"beyond the newest {keep_latest}"))
        purge: list[str] = []
        if purge_trash_older_than_days is not None:
            cutoff_s = moment - purge_trash_older_than_days * 86400
            purge = await self.committer.call(self.store.trashed_before, cutoff_s)
        trashed = sorted(chosen.values(), key=lambda item: item["updated_at"])
        if not dry_run:
            for item in list(trashed):
                try:
                    await self.delete(item["id"], reason=item["reason"], op="session.pruned")
                except SessionNotFound:  # deleted by someone else since the listing
                    trashed.remove(item)
            for sid in list(purge):
                try:
                    await self.delete(
                        sid, purge=True, reason="trash older than the limit", only_trashed=True
                    )
                except SessionNotFound:
                    purge.remove(sid)

        return {"dry_run": dry_run, "trashed": trashed, "purged": purge}


def _header_fields(
    found: str, conversation: importers.Conversation, repo_root: str | None
) -> dict[str, Any]:
    """What ``create`` takes for a session an import makes of ``conversation``."""
    root = repo_root or conversation.source.get("repo_root") or conversation.cwd
    extra = (
        {k: v for k, v in conversation.source.items() if k != "repo_root"}
        if found == "native"
        else {
            "x_import": {
                "format": found,
                "fingerprint": conversation.fingerprint,
                **conversation.source,
            }
        }
    )
    return {
        "repo_root": str(root),
        "session_id": conversation.id(),
        "cwd": conversation.cwd,
        "model": conversation.model,
        "title": conversation.title,
        "created_at": conversation.created_at,
        "aster_version": conversation.source.get("aster_version") if found == "native" else None,
        "extra": {k: v for k, v in extra.items() if k != "aster_version"},
    }


def _keyed_runs(
    events: list[dict[str, Any]], keys: list[str | None] | None
) -> list[tuple[list[dict[str, Any]], str | None]]:
    """Events to append, split where their idempotency key changes (a native export's
    keyed appends come back as appends with those keys, so a retry is still known)."""
    if not events:
        return []
    if not keys or not any(keys):
        return [(events, None)]
    runs: list[tuple[list[dict[str, Any]], str | None]] = []
    for event, key in zip(events, keys, strict=True):
        if runs and runs[-1][1] == key:
            runs[-1][0].append(event)
        else:
            runs.append(([event], key))
    return runs


def _pruned(info: SessionInfo, reason: str) -> dict[str, Any]:
    return {
        "id": info.id,
        "repo_root": info.repo_root,
        "title": info.title,
        "updated_at": info.updated_at,
        "reason": reason,
    }


def _take_in(entry: FileEntry, catalog: Catalog) -> Any:
    return catalog.take_in(entry)
