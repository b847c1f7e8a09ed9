"""The catalog's thread: pending summaries and memory changes, flushed in one pass once
writes pause (or at the latest ``FLUSH_MAX_DELAY`` after them), and always before a read.

Only the catalog thread touches the database; any thread may mark what changed.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...secrets.redact import prepare
from ...storage.summary import SessionInfo
from ...storage.transcripts.records import Written
from .database import VECTORS, Catalog, MemoryDoc

BATCH = 32  # documents embedded at a time in the background

if TYPE_CHECKING:  # the semantic extra's
    from ..rerank import Reranker
    from ..semantic import Vectors

log = logging.getLogger("aster_persist")

FLUSH_QUIET = 0.1  # seconds without a write before pending index work is done
FLUSH_MAX_DELAY = 10.0  # ... or at the latest this long after the first pending write
HELD_MAX = 32 << 20  # bytes written and not yet indexed held for the index, at most


class CatalogWorker:
    """Owns the catalog on one thread; writers hand it summaries and changed memory,
    which it writes shortly after (and always before the next read)."""

    def __init__(
        self,
        folder: Path,
        locate: Callable[[str, str], Path],
        *,
        memory_doc: MemoryDoc | None = None,
        vectors: Vectors | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aster-index")
        # the model's thread: it embeds while the catalog's goes on (the runtime spreads
        # a batch over the cores itself)
        self._model = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aster-embed")
        self.catalog: Catalog = self.executor.submit(Catalog, folder, locate).result()
        self.executor.submit(prepare)  # before the first text it indexes, off the loop
        self.locate = locate
        self.memory_doc = memory_doc  # what search indexes of a memory file
        self.catalog.vectors = vectors  # semantic search's, when on
        self.catalog.reranker = reranker
        if reranker is not None:  # ready before the first question, off the catalog's thread
            self._model.submit(reranker.warm)
        if vectors is not None:  # those kept from the last run, if they are this catalog's
            kept = self.executor.submit(vectors.attach, self.catalog.db, folder / VECTORS)
            log.info("semantic search: %d vectors kept from the last run", kept.result())
        self._embedding = False  # a batch of embedding is queued
        self._compact = False  # sessions were removed since the vectors were compacted
        self._dirty: dict[str, SessionInfo] = {}
        # what the daemon wrote and has not indexed yet, as written: indexed from here
        # instead of read back from the file, when it is all of what is new
        self._held: dict[str, list[Written]] = {}
        self._held_bytes = 0
        self._removed: set[str] = set()
        self._memory: set[tuple[str, str]] = set()
        self._marks = 0  # summaries marked so far: a flush between writes sees them come
        self._pending_since: float | None = None  # when the oldest unwritten one was
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._ticker = threading.Thread(target=self._tick, name="aster-index-tick", daemon=True)
        self._ticker.start()

    def mark(self, info: SessionInfo, written: Sequence[Written] = ()) -> None:
        """Record a session's new summary; written before the next read (any thread).
        ``written`` is what the daemon appended since the summary before, as written."""
        with self._lock:
            self._dirty[info.id] = info
            self._removed.discard(info.id)
            self._hold(info, written)
            self._marks += 1
            if self._pending_since is None:
                self._pending_since = time.monotonic()
        self._wake.set()

    def _hold(self, info: SessionInfo, written: Sequence[Written]) -> None:
        """Keep what was written for the index, while it carries on what is held and
        reaches the summary's offset; otherwise (or past ``HELD_MAX``) the index reads
        the file (caller holds the lock)."""
        held = self._held.get(info.id)
        end = held[-1].end if held else None
        if written and (end is None or written[0].start == end):
            size = written[-1].end - written[0].start
            if self._held_bytes + size <= HELD_MAX and written[-1].end == info.offset:
                self._held.setdefault(info.id, []).extend(written)
                self._held_bytes += size
                return
        if held and (written or end != info.offset):  # a run broken: read the file
            self._drop_held(info.id)

    def _drop_held(self, session_id: str) -> list[Written]:
        held = self._held.pop(session_id, [])
        self._held_bytes -= held[-1].end - held[0].start if held else 0
        return held

    def _hold_again(self, session_id: str, older: list[Written] | None) -> None:
        """Put back what a flush left unindexed, before what was held since, when the
        two carry on from each other (caller holds the lock)."""
        if not older:
            return
        newer = self._held.get(session_id)
        if newer and newer[0].start != older[-1].end:
            return  # not one run: the file is read instead
        size = older[-1].end - older[0].start
        if self._held_bytes + size <= HELD_MAX:
            self._held[session_id] = [*older, *(newer or [])]
            self._held_bytes += size

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._dirty.pop(session_id, None)
            self._drop_held(session_id)
            self._removed.add(session_id)
        self._wake.set()

    def mark_memory(self, scope: str, name: str) -> None:
        """A memory file changed (or went away): index it again before the next read."""
        with self._lock:
            self._memory.add((scope, name))
        self._wake.set()

    def journaled(self, entry: dict[str, Any]) -> None:
        """A journal listener: every journaled change of a memory file has it read again."""
        op = str(entry.get("op", ""))
        if op.startswith("memory.") and op != "memory.recall" and entry.get("name"):
            self.mark_memory(str(entry["scope"]), str(entry["name"]))

    def _tick(self) -> None:
        """Flush once writes pause, so the index stays current without a reader.

        Indexing competes with appends and imports for the processor, so during a burst
        of writes it waits (up to ``FLUSH_MAX_DELAY``) and then takes the whole burst in
        one pass; a pass begun in a pause gives way when writes come again (the text of
        one session at a time), unless what is pending is ``FLUSH_MAX_DELAY`` old. A read
        flushes first anyway, so nobody ever sees a stale index."""
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
                self.executor.submit(self.flush, between_writes=True)
            except RuntimeError:  # shut down
                return

    def flush(self, *, between_writes: bool = False) -> None:
        """Write pending summaries and memory; runs on the catalog thread. Between
        writes (``between_writes``), it stops at the first write that comes meanwhile,
        and leaves the rest pending for the next pause (unless they are overdue)."""
        with self._lock:
            dirty, self._dirty = self._dirty, {}
            held = {sid: self._drop_held(sid) for sid in dirty if sid in self._held}
            removed, self._removed = self._removed, set()
            memory, self._memory = self._memory, set()
            marks, since = self._marks, self._pending_since
            self._pending_since = None
        stop = None
        if between_writes and since is not None and time.monotonic() - since < FLUSH_MAX_DELAY:
            stop = lambda: self._marks != marks  # noqa: E731  (read without the lock)
        left: list[SessionInfo] = []
        try:
            if dirty:
                left = self.catalog.refresh(list(dirty.values()), stop, held)
            if removed:
                self.catalog.remove(removed)
            if memory and self.memory_doc is not None:
                self.catalog.refresh_memory(memory, self.memory_doc)
            if dirty or removed:
                self.catalog.give_back()
                self.embed_later(compact=bool(removed))
        except Exception as exc:
            # Derived data: keep what is pending and try again on the next flush.
            log.warning("index write failed (%s); will retry", exc)
            left = list(dirty.values())
            with self._lock:
                self._removed |= removed - self._dirty.keys()
                self._memory |= memory
        if left:  # pending again (a summary marked since is newer, one removed is gone)
            with self._lock:
                for info in left:
                    if info.id not in self._removed:
                        self._dirty.setdefault(info.id, info)
                        self._hold_again(info.id, held.get(info.id))
                if since is not None:
                    self._pending_since = min(since, self._pending_since or since)
            self._wake.set()

    def embed_later(self, *, compact: bool = False) -> None:
        """Embed new documents in the background, a batch at a time: read on the catalog's
        thread, embedded on the model's own (the catalog's other work goes on meanwhile),
        taken on the catalog's; then (if ``compact``: sessions were removed) let go of the
        vectors of removed documents (semantic search; nothing when it is off)."""
        with self._lock:
            self._compact |= compact
            if self.catalog.vectors is None or self._embedding or self._closed:
                return
            self._embedding = True  # until the batch is taken
        self._submit(self._embed)

    def _embed(self) -> None:
        with self._lock:
            compact, self._compact = self._compact, False
        vectors = self.catalog.vectors
        assert vectors is not None
        try:
            epoch, numbers, texts = vectors.next_batch(self.catalog.db, self.catalog.texts, BATCH)
            if numbers:
                embedding = self._model.submit(vectors.embedder.embed, texts)
                embedding.add_done_callback(
                    lambda done: self._submit(self._take, epoch, numbers, done, compact)
                )
                return
            again = bool(vectors.settle(self.catalog.db, compact=compact))
        except Exception as exc:  # derived data: the next change tries again
            log.warning("embedding for semantic search failed (%s)", exc)
            again = False
        self._embedded(again)

    def _take(self, epoch: int, numbers: list[int], done: Future[Any], compact: bool) -> None:
        vectors = self.catalog.vectors
        assert vectors is not None
        again = True
        try:
            vectors.add(self.catalog.db, epoch, numbers, done.result())
        except Exception as exc:
            log.warning("embedding for semantic search failed (%s)", exc)
            again = False
        with self._lock:
            self._compact |= compact
        self._embedded(again)

    def _embedded(self, again: bool) -> None:
        with self._lock:
            self._embedding = False
        if again:
            self.embed_later()

    def _submit(self, work: Callable[..., Any], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # shut down
            self.executor.submit(work, *args)

    def forked_from(self, record: str, created_at: str | None, events: int) -> Future[str | None]:
        """The session whose first event came from the source record ``record`` and that
        a new source of ``events`` events, begun at ``created_at``, carries on: the one it
        forks (Claude Code writes a resumed session to a new file that begins with the
        records of the old one: the same start, and more after it).

        Pending summaries are weighed as they are, not written first: an import asks this
        of every new file, and must not wait for the text of the one before to be indexed."""
        return self.executor.submit(self._forked_from, record, created_at, events)

    def _forked_from(self, record: str, created_at: str | None, events: int) -> str | None:
        with self._lock:
            pending = list(self._dirty.values())
            gone = self._removed | self._dirty.keys()
        found = [row for row in self.catalog.begun_with(record) if row[0] not in gone]
        found += [
            (info.id, info.created_at, info.events)
            for info in pending
            if info.source_key and info.stats.first_record == record
        ]
        began = created_at or "9999"
        earlier = [
            (created or "", sid)
            for sid, created, count in found
            if created is not None and (created < began or (created == began and count < events))
        ]
        return min(earlier)[1] if earlier else None

    def begun_with(self, record: str) -> Future[list[str]]:
        """The sessions whose first event came from the source record ``record`` (pending
        summaries weighed as they are), the one with the most events first."""
        return self.executor.submit(self._begun_with, record)

    def _begun_with(self, record: str) -> list[str]:
        with self._lock:
            pending = list(self._dirty.values())
            gone = self._removed | self._dirty.keys()
        found = [(n, sid) for sid, _c, n in self.catalog.begun_with(record) if sid not in gone]
        found += [
            (info.events, info.id)
            for info in pending
            if info.source_key and info.stats.first_record == record
        ]
        return [sid for _n, sid in sorted(found, reverse=True)]

    def referring_to(self, session_id: str) -> Future[list[str]]:
        """The sessions that refer to events of ``session_id`` (its copies), pending
        summaries weighed as they are."""
        return self.executor.submit(self._referring_to, session_id)

    def _referring_to(self, session_id: str) -> list[str]:
        with self._lock:
            pending = list(self._dirty.values())
            gone = self._removed | self._dirty.keys()
        found = [sid for sid in self.catalog.referring_to(session_id) if sid not in gone]
        return found + [info.id for info in pending if info.base == session_id]

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
            self._model.shutdown(wait=True, cancel_futures=True)
            self.executor.shutdown(wait=True)
