"""Sessions from a file another tool wrote (or an export of this one).

Every conversation is read and checked before anything is written, then all are written
whole at once; one already here (same source, so same id) is reported, not copied. A
conversation keyed by its source (the tool and the source's own session id, each event
by the record it came from) that is already here is brought up to date instead: the
records it holds now that the session does not are appended, each under its record's
key, so a grown file adds exactly what it gained and the same file again adds nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import weakref
from collections.abc import (
    AsyncIterator,
    Container,
    Iterable,
    Iterator,
)
from typing import TYPE_CHECKING, Any, BinaryIO

from ... import importers
from ...importers.pool import ScanPool
from ...schemas.names import project_slug
from ...storage.summary import SessionInfo
from .parts import Appended
from .shared import shared_start
from .written import completing, header_fields, imported_detail, keyed_runs, runs_of

if TYPE_CHECKING:
    from .parts import Parts


class Importer:
    """The import pipeline: reads a file, checks it whole, writes it a batch at a time,
    through the ``Parts`` of the sessions service it shares."""

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self._readers = ScanPool()  # files read on other processes, where that pays
        self._sharing = asyncio.Lock()  # new sessions that may share a start, in turn

    def close(self) -> None:
        self._readers.close()

    async def _scan(
        self, form: importers.Format, handle: BinaryIO, limit: int | None
    ) -> importers.lines.Scan:
        """``lines.scan`` of the file, on a reading process where that pays."""
        found = await asyncio.to_thread(self._readers.scan, form, handle, limit)
        try:
            return await asyncio.wrap_future(found)
        except BaseException as exc:
            if not self._readers.failed(exc):
                raise
        return await asyncio.to_thread(importers.lines.scan, form, handle, limit)

    async def import_file(
        self,
        data: bytes,
        *,
        format: str = "auto",
        repo_root: str | None = None,
        modified_at: str | None = None,
    ) -> dict[str, Any]:
        """Sessions from a file's bytes in memory, as ``import_stream`` takes a file."""
        with io.BytesIO(data) as handle:
            return await self.import_stream(
                handle, format=format, repo_root=repo_root, modified_at=modified_at
            )

    async def _remove_unfinished(self, session_id: str) -> None:
        """A new session whose import failed part way: deleted, and journaled so."""
        await self._parts.delete(session_id, purge=True, reason="its import failed part way")

    async def _import_whole(
        self,
        data: bytes,
        *,
        format: str = "auto",
        repo_root: str | None = None,
        modified_at: str | None = None,
    ) -> dict[str, Any]:
        """Sessions from a file another tool wrote (or an export of this one). Every
        conversation is read and checked before anything is written, then all are written
        whole at once; one already here (same source, so same id) is reported, not copied.
        """
        found, conversations = await asyncio.to_thread(importers.read, data, format, modified_at)
        for conversation in conversations:
            _check_project(conversation, repo_root)
        written = await self._parts.committer.call(
            self._write_imported, found, conversations, repo_root
        )
        results: list[dict[str, Any]] = []
        for conversation, done in zip(conversations, written, strict=True):
            sid = conversation.id()
            if done is None:
                grown = await self._bring_up_to_date(sid, conversation)
                status = "updated" if grown else "already_imported"
                results.append(
                    {"id": sid, "status": status, **({"events": grown} if grown else {})}
                )
                continue
            _header, info = done
            results.append({"id": sid, "status": "imported", "events": info.events})
            self._announce(sid, info.last_seq, conversation)
        return _imported(found, results)

    async def _bring_up_to_date(self, sid: str, conversation: importers.Conversation) -> int:
        """Append what a source holds that its session does not. A source grows at its end,
        so what is new follows the last record the session holds (its latest keys are
        remembered, however long it is); each is appended under its record's key, so a
        record already written is a replay that writes nothing."""
        keys = conversation.keys
        if ":source:" not in conversation.fingerprint or not keys:
            return 0  # keyed by its bytes: the same bytes, so nothing can be new
        known = await self._parts.recent_keys(sid)
        start = next((n + 1 for n in range(len(keys) - 1, -1, -1) if keys[n] in known), 0)
        new = [
            (event, key)
            for event, key in zip(conversation.events[start:], keys[start:], strict=True)
            if key not in known
        ]
        if not new:
            return 0
        result = await self._parts.append(
            sid,
            [event for event, _key in new],
            keys=[key for _event, key in new],
            learn=False,
            source=conversation.fingerprint,
        )
        return 0 if result.replayed else result.count

    def _announce(self, sid: str, last_seq: int, conversation: importers.Conversation) -> None:
        """Tell the listeners of a new session's events (an import: nothing to learn);
        a copy's own events go on after those it refers to."""
        events = conversation.events
        if events and self._parts.listeners:
            scope = self._parts.scope_of(sid)
            first = last_seq - len(events) + 1
            source = conversation.fingerprint
            self._parts.announce(
                Appended(sid, scope, first, last_seq, events=events, source=source)
            )

    async def import_stream(
        self,
        handle: BinaryIO,
        *,
        limit: int | None = None,
        format: str = "auto",
        repo_root: str | None = None,
        modified_at: str | None = None,
    ) -> dict[str, Any]:
        """Sessions from an open file of any size. A JSON Lines format is read a record at a
        time, twice: once to check it all (nothing is written for a file that fails), then
        to write a batch at a time, so the memory is a batch's and the largest record's. A
        source already here is brought up to date from the last record its session holds; a
        source rewritten since (its file holds none of them) is kept beside it as a session
        of its own, never merged into it. A file that is one JSON document is
        read whole."""
        if format == "auto":
            format = await asyncio.to_thread(importers.detect_file, handle, limit)
        form = importers.named(format)
        if form.lines is None:
            data = await asyncio.to_thread(importers.read_prefix, handle, limit)
            return await self._import_whole(
                data,
                format=format,
                repo_root=repo_root,
                modified_at=modified_at,
            )
        scanned = await self._scan(form, handle, limit)
        conversation = scanned.conversation
        conversation.created_at = conversation.created_at or modified_at
        _check_project(conversation, repo_root)
        async with _one_at_a_time(conversation.fingerprint):  # an import of it at once
            return await self._import_scanned(
                handle,
                form,
                scanned,
                limit=limit,
                repo_root=repo_root,
                modified_at=modified_at,
            )

    async def _import_scanned(
        self,
        handle: BinaryIO,
        form: importers.Format,
        scanned: importers.lines.Scan,
        *,
        limit: int | None,
        repo_root: str | None,
        modified_at: str | None,
    ) -> dict[str, Any]:
        """Write a file ``scan`` checked whole: what its session lacks, or a new session."""
        format = form.name
        conversation = scanned.conversation
        sid, here = await self._parts.committer.call(self._which, conversation)
        start, known = 0, await self._parts.recent_keys(sid) if here else ()
        if here and format == "native":
            # an export holds its session's events in order: what the session lacks of it
            # (an import cut short by a crash, or an export of it since it grew) follows,
            # each with the key it had (an append's key is on each of its events)
            last = await self._parts.committer.call(self._last_seq, sid)
            if last is None:  # closed meanwhile: the catalog's summary says
                found = await asyncio.wrap_future(self._parts.catalog.submit(lambda c: c.get(sid)))
                last = found.last_seq if found is not None else 0
            start, known = last, ()
        elif here and ":source:" not in conversation.fingerprint:
            # keyed by its bytes: the same file again
            return _imported(format, [{"id": sid, "status": "already_imported"}])
        elif known:
            found = scanned.after(_keys(known))
            if found is None and scanned.events:
                # rewritten since (none of its records is the session's): kept beside it, a
                # session of its own (known by its first record, so that it grows in turn),
                # never merged into it
                mark = scanned.first_record or scanned.digest
                digest = hashlib.sha256(mark.encode()).hexdigest()[:16]
                conversation.fingerprint += f":rewritten:{digest}"
                conversation.session_id = None
                conversation.source["rewrite_of"] = sid
                sid, here = await self._parts.committer.call(self._which, conversation)
                known = await self._parts.recent_keys(sid) if here else ()
                found = scanned.after(_keys(known))
            start = found or 0
        # a new session that may share its start with a stored one is decided and written
        # one at a time: of a copy and its original imported together, the later one
        # refers to the earlier (the files are still read side by side)
        first = None if here else scanned.first_record
        parent = None if here else self._forked_from(format, conversation)
        sharing = first is not None or parent is not None
        async with self._sharing if sharing else contextlib.nullcontext():
            if parent is not None:  # a fork its source names (a Codex fork's header)
                conversation.source["fork_of"] = parent
            elif first is not None:
                # a source that begins with another's first record (Claude Code writes a resumed
                # session to a new file that begins with the old one's records) forks it
                fork_of = await asyncio.wrap_future(
                    self._parts.catalog.forked_from(first, conversation.created_at, scanned.events)
                )
                if fork_of is not None:
                    conversation.source["fork_of"] = fork_of
            pending = importers.lines.batches(form, handle, limit, scanned, modified_at)
            if sharing:
                # what a stored session holds already is referred to, not copied
                shared = await shared_start(self._parts, first, conversation, repo_root)
                if shared is not None:
                    pending = shared.skip(pending)
                    conversation.shared = shared
            try:
                written = await self._write_batches(
                    pending, format, conversation, sid, here, start, known, repo_root
                )
            except BaseException:
                if not here and sid in self._parts.store.locations:
                    # a new session whose later batches failed: not kept half-written
                    await self._remove_unfinished(sid)
                raise
        if not here:
            status = {"id": sid, "status": "imported", "events": written}
        elif written:
            status = {"id": sid, "status": "updated", "events": written}
        else:
            status = {"id": sid, "status": "already_imported"}
        for link in ("rewrite_of", "fork_of"):
            if link in conversation.source:
                status[link] = conversation.source[link]
        return _imported(format, [status])

    async def _write_batches(
        self,
        pending: Iterator[importers.lines.Batch],
        format: str,
        conversation: importers.Conversation,
        sid: str,
        here: bool,
        start: int,
        known: Container[str],
        repo_root: str | None,
    ) -> int:
        """The events of each batch the session does not hold: the first batch of a new
        session creates it, the others are appended; how many were written."""
        written, created, n = 0, not here, 0
        while (batch := await asyncio.to_thread(next, pending, None)) is not None:
            events, keys, n = batch.events, batch.keys, n + len(batch.events)
            first = n - len(events)
            wanted = [
                i >= start and (key is None or key not in known)
                for i, key in enumerate(keys, first)
            ]
            if created:  # the session, with the first batch
                created = False
                conversation.events = [e for e, w in zip(events, wanted, strict=True) if w]
                conversation.keys = [k for k, w in zip(keys, wanted, strict=True) if w]
                conversation.runs = runs_of(batch.runs, wanted)
                [done] = await self._parts.committer.call(
                    self._write_imported, format, [conversation], repo_root
                )
                if done is not None:
                    written += done[1].events
                    self._announce(sid, done[1].last_seq, conversation)
                    continue
                known = await self._parts.recent_keys(sid)  # made meanwhile, elsewhere
                wanted = [
                    w and (k is None or k not in known) for k, w in zip(keys, wanted, strict=True)
                ]
            todo = completing(
                [(e, k) for e, k, w in zip(events, keys, wanted, strict=True) if w], known
            )
            if todo:
                result = await self._parts.append(
                    sid,
                    [event for event, _key in todo],
                    keys=[key for _event, key in todo],
                    runs=runs_of(batch.runs, wanted),
                    learn=False,
                    source=conversation.fingerprint,
                )
                written += 0 if result.replayed else result.count
        if created:  # no events at all: the session, its header alone
            conversation.events, conversation.keys, conversation.runs = [], [], None
            await self._parts.committer.call(
                self._write_imported, format, [conversation], repo_root
            )
        return written

    def _which(self, conversation: importers.Conversation) -> tuple[str, bool]:
        """The session a conversation is (the one its source became, if the journal says
        so), fixed from now on, and whether it is here (writer thread)."""
        if self._parts.journal is not None and conversation.session_id is None:
            conversation.session_id = self._parts.journal.sources.get(conversation.fingerprint)
        conversation.session_id = conversation.id()
        return conversation.session_id, conversation.session_id in self._parts.store.locations

    def _forked_from(self, format: str, conversation: importers.Conversation) -> str | None:
        """The stored session a new conversation's source says it was forked from (a
        Codex rollout's ``forked_from_id``: the parent it replays), if it is stored."""
        forked = conversation.source.get("forked_from")
        if self._parts.journal is None or not isinstance(forked, str):
            return None
        parent = self._parts.journal.sources.get(f"{format}:source:{forked}")
        return parent if parent in self._parts.store.locations else None

    def _last_seq(self, sid: str) -> int | None:
        """The last seq of a session open for appends (writer thread); None if it is not."""
        writer = self._parts.store.writer(sid)
        return writer.info.last_seq if writer is not None else None

    def _write_imported(
        self,
        found: str,
        conversations: list[importers.Conversation],
        repo_root: str | None,
    ) -> list[tuple[dict[str, Any], SessionInfo] | None]:
        """Write every new conversation of an import whole, then journal them with one
        sync (writer thread, so a concurrent import of the same file finds them). One the
        journal says was imported before is the session it became, whatever its id says."""
        whole = []
        taking: set[str] = set()
        for conversation in conversations:
            if self._parts.journal is not None and conversation.session_id is None:
                conversation.session_id = self._parts.journal.sources.get(conversation.fingerprint)
            conversation.session_id = conversation.id()  # fixed once: a new one is minted now
            events = conversation.events
            if self._parts.blobs.needed(events):  # large contents go to blobs first, synced
                events = self._parts.blobs.extract(events)
            fields = header_fields(found, conversation, repo_root)
            self._parts.aliases.keep_free(fields["extra"], taking)
            whole.append((fields, keyed_runs(events, conversation.keys, conversation.runs)))
        written = self._parts.aliases.create_whole(whole)
        if self._parts.journal is not None:
            new = [done[0] for done in written if done is not None]
            for n, header in enumerate(new, 1):
                self._parts.journal.record(
                    "session.imported",
                    scope=f"project:{project_slug(header['repo_root'])}",
                    session=header["id"],
                    detail=imported_detail(header),
                    sync=n == len(new),
                )
        return written


_LOCKS: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()


@contextlib.asynccontextmanager
async def _one_at_a_time(source: str) -> AsyncIterator[None]:
    """Imports of one source one after the other: the second finds what the first wrote."""
    lock = _LOCKS.get(source)
    if lock is None:
        lock = _LOCKS[source] = asyncio.Lock()
    async with lock:
        yield


def _imported(found: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    """An import's answer: the format, how many sessions each way, and each session."""
    return {
        "format": found,
        "imported": sum(r["status"] == "imported" for r in results),
        "updated": sum(r["status"] == "updated" for r in results),
        "already_imported": sum(r["status"] == "already_imported" for r in results),
        "sessions": results,
    }


def _check_project(conversation: importers.Conversation, repo_root: str | None) -> None:
    if not (repo_root or conversation.source.get("repo_root") or conversation.cwd):
        raise importers.ImportProblem(
            "the file does not say which project it belongs to; name it with repo_root "
            "(`--repo-root` on the command line)"
        )


def _keys(keys: Container[str]) -> Iterable[str]:
    """A session's remembered keys, as the container the writer keeps them in."""
    return keys if isinstance(keys, Iterable) else ()
