"""Group commit: concurrent appends share one trip to the writer and one sync per file.

Two stages, each on its own thread, so writing the next batch overlaps syncing the last::

    request ─► pending ─┐   writer thread                 syncer thread
    request ─► pending ─┼─► write_batch: one os.write ──► sync_groups: one fdatasync per
    request ─► pending ─┘   per request, seq assigned      file for every group queued
                            (next batch gathers)           meanwhile, then settle them
          ◄── futures resolved only after the sync that covers them ◄─┘

A failed sync makes the session read-only at once (no later write to it can pass), and
the writer thread cuts the file back before any waiting request is told it failed.
Every store mutation (create, trash, restore…) runs on the same single writer thread,
so there is exactly one writer per file inside the daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ..errors import AsterError
from .transcripts import AppendRequest, AppendResult, TranscriptStore, WriteGroup

log = logging.getLogger("aster_persist")
T = TypeVar("T")
Waiting = list[tuple[AppendRequest, "asyncio.Future[AppendResult]"]]


class GroupCommitter:
    def __init__(self, store: TranscriptStore, *, sync_interval: float = 0.2) -> None:
        self.store = store
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aster-writer")
        self.syncer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aster-syncer")
        self._pending: Waiting = []
        self._syncing: list[tuple[Waiting, WriteGroup]] = []
        self._task: asyncio.Task[None] | None = None
        self._sync_task: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self.sync_interval = sync_interval
        self.batches = 0
        self.syncs = 0
        self.appends = 0

    def start(self) -> None:
        if self.store.durability == "interval":
            self._ticker = asyncio.get_running_loop().create_task(self._tick())

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a store mutation on the writer thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, lambda: fn(*args, **kwargs))

    async def append(self, request: AppendRequest) -> AppendResult:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[AppendResult] = loop.create_future()
        self._pending.append((request, future))
        if self._task is None:
            self._task = loop.create_task(self._write_loop())
        return await future

    async def _write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                requests = [request for request, _ in batch]
                try:
                    group = await loop.run_in_executor(
                        self.executor, self.store.write_batch, requests
                    )
                except Exception as exc:  # the batch itself failed: fail each request
                    log.exception("append batch failed")
                    _fail(batch, exc)
                    continue
                self.batches += 1
                self.appends += len(batch)
                if self.store.durability == "fsync" and group.touched:
                    self._syncing.append((batch, group))
                    if self._sync_task is None:
                        self._sync_task = loop.create_task(self._sync_loop())
                else:
                    _settle(batch, group.results)
        finally:
            self._task = None

    async def _sync_loop(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._syncing:
                waiting, self._syncing = self._syncing, []
                groups = [group for _, group in waiting]
                try:
                    rollbacks = await loop.run_in_executor(
                        self.syncer, self.store.sync_groups, groups
                    )
                    for sid, (size, info) in rollbacks.items():
                        await self.call(self.store.rollback, sid, size, info)
                except Exception as exc:
                    log.exception("sync failed")
                    for batch, _ in waiting:
                        _fail(batch, exc)
                    continue
                self.syncs += 1
                for batch, group in waiting:
                    _settle(batch, group.results)
        finally:
            self._sync_task = None

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.sync_interval)
            await self.call(self.store.sync_unsynced)

    async def close(self) -> None:
        """Finish queued appends and syncs, then stop both threads."""
        while self._task is not None or self._sync_task is not None:
            for task in (self._task, self._sync_task):
                if task is not None:
                    with contextlib.suppress(Exception):
                        await task
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        await self.call(self.store.sync_unsynced)
        await self.call(self.store.close)
        self.executor.shutdown(wait=True)
        self.syncer.shutdown(wait=True)


def _settle(batch: Waiting, results: list[AppendResult | AsterError]) -> None:
    for (_, future), result in zip(batch, results, strict=True):
        if future.done():
            continue
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)


def _fail(batch: Waiting, exc: BaseException) -> None:
    for _, future in batch:
        if not future.done():
            future.set_exception(exc)
