"""``/mcp``, with the server behind it loaded on its first request.

The MCP SDK takes about half a second of processor time to import. A daemon that
imported it at start would answer ``/readyz`` that much later, and one that imported it
in the background would slow its first requests instead; most daemons never serve an
MCP client at all. So the route exists from the start, the first request to it imports
the server on a worker thread (every request meanwhile waits for it), and a server
that cannot load answers 503.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import logging
from typing import TYPE_CHECKING, Any

from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..api.guard import send_problem

if TYPE_CHECKING:
    from ..services.memory import Memory
    from ..services.sessions import Sessions

log = logging.getLogger("aster_persist")


class LazyMcp:
    """The ``/mcp`` route, and the task that loads and runs the server behind it."""

    def __init__(self) -> None:
        self.route = Route("/mcp", endpoint=self)
        self.app: Any = None
        self.loaded = asyncio.Event()
        self._stores: tuple[Sessions, Memory] | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._front: Any = None  # the server, once loaded and running

    def attach(self, sessions: Sessions, memory: Memory) -> None:
        """The stores the server will use, once the daemon has opened them."""
        self._stores = sessions, memory

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._task is None and self._stores is not None:
            # a context of its own: the server outlives this request (and who asked it)
            self._task = asyncio.get_running_loop().create_task(
                self._serve(*self._stores), context=contextvars.Context()
            )
        if self._task is not None:
            await self.loaded.wait()
        if self.app is None:
            detail = "The MCP server could not be loaded; the daemon's log says why."
            await send_problem(send, 503, "mcp_unavailable", "MCP unavailable", detail)
            return
        await self.app(scope, receive, send)

    async def _serve(self, sessions: Sessions, memory: Memory) -> None:
        try:
            module = await asyncio.to_thread(importlib.import_module, "aster_persist.mcp.server")
            front = module.McpFront()
        except Exception:
            log.exception("the MCP server did not load; /mcp answers 503")
            self.loaded.set()
            return
        async with front.running(sessions, memory):
            self.app, self._front = front.app, front
            self.loaded.set()
            try:
                await self._stop.wait()
            finally:
                self._front = None

    def changed(self, entry: dict[str, Any]) -> None:
        """A journal listener (writer thread): the entry, to the server's change events
        once it runs (before, no client can have asked for any)."""
        front = self._front
        if front is not None:
            front.changed(entry)

    async def close(self) -> None:
        """Stop the server if it ever started (a load still in progress is abandoned)."""
        self._stop.set()
        task = self._task
        if task is None:
            return
        if not self.loaded.is_set():
            task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
        except Exception:  # shutting down: say so, and let the daemon close its stores
            log.exception("the MCP session manager did not stop cleanly")
        self.loaded.set()  # nobody waits forever on a server that is gone
