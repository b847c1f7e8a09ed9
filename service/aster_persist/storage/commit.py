"""Group commit: every append written since a sync began shares the next fdatasync.

::

    event loop                                        syncer thread
    append ─► os.write (page cache) ─► wait ┐
    append ─► os.write (page cache) ─► wait ┼─ begin_sync: dup the fds ─► fdatasync each
    append ─► os.write (page cache) ─► wait ┘                              file once
        ◄── resolved when its bytes are covered ◄── end_sync: acknowledge, or cut back
                                                    and make the session read-only

Up to two passes run at once, and they end in the order they began; appends written
while they run wait for the next one, so a slow disk makes batches bigger rather than
requests slower. The writes themselves are a copy to
the page cache (as Redis writes its append-only file from its event loop); everything
that may block for long — opening and reading a transcript, creating, moving and
deleting files, syncing — runs on a thread. Loading and lifecycle work shares one
writer thread, so they never race each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ..errors import PreconditionFailed, StorageFailed
from ..schemas.conditions import SeqCondition, holds, named
from .packed import Compressed
from .transcripts import AppendRequest, AppendResult, Location, SyncPass, TranscriptStore

log = logging.getLogger("aster_persist")
T = TypeVar("T")


MAX_PASSES = 2  # sync passes in flight at once; a new write need not wait for a whole pass
RETRY_SECONDS = 0.05  # after a sync pass could not start


def _retrieve(task: asyncio.Future[None]) -> None:
    """A load whose every caller stopped waiting must not log "never retrieved"."""
    if not task.cancelled():
        task.exception()


class GroupCommitter:
    """The single writer thread: appends from many requests share one sync pass, and
    every other write of transcripts, memory and the journal runs here in turn."""

    def __init__(self, store: TranscriptStore, *, sync_interval: float = 0.2) -> None:
        self.store = store
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aster-writer")
        self.syncer = ThreadPoolExecutor(max_workers=MAX_PASSES, thread_name_prefix="aster-syncer")
        self._waiting: list[tuple[str, int, AppendResult, asyncio.Future[AppendResult]]] = []
        self._loading: dict[str, asyncio.Future[None]] = {}
        self._packing: dict[str, asyncio.Event] = {}  # sessions changing form: set when done
        self._passes: deque[tuple[SyncPass, asyncio.Future[None]]] = deque()
        self._ticker: asyncio.Task[None] | None = None
        self.sync_interval = sync_interval
        self.syncs = 0
        self.appends = 0
        self._kick_scheduled = False

    def start(self) -> None:
        if self.store.durability == "interval":
            self._ticker = asyncio.get_running_loop().create_task(self._tick())

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run blocking store work on the writer thread, in the caller's context (so the
        journal knows who asked)."""
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        return await loop.run_in_executor(self.executor, lambda: context.run(fn, *args, **kwargs))

    async def open(self, session_id: str) -> None:
        """Hold a session open for appends (its recent keys read back from the file)."""
        await self._ensure_writer(session_id)

    async def _ensure_writer(self, session_id: str) -> None:
        """Open the session's file for appends, once for all who ask at the same time.

        The load is a task of its own: a caller that is cancelled (a client gone, a
        shutdown) stops waiting, but the load finishes and installs the writer, so no
        descriptor is left open and nobody sharing the load sees the cancellation."""
        if self.store.writer(session_id) is not None:
            return
        loading = self._loading.get(session_id)
        if loading is None:
            loading = asyncio.ensure_future(self._load(session_id))
            loading.add_done_callback(_retrieve)
            self._loading[session_id] = loading
        await asyncio.shield(loading)

    async def _load(self, session_id: str) -> None:
        try:
            writer = await self.call(self.store.load_writer, session_id)
            self.store.install(session_id, writer)
        finally:
            del self._loading[session_id]

    async def append(self, request: AppendRequest) -> AppendResult:
        """Write now; return once the bytes are durable as the mode promises."""
        await self._ensure_writer(request.session_id)
        if self.store.writer(request.session_id) is None:  # deleted while it loaded
            await self._ensure_writer(request.session_id)
        result, needed = self.store.append(request)
        self.appends += 1
        if self.store.durability != "fsync" or self.store.acked(request.session_id, needed):
            return result
        future: asyncio.Future[AppendResult] = asyncio.get_running_loop().create_future()
        self._waiting.append((request.session_id, needed, result, future))
        if not self._kick_scheduled:
            # Start the pass after the requests already ready on this loop turn have
            # written too, so they share it.
            self._kick_scheduled = True
            asyncio.get_running_loop().call_soon(self._scheduled_kick)
        return await future

    def _scheduled_kick(self) -> None:
        self._kick_scheduled = False
        self._kick()

    def _kick(self) -> None:
        """Start a sync pass for what was written, if a pass slot is free."""
        if len(self._passes) >= MAX_PASSES or not self.store.pending_sync():
            return
        loop = asyncio.get_running_loop()
        try:
            sync = self.store.begin_sync()
        except OSError as exc:  # no descriptor to spare (EMFILE): nothing was taken
            log.warning("could not start a sync (%s); trying again shortly", exc)
            loop.call_later(RETRY_SECONDS, self._kick)
            return
        if not sync.fds:
            return
        try:
            done = loop.run_in_executor(self.syncer, self.store.sync_fds, sync)
        except BaseException as exc:  # e.g. the executor is shut down: fail, never hang
            for fd in sync.fds.values():
                os.close(fd)
            sync.failed.update({sid: str(exc) for sid in sync.fds})
            self.store.end_sync(sync)
            self._settle_waiting()
            raise
        self._passes.append((sync, done))
        done.add_done_callback(self._on_pass_done)

    def _on_pass_done(self, _: object) -> None:
        # Passes end in the order they began, whatever order their syncs finish in.
        while self._passes and self._passes[0][1].done():
            sync, done = self._passes.popleft()
            if done.exception() is not None:
                log.error("sync pass failed: %s", done.exception())
                sync.failed.update({sid: "sync pass failed" for sid in sync.fds})
            self.store.end_sync(sync)
            self.syncs += 1
        self._settle_waiting()
        self._kick()

    def _settle_waiting(self) -> None:
        still = []
        for entry in self._waiting:
            sid, needed, result, future = entry
            if future.done():
                continue
            acked = self.store.acked(sid, needed)
            if acked is None:
                future.set_exception(
                    StorageFailed(
                        "the transcript could not be synced; nothing past the last acknowledged "
                        "event was kept and the session is read-only until restart"
                    )
                )
            elif acked:
                future.set_result(result)
            else:
                still.append(entry)
        self._waiting = still

    async def _drain(self) -> None:
        """Return once everything written so far has been through a sync pass."""
        while self._passes or self.store.pending_sync():
            if self._passes:
                await asyncio.shield(self._passes[-1][1])
                await asyncio.sleep(0)  # let the done-callback settle the pass
            else:
                self._kick()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.sync_interval)
            self._kick()

    async def quiesce(self, session_id: str) -> None:
        """Wait until no write of the session is waiting for or in a sync (however busy
        other sessions keep the syncer: at most the passes running now and one more)."""
        while self.store.busy(session_id):
            if not self._passes:
                self._kick()
            if self._passes:
                await asyncio.shield(self._passes[-1][1])
            await asyncio.sleep(0)  # let the done-callback settle the pass

    async def _until_idle(self, session_id: str, *, opened: bool = False) -> None:
        """Return once the session is idle and not loading at the same moment (opened
        first when ``opened``): its change of form is done whole, appends waiting for a
        sync are synced, and appends that were waiting for it to load have written (they
        resume before this does, and may write). No await follows the last look, so the
        caller acts in the same step."""
        while True:
            packing = self._packing.get(session_id)
            if packing is not None:  # its change of form first, whole
                await packing.wait()
                continue
            if opened:
                await self._ensure_writer(session_id)
            await self.quiesce(session_id)
            loading = self._loading.get(session_id)
            if loading is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(loading)
                continue
            if not self.store.busy(session_id):
                return

    async def _replacing(self, session_id: str, fn: Callable[..., T], *args: Any) -> T:
        """Close the idle session's writer (no descriptor outlives its file) and run
        ``fn(*args)``, which puts another file in its place, on the writer thread; a
        delete waits until it is done, an append loads the file after it."""
        self.store.release(session_id)
        done = self._packing[session_id] = asyncio.Event()
        try:
            return await self.call(fn, *args)
        finally:
            del self._packing[session_id]
            done.set()

    async def detach(self, session_id: str, *, if_match: SeqCondition = None) -> Location:
        """Wait until the session is idle, then close its writer and hide it from appends;
        with ``if_match``, only if the session's last seq is that (checked in the same
        step as the detach, so no append can come in between)."""
        while True:
            await self._until_idle(session_id, opened=if_match is not None)
            if if_match is not None:
                writer = self.store.writer(session_id)
                if writer is None:
                    continue  # closed meanwhile: open it again and look
                last = writer.info.last_seq
                if not holds(if_match, last):
                    raise PreconditionFailed(
                        f"If-Match expected last seq {named(if_match)}, but session "
                        f"{session_id} is at {last}",
                        current=f'"{last}"',
                    )
            return self.store.detach(session_id)

    async def rewrite(self, session_id: str, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)``, which replaces the session's file, on the writer thread once
        nothing writes the session (as ``pack`` does, but waiting instead of giving up)."""
        await self._until_idle(session_id)
        return await self._replacing(session_id, fn, *args)

    async def pack(self, session_id: str, made: Compressed, detail: dict[str, Any]) -> bool:
        """Put a cold session's compressed copy in place of its plain file, once nothing
        writes it: its writer (if one is open and idle) is closed first; a session being
        loaded or written is left plain (False). A delete waits until it is done; an append
        that comes meanwhile loads the session after it (and makes it plain again)."""
        if session_id in self._packing or session_id in self._loading:
            return False
        await self.quiesce(session_id)
        if self.store.busy(session_id) or session_id in self._loading:
            return False
        return await self._replacing(session_id, self.store.pack, session_id, made, detail)

    async def close(self) -> None:
        """Finish pending syncs, sync what interval mode left, close every file."""
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        if self.store.durability != "none":
            await self._drain()
        self.store.close()
        self.executor.shutdown(wait=True)
        self.syncer.shutdown(wait=True)
