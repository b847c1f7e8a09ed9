"""Group commit: concurrent appends share one trip to the writer thread and one sync.

::

    request ──► pending ──┐          writer thread
    request ──► pending ──┼─► batch ─► apply_batch: write all, fdatasync each file once
    request ──► pending ──┘                │
          ◄── futures resolved ◄───────────┘   (next batch gathers meanwhile)

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

from .transcripts import AppendRequest, AppendResult, TranscriptStore

log = logging.getLogger("aster_persist")
T = TypeVar("T")


class GroupCommitter:
    def __init__(self, store: TranscriptStore, *, sync_interval: float = 0.2) -> None:
        self.store = store
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aster-writer")
        self._pending: list[tuple[AppendRequest, asyncio.Future[AppendResult]]] = []
        self._task: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self.sync_interval = sync_interval
        self.batches = 0
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
            self._task = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                requests = [request for request, _ in batch]
                try:
                    results = await loop.run_in_executor(
                        self.executor, self.store.apply_batch, requests
                    )
                except BaseException as exc:  # the batch itself failed: fail each request
                    log.exception("append batch failed")
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    if isinstance(exc, asyncio.CancelledError):
                        raise
                    continue
                self.batches += 1
                self.appends += len(batch)
                for (_, future), result in zip(batch, results, strict=True):
                    if future.done():
                        continue
                    if isinstance(result, BaseException):
                        future.set_exception(result)
                    else:
                        future.set_result(result)
        finally:
            self._task = None

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.sync_interval)
            await self.call(self.store.sync_unsynced)

    async def close(self) -> None:
        """Finish queued appends, sync, and stop the writer thread."""
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        await self.call(self.store.sync_unsynced)
        await self.call(self.store.close)
        self.executor.shutdown(wait=True)
