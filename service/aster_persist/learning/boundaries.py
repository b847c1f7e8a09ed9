"""Consolidation at session boundaries (stage 2 of the design's learning loop).

When a project's session ends — no append in the project for ``idle`` seconds, or a new
session starts in it — one bounded consolidation pass of that project's memory is
queued, at most once every ``min_interval`` seconds for a project. The pass is a job on
the learner's queue (after the extraction jobs queued before it), so it never holds up
an append; a model that fails or is slow makes the pass fail and be journaled, and the
queue goes on. Off without a model, or with ``idle`` 0.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class Boundaries:
    """Where each project's activity stands, and the passes it makes due."""

    def __init__(
        self,
        put: Callable[[dict[str, Any]], Any],
        *,
        idle: float,
        min_interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.put = put  # queues a job on the learner's queue
        self.idle = idle
        self.min_interval = min_interval
        self.clock = clock
        self.active: dict[str, float] = {}  # scope -> its last append (clock time)
        self.queued: dict[str, float] = {}  # scope -> when its last pass was queued

    def touched(self, scope: str) -> None:
        """An append in the project: its session is going on."""
        self.active[scope] = self.clock()

    def started(self, scope: str) -> None:
        """A new session in the project: the one before it ended. (Within the interval,
        the project stays as it was, so its idle time makes the pass later.)"""
        if scope in self.active and self.due(scope, "a new session started in the project"):
            del self.active[scope]

    def tick(self) -> None:
        """Make a pass due for each project idle for ``idle`` seconds (one whose pass the
        interval holds back waits for it, still idle)."""
        now = self.clock()
        for scope, last in list(self.active.items()):
            trigger = f"no activity in the project for {self.idle / 60:g} min"
            if now - last >= self.idle and self.due(scope, trigger):
                del self.active[scope]

    def due(self, scope: str, trigger: str) -> bool:
        """Queue a pass of ``scope`` unless one was queued within ``min_interval``."""
        now = self.clock()
        if now - self.queued.get(scope, float("-inf")) < self.min_interval:
            return False  # one pass in min_interval is the budget
        self.put({"kind": "consolidate", "scope": scope, "trigger": trigger})
        self.queued[scope] = now
        return True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(min(30.0, max(0.2, self.idle / 4)))
            try:
                self.tick()
            except Exception:  # a pass not queued must not end the watch
                log.exception("could not queue a consolidation pass")
