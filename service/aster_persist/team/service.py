"""The team: this daemon's place among the machines that share sessions and memory
through NATS JetStream (``ASTER_TEAM_URL``). Alone (no URL), it does nothing and says so.

It connects in the background: the daemon serves and appends locally whether the cluster
answers or not, and what was not published yet is published once it does."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from ..storage.home import normalize_repo_root
from .link import STREAM, Link
from .memory import MemoryShare
from .projects import ProjectKeys
from .sessions import SessionShare, durable_name

if TYPE_CHECKING:
    from ..services.memory import Memory
    from ..services.sessions import Sessions
    from ..services.sessions.parts import Appended

log = logging.getLogger("aster_persist")


class Team:
    """Joined to a cluster when ``urls`` are given; each of its parts a task."""

    def __init__(
        self,
        sessions: Sessions,
        memory: Memory,
        *,
        state: Path,
        urls: list[str],
        credentials: Path | None,
        machine: str,
        projects: list[str] | None,
        share_global_memory: bool = False,
    ) -> None:
        self.machine = machine
        self.enabled = bool(urls)
        self.link = Link(urls, credentials)
        self.keys = sessions.project_keys or ProjectKeys()
        # the repository roots shared by name; None: every one with a git remote
        self.projects = None if projects is None else {normalize_repo_root(p) for p in projects}
        self.share = SessionShare(self.link, sessions, machine, self.shared, self.keys.of)
        self.memory = MemoryShare(
            self.link,
            memory,
            machine,
            keys=self.keys,
            shared=self.shared,
            state=state,
            share_global=share_global_memory,
        )
        if self.enabled:  # a shared project's memory is the team's from the start
            memory.share_with(self.memory)
        self._sessions = sessions
        self._tasks: list[asyncio.Task[None]] = []
        self.error: str | None = None
        self.started = time.time()

    def shared(self, repo_root: str) -> bool:
        """Whether the sessions of ``repo_root`` are shared with the team (any thread)."""
        if self.projects is not None:
            return normalize_repo_root(repo_root) in self.projects
        key = self.keys.of(repo_root)
        return key is not None and not key.startswith("commit:")

    def appended(self, notice: Appended) -> None:
        if self.enabled:
            self.share.appended(notice)

    def start(self) -> None:
        if self.enabled:
            self._tasks.append(asyncio.get_running_loop().create_task(self._run()))

    async def _run(self) -> None:
        while True:  # until the cluster answers
            try:
                await self.link.connect()
                break
            except Exception as exc:
                self.error = f"not connected: {exc}"
                log.warning("team: %s; trying again", self.error)
                await self.link.close()
                await asyncio.sleep(2)
        self.error = None
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._kept("copying", self.share.consume_forever)))
        self._tasks.append(loop.create_task(self._kept("publishing", self.share.publish_forever)))
        self._tasks.append(loop.create_task(self._kept("sharing memory", self.memory.run)))
        await self._kept("looking for what waits", self._mark_owned, again=False)

    async def _mark_owned(self) -> None:
        """Mark every shared session of this machine: what may wait since the last run."""
        owned = await self._sessions.owned()
        roots = {root for _, root in owned}
        shared = {root for root in roots if await asyncio.to_thread(self.shared, root)}
        self.share.mark([sid for sid, root in owned if root in shared])

    async def _kept(
        self, doing: str, work: Callable[[], Awaitable[None]], *, again: bool = True
    ) -> None:
        """Run ``work``; should it fail, say so in the status and (``again``) start it
        again a second later: no part of the team stops for good without a word."""
        while True:
            try:
                await work()
                self.error = None
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.error = f"{doing} failed: {exc}"
                log.exception("team: %s failed", doing)
                if not again:
                    return
                await asyncio.sleep(1)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.link.close()

    async def status(self) -> dict[str, Any]:
        """What ``GET /v1/team`` shows."""
        share = self.share
        pending_in = None
        if self.link.connected:
            with contextlib.suppress(Exception):
                info = await asyncio.wait_for(  # the status answers at once, cluster or not
                    self.link.js.consumer_info(STREAM, durable_name(self.machine)), 1
                )
                pending_in = int(info.num_pending) + int(info.num_ack_pending)
        lag = sorted(share.lag_ms)
        return {
            "enabled": self.enabled,
            "machine": self.machine,
            "connected": self.link.connected,
            "error": self.error,
            "servers": [_shown(url) for url in self.link.urls],
            "replicas": self.link.replicas or None,
            "machines": [
                {"machine": name, "last_seen": seen}
                for name, seen in sorted(share.machines.items())
            ],
            "pending": {"out": share.pending_out, "in": pending_in},
            "problems": [
                {"session_id": sid, "problem": problem}
                for sid, problem in sorted(share.problems.items())
            ],
            "memory": self.memory.status(),
            "published": share.published,
            "applied": share.applied,
            "lag_ms": {
                "p50": round(statistics.median(lag), 1) if lag else None,
                "max": round(lag[-1], 1) if lag else None,
            },
        }


def _shown(url: str) -> str:
    """A server's address as the status shows it: a user, password or token in it left
    out (``nats://token@host`` is a way to pass one)."""
    parts = urlsplit(url)
    if parts.hostname is None or "@" not in parts.netloc:
        return url
    host = parts.hostname + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
