"""The sessions service: the transcript store, its writer thread and its catalog behind
one async API.

Mutations go to the single writer thread (the committer); listings go to the catalog
thread; reads of one transcript go to a worker thread. The event loop never touches
the disk. Each durable append is announced to the listeners ``app.py`` subscribed (the
change feed, the learner) as an ``Appended`` notice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import orjson

from ...errors import Conflict, Invalid, InvalidName, SessionExists, SessionNotFound
from ...index import search
from ...index.catalog import NEWEST, Catalog, FileEntry, Listing, imported
from ...index.fusion import MEMORY_RRF_K
from ...index.text import Query
from ...schemas.conditions import SeqCondition
from ...schemas.cursors import BadCursor, listing_cursor, read_listing_cursor
from ...schemas.journal import REQUEST_ACTOR
from ...schemas.names import project_slug
from ...storage import fs
from ...storage.home import normalize_repo_root
from ...storage.jsonl import parse, remove_leftover_temps
from ...storage.summary import SessionInfo
from ...storage.transcripts import AppendResult
from ...team.projects import ProjectKeys
from . import creation, outside, prune, usage
from .cold import Cold
from .imports import Importer
from .parts import Parts

T = TypeVar("T")

log = logging.getLogger("aster_persist")


@dataclass
class Page:
    """One page of a listing and the cursor of the next."""

    items: list[SessionInfo]
    next_cursor: str | None
    # of each session another started: that one's id and the call that did
    parents: dict[str, tuple[str, str | None]] = field(default_factory=dict)


class Sessions:
    """Every session of the data home, for the routers, MCP, the watcher and the learner,
    over the ``Parts`` ``app.py`` builds and the import pipeline over the same parts."""

    def __init__(
        self,
        parts: Parts,
        *,
        compress_after_days: float = 0,
        project_keys: ProjectKeys | None = None,
    ) -> None:
        self._parts = parts
        self._importer = Importer(self._parts)
        self._cold = Cold(self._parts, after_days=compress_after_days)
        self.progress = {"done": 0, "total": 0}
        self.project_keys = project_keys  # in a team: each repository's project (git)
        self.catch_up_stats: dict[str, Any] = {}
        self._catch_up: asyncio.Task[None] | None = None
        self.home = parts.home
        self._store, self._committer, self._catalog = parts.store, parts.committer, parts.catalog
        self._blobs, self._journal = parts.blobs, parts.journal
        # what the parts answer, for its users
        self.listeners = self._parts.listeners  # told of every durable append
        self.tails, self.aliases, self.ready = (
            self._parts.tails,
            self._parts.aliases,
            self._parts.ready,
        )
        self.append = self._parts.append
        self.last_seq = self._parts.last_seq
        self.recent_keys = self._parts.recent_keys
        self.delete = self._parts.delete
        self.record = self._parts.record
        self.scope_of = self._parts.scope_of
        self.announce = self._parts.announce
        self.import_file = self._importer.import_file
        self.import_stream = self._importer.import_stream
        self.compress_cold = self._cold.sweep  # on request (POST /v1/sessions/compress)
        self.keep_cold = self._cold.run  # the daemon's own sweeps

    async def space(self) -> dict[str, Any]:
        """What the data home takes, by kind, project and tool, and what emptying the
        trash or compressing cold sessions would free (``usage.py``)."""
        return await usage.report(self._parts, self._cold)

    def now(self) -> datetime:
        """The time by the store's clock (a test's own, or UTC)."""
        return self._store.clock()

    async def repo_root(self, repo_root: str) -> str:
        """A repository root as sessions are filed under it (the main worktree's,
        normalized; a bad one refused); resolving a worktree reads a file, so off the loop."""
        return await asyncio.to_thread(normalize_repo_root, repo_root)

    async def start(self, memory_etags: dict[tuple[str, str], str] | None = None) -> None:
        """Find every session, then catch the catalog up in the background (and the
        memory index, from every live memory file's ETag)."""
        started = time.perf_counter()
        removed = await asyncio.to_thread(remove_leftover_temps, self.home.root)
        if removed:
            log.warning("removed %d temporary files left by an interrupted rewrite", removed)
        found = await self._committer.call(self._store.scan)
        token = REQUEST_ACTOR.set("watcher")
        try:
            settled = set(await self._committer.call(self._store.settle))
        finally:
            REQUEST_ACTOR.reset(token)
        if settled:
            log.warning("%d sessions found in both forms: kept plain", len(settled))
        self._committer.start()
        aside = await outside.journal_unrecorded(self._parts, found)
        files = [FileEntry(*entry) for entry in found if entry.id not in aside]
        self.progress["total"] = len(files)

        def report(done: int, total: int) -> None:
            self.progress["done"] = done

        async def catch_up() -> None:
            try:
                future = self._catalog.submit(lambda catalog: catalog.catch_up(files, report))
                stats = await asyncio.wrap_future(future)
                if memory_etags is not None and self._catalog.memory_doc is not None:
                    load = self._catalog.memory_doc
                    stats["memory"] = await asyncio.wrap_future(
                        self._catalog.submit(lambda c: c.sync_memory(memory_etags, load))
                    )
                stats["seconds"] = round(time.perf_counter() - started, 3)
                self.catch_up_stats = stats
                log.info("catalog caught up: %s", stats)
                self._catalog.embed_later(compact=True)  # semantic search's vectors, when on
            finally:
                self.ready.set()

        self._catch_up = asyncio.get_running_loop().create_task(catch_up())

    async def close(self) -> None:
        try:
            if self._catch_up is not None:
                await self._catch_up
        finally:  # whatever became of the index, the transcripts are synced and closed
            await self._committer.close()
            await asyncio.to_thread(self._importer.close)  # its reading processes
            await asyncio.to_thread(self._catalog.close)

    # -- writes ----------------------------------------------------------------

    async def create(self, *, actor: str = "api", **fields: Any) -> dict[str, Any]:
        """Create a session. A create retried with the same ``session_id`` and the same
        fields, once the first one made the file, answers with that session's header
        (``replayed``) and makes sure it is journaled. An ``alias`` among the extra
        fields is refused while another live session holds it."""
        if (fields.get("extra") or {}).get("alias") is not None:
            await self.ready.wait()  # the catalog says who held each alias at start
        return await self._create_journaled(actor, fields)

    async def _create_journaled(self, actor: str, fields: dict[str, Any]) -> dict[str, Any]:
        replayed = False
        try:
            header = await self._create(fields)
        except SessionExists:
            same = await creation.same_create(self._parts, fields)
            if same is None:
                raise
            header, replayed = same, True
        if self._journal is None or header["id"] not in self._journal.sessions:
            await self.record(
                "session.created",
                header["id"],
                {"repo_root": header["repo_root"]},
                slug=project_slug(header["repo_root"]),
                actor=actor,
            )
        return {**header, "replayed": True} if replayed else header

    async def _create(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Write the header and keep the new file open for its first append."""
        header, writer = await self._committer.call(self.aliases.create, fields)
        self._store.install(header["id"], writer)
        return header

    def open_summary(self, session_id: str) -> tuple[int, SessionInfo] | None:
        """For a session held open for appends: the bytes acknowledged so far and its
        summary; None when it is not open (read it instead)."""
        writer = self._store.writer(session_id)
        return None if writer is None else (writer.acked_size, writer.info)

    def read_span(
        self, session_id: str, start: int, end: int, *, inline: bool = False
    ) -> tuple[list[dict[str, Any]], int]:
        """The acknowledged lines from byte ``start`` to ``end`` and the offset after
        them (a worker thread; large contents left as references unless ``inline``)."""
        lines, after = self._store.read_tail(session_id, start, end)
        return (self._blobs.inline(lines)[0] if inline else lines), after

    async def rename(
        self,
        session_id: str,
        title: str,
        *,
        detail: dict[str, Any] | None = None,
        if_match: SeqCondition = None,
    ) -> AppendResult:
        _lines, _raw, info = await self.read(session_id)
        result = await self.append(
            session_id, [{"type": "title", "title": title, "source": "user"}], if_match=if_match
        )
        await self.record(
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
        elif op == "session.purged":
            raise Invalid(f"a {op} entry cannot be reverted: a purged session is gone for good")
        else:  # what another program did, or a change of form: nothing of ours to undo
            raise Conflict(f"a {op} entry cannot be reverted: it records no change of ours to undo")
        return {"reverted": entry["id"], "session": sid}

    async def restore(self, session_id: str, *, detail: dict[str, Any] | None = None) -> None:
        """Back from the trash; refused while another live session holds its alias."""
        await self.ready.wait()
        await self._committer.call(self.aliases.restore, session_id)
        await self.record("session.restored", session_id, detail or {})

    # -- reads -------------------------------------------------------------------

    async def read(
        self, session_id: str, *, inline: bool = True
    ) -> tuple[list[dict[str, Any]], list[bytes], SessionInfo]:
        """The acknowledged lines (large contents put back unless ``inline`` is False),
        the bytes of each, and the summary."""

        def read() -> tuple[list[dict[str, Any]], list[bytes], SessionInfo]:
            parsed, info = self._store.read(session_id)
            lines, raw = parsed.lines, parsed.raw
            if inline:
                lines, changed = self._blobs.inline(lines)
                if changed:
                    raw = [orjson.dumps(line) for line in lines]
            return lines, raw, info

        return await asyncio.to_thread(read)

    async def export(self, session_id: str) -> bytes:
        """The transcript as stored, with large contents put back in place."""

        def export() -> bytes:
            data = self._store.export_bytes(session_id)
            if b'"content_ref"' not in data:
                return data
            lines, _changed = self._blobs.inline(parse(data).lines)
            return b"".join(orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE) for line in lines)

        return await asyncio.to_thread(export)

    def spool(self) -> BinaryIO:
        """A file with no name in the data home (gone when closed, or at a crash) to
        hold an import's bytes as they arrive."""
        folder = self._store.home.index
        fs.ensure_dir(folder)  # a link on the way is refused
        return tempfile.TemporaryFile(dir=folder)

    async def reconcile(self, paths: list[Path]) -> None:
        """Take in transcripts another program appended to (or added)."""
        await outside.reconcile(self._parts, paths)

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
        trashed, purge = await prune.choose(
            self._parts,
            older_than_days=older_than_days,
            keep_latest=keep_latest,
            purge_trash_older_than_days=purge_trash_older_than_days,
            now=now,
        )
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

    async def count(self) -> int:
        """How many sessions the catalog holds."""
        return int(await self.in_catalog(lambda c: c.count()))

    def stats(self) -> dict[str, int]:
        """The writer thread's counters: appends acknowledged, sync passes, open files."""
        return {
            "appends": self._committer.appends,
            "syncs": self._committer.syncs,
            "open_files": self._store.open_count,
        }

    async def listing(
        self,
        *,
        repo_root: str | None = None,
        state: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        parent: str | None = None,
        alias: str | None = None,
        listing: Listing = NEWEST,
    ) -> Page:
        after = None
        if cursor is not None:
            try:
                after = read_listing_cursor(cursor)
            except BadCursor as exc:
                raise Invalid(str(exc)) from None
        root = None
        if repo_root is not None:  # its path, and in a team its project's copies too
            root, key = await self._keyed(repo_root)
            listing = replace(listing, project_key=key)
        await self.ready.wait()

        def page(c: Catalog) -> tuple[list[tuple[SessionInfo, Any]], dict[str, Any]]:
            rows = c.page(
                repo_root=root,
                state=state,
                limit=limit + 1,
                after=after,
                parent=parent,
                alias=alias,
                listing=listing,
            )
            return rows, c.parents([info for info, _ in rows[:limit]])

        rows, parents = await asyncio.wrap_future(self._catalog.submit(page))
        next_cursor = None
        if len(rows) > limit:
            rows = rows[:limit]
            last, key = rows[-1]
            next_cursor = listing_cursor(str(key if key is not None else ""), last.id)
        return Page([info for info, _ in rows], next_cursor, parents)

    async def in_catalog(self, ask: Callable[[Catalog], T]) -> T:
        """Ask the catalog (its facets, its activity…) on its own thread."""
        await self.ready.wait()
        return await asyncio.wrap_future(self._catalog.submit(ask))

    async def remember_file(
        self, path: str, size: int, modified_at: str, sessions: list[str]
    ) -> None:
        """An imported file, as the caller named it, and the sessions it became."""
        await self.in_catalog(lambda c: imported.remember(c.db, path, size, modified_at, sessions))

    async def known_files(self, files: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Those of ``files`` imported as they are now, their sessions still here."""
        return await self.in_catalog(lambda c: imported.known(c.db, files))

    async def links(
        self, info: SessionInfo
    ) -> tuple[tuple[str, str | None] | None, list[dict[str, Any]]]:
        """The session that started this one (its id and call), and those it started."""
        return await self.in_catalog(lambda c: (c.parents([info]).get(info.id), c.children(info)))

    # -- changes made by other programs ---------------------------------------------

    async def search(
        self, query: Query, *, limit: int, cursor: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Transcript hits for ``query``, best first; sees every acknowledged append. In
        one session that refers to another's events (a copy), those are searched too, and
        found as its own."""
        if query.repo is not None:
            query.repo, query.project_key = await self._keyed(query.repo)
        if query.session is not None:
            with contextlib.suppress(SessionNotFound, InvalidName):  # then no hit at all
                query.shared = await asyncio.to_thread(self._store.shared_of, query.session)
        hits, next_cursor = await self.in_catalog(
            lambda c: search.search_docs(
                c.db,
                query,
                limit=limit,
                cursor=cursor,
                texts=c.texts,
                vectors=c.fresh_vectors(query),
                reranker=c.reranker,
            )
        )
        for hit in hits if query.shared else ():
            hit["session_id"] = query.session
        return hits, next_cursor

    async def _keyed(self, repo_root: str) -> tuple[str, str | None]:
        """A repository root in its normal form and, in a team, its project's key."""
        root = await self.repo_root(repo_root)
        keys = self.project_keys
        return root, None if keys is None else await asyncio.to_thread(keys.of, root)

    async def search_grouped(self, query: Query, *, limit: int) -> list[dict[str, Any]]:
        """Sessions ranked by their turns' hits, each with its best turns as evidence."""
        if query.repo is not None:
            query.repo, query.project_key = await self._keyed(query.repo)
        return await self.in_catalog(
            lambda c: search.search_sessions(
                c.db,
                query,
                limit=limit,
                texts=c.texts,
                vectors=c.fresh_vectors(query),
                reranker=c.reranker,
            )
        )

    async def search_memory(
        self,
        query: Query,
        *,
        scopes: list[str] | None,
        k: int,
        kinds: tuple[str, ...] = ("block", "core"),
        steepness: int = MEMORY_RRF_K,
    ) -> list[dict[str, Any]]:
        """The ``k`` best memory hits for ``query`` of ``scopes`` (every scope when None)
        and ``kinds``: relevance raised by recency; ``steepness``: see ``index/fusion.py``."""
        now = self._store.clock()
        return await self.in_catalog(
            lambda c: search.search_memory(
                c.db,
                query,
                scopes=scopes,
                kinds=kinds,
                now=now,
                k=k,
                vectors=c.vectors,
                steepness=steepness,
                reranker=c.reranker,
            )
        )

    async def latest(self, repo_root: str) -> SessionInfo:
        page = await self.listing(repo_root=repo_root, limit=1)
        if not page.items:
            raise SessionNotFound(f"no session for {repo_root}")
        return page.items[0]

    async def projects(self) -> list[dict[str, Any]]:
        return await self.in_catalog(lambda c: c.projects())

    async def owned(self) -> list[tuple[str, str]]:
        """Each session this machine owns (not a team's copy) and its repository root."""
        sql = "SELECT id, repo_root FROM sessions WHERE machine IS NULL"
        return await self.in_catalog(lambda c: c.db.execute(sql).fetchall())
