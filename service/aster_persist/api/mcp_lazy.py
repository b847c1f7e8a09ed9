"""``/mcp``, loaded in the background once the store is ready.

The MCP SDK takes about half a second to import, and a daemon that waited for it would
be half a second later to answer ``/readyz``. So the route exists from the start; the
server behind it is imported on a worker thread after the catalog has caught up, and a
request that arrives before then waits for it (a failed load answers 503).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from typing import TYPE_CHECKING, Any

from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .guard import send_problem

if TYPE_CHECKING:
    from ..sessions import Sessions
    from ..storage.memory import MemoryStore

log = logging.getLogger("aster_persist")


class LazyMcp:
    """The ``/mcp`` route, and the task that loads and runs the server behind it."""

    def __init__(self) -> None:
        self.route = Route("/mcp", endpoint=self)
        self.app: Any = None
        self.loaded = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.loaded.wait()
        if self.app is None:
            detail = "The MCP server could not be loaded; the daemon's log says why."
            await send_problem(send, 503, "mcp_unavailable", "MCP unavailable", detail)
            return
        await self.app(scope, receive, send)

    async def serve(self, sessions: Sessions, memory: MemoryStore, stop: asyncio.Event) -> None:
        """Load the server once the store is ready, and run it until ``stop`` is set."""
        try:
            await sessions.ready.wait()
            module = await asyncio.to_thread(
                importlib.import_module, "aster_persist.api.mcp_server"
            )
            front = module.McpFront()
        except Exception:
            log.exception("the MCP server did not load; /mcp answers 503")
            self.loaded.set()
            return
        async with front.running(sessions, memory):
            self.app = front.app
            self.loaded.set()
            await stop.wait()
