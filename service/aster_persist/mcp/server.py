"""The store as an MCP server, at ``/mcp`` on the daemon (Streamable HTTP).

It shares the daemon's stores and sits behind the same front door (Host allowlist,
Origin check, token), so an MCP client needs one URL and, when auth is on, one
header. Tools (``tools.py``): ``remember``, ``recall``, ``forget`` (the very runner
behind ``/v1/memory/tools``), ``search_memory``, ``edit_block``, ``list_memory``,
``record_procedure``, ``search_sessions``, ``get_session`` and ``list_sessions``, each
made from its one definition (so a memory tool reads as in ``/v1/memory/tools``, and
arguments it does not define are refused before it runs); each answers with concise
text for the model and structured content beside it. Resources: a project's memory context, each block, each session's
transcript; journal entries (the change feed's source) become resource-updated and
list-changed events for clients listening. A prompt loads a project's memory context.
A block in which a hand edit left a secret is withheld from every tool and resource.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import orjson
from mcp.server.mcpserver import MCPServer, ResourceSecurity
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourcesListChanged, ResourceUpdated
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp

from .. import __version__
from ..errors import AsterError
from ..schemas.names import check_session_id
from ..schemas.rendering import unretracted
from ..secrets.redact import redacted
from ..services.tools import withheld
from .tools import tools_of

if TYPE_CHECKING:
    from ..services.memory import Memory
    from ..services.sessions import Sessions

CONTEXT = "aster://memory/context"
INSTRUCTIONS = (
    "Durable memory and searchable history shared by coding agents. Read the "
    "project's memory context first (resource aster://memory/context or the "
    "memory_context prompt), recall a block before relying on it, remember what "
    "will matter in future sessions, and search past sessions before redoing work."
)


def context_uri(repo_root: str | None) -> str:
    return f"{CONTEXT}?repo_root={quote(repo_root, safe='/')}" if repo_root else CONTEXT


def block_uri(scope: str, name: str) -> str:
    return f"aster://memory/{scope}/{name}"


class McpFront:
    """The MCP server over the daemon's stores, and the routes that serve it."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self.sessions: Sessions | None = None
        self.memory: Memory | None = None
        self.roots: dict[str, set[str]] = {}  # scope -> repository roots seen for it
        self.loop: asyncio.AbstractEventLoop | None = None
        self.server: MCPServer[Any] = self._register()
        app = self.server.streamable_http_app(
            streamable_http_path="/mcp",
            # the daemon's Guard checks Host, Origin and the token before this runs
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        (route,) = app.routes  # the one Streamable HTTP endpoint
        self.app: ASGIApp = route.endpoint  # type: ignore[attr-defined]

    @contextlib.asynccontextmanager
    async def running(self, sessions: Sessions, memory: Memory) -> AsyncIterator[None]:
        """Serve while the daemon does (``app.py`` hands it every journal entry, which
        becomes a change event)."""
        self.sessions, self.memory = sessions, memory
        self.loop = asyncio.get_running_loop()
        async with self.server.session_manager.run():
            yield

    # -- change events --------------------------------------------------------------------

    def changed(self, entry: dict[str, Any]) -> None:
        """A journal listener (any thread): announce what the entry changed."""
        if self.loop is None or entry.get("op") == "memory.recall":
            return
        events: list[Any] = []
        op, scope, name = str(entry.get("op")), str(entry.get("scope")), entry.get("name")
        if op.startswith("memory."):
            if name:
                events.append(ResourceUpdated(uri=block_uri(scope, str(name))))
            roots = (
                {r for rs in self.roots.values() for r in rs} | {""}
                if scope == "global"
                else self.roots.get(scope, set())
            )
            events += [ResourceUpdated(uri=context_uri(root or None)) for root in roots]
            events.append(ResourcesListChanged())
        elif op.startswith("session.") and entry.get("session"):
            events.append(ResourceUpdated(uri=f"aster://sessions/{entry['session']}"))
            events.append(ResourcesListChanged())
        if events:
            self.loop.call_soon_threadsafe(self._publish, events)

    def _publish(self, events: list[Any]) -> None:
        async def publish() -> None:
            for event in events:
                await self.bus.publish(event)

        assert self.loop is not None
        self.loop.create_task(publish())

    def stores(self) -> tuple[Sessions, Memory]:
        """The daemon's stores, once it serves."""
        assert self.sessions is not None and self.memory is not None
        return self.sessions, self.memory

    async def scope(self, repo_root: str | None) -> str:
        """The memory scope of a repository root (the global one for None); the roots
        seen are kept, so a change to a scope announces each root's context."""
        try:
            scope = await self.stores()[1].scope_of(repo_root)
        except AsterError as exc:
            raise ToolError(exc.detail) from None
        if repo_root:
            self.roots.setdefault(scope, set()).add(repo_root)
        return scope

    async def query(self, pending: Any) -> Any:
        """What a read of the stores gives; its failure a failed call."""
        try:
            return await pending
        except AsterError as exc:
            raise ToolError(exc.detail) from None

    # -- tools, resources, the prompt -----------------------------------------------------

    def _register(self) -> MCPServer[Any]:
        """The MCP server: the tools (``tools.py``), the resources and the prompt."""
        server: MCPServer[Any] = MCPServer(
            "aster-persist",
            version=__version__,
            instructions=INSTRUCTIONS,
            tools=tools_of(self),
            subscriptions=self.bus,
        )

        @server.resource(
            "aster://memory/context{?repo_root}",
            name="memory-context",
            description="The memory context of a project (or the global one): put it in the prompt.",
            mime_type="text/markdown",
            security=ResourceSecurity(exempt_params={"repo_root"}),  # a root, never opened
        )
        async def memory_context(repo_root: str | None = None) -> str:
            return await self._context(repo_root)

        @server.resource(
            "aster://memory/{scope}/{name}",
            name="memory-block",
            description="One memory block, frontmatter and body (scope: global or project:<slug>).",
            mime_type="text/markdown",
        )
        async def memory_block(scope: str, name: str) -> str:
            assert self.memory is not None
            try:
                text, _block = await self.memory.read(scope, name)
            except AsterError as exc:
                raise ResourceError(exc.detail) from None
            notice = withheld(name, text)  # a secret left there by hand never goes out
            if notice is not None:
                raise ResourceError(notice)
            return text

        @server.resource(
            "aster://sessions/{session_id}",
            name="session-transcript",
            description="A session's transcript as JSON Lines (large contents put back; "
            "what a retraction took back left out, as every view leaves it; each secret "
            "replaced by [redacted: <kind>]).",
            mime_type="application/x-ndjson",
        )
        async def session_transcript(session_id: str) -> str:
            assert self.sessions is not None
            try:
                check_session_id(session_id)
                data = await self.sessions.export(session_id)
            except AsterError as exc:
                raise ResourceError(exc.detail) from None
            lines = [orjson.loads(line) for line in data.splitlines() if line.strip()]
            kept = redacted(unretracted(lines))  # every secret in it redacted
            if kept is lines:
                return data.decode("utf-8", "replace")
            return "".join(orjson.dumps(line).decode() + "\n" for line in kept)

        @server.prompt(
            name="memory_context",
            description="Start a task with the project's memory: core memory and the index of blocks.",
        )
        async def memory_context_prompt(repo_root: str = "") -> str:
            context = await self._context(repo_root or None)
            return (
                "Here is what you remember about this project. Recall a block before you rely "
                "on it, and remember what will matter next time.\n\n" + context
            )

        return server

    async def _context(self, repo_root: str | None) -> str:
        assert self.memory is not None
        scope = await self.scope(repo_root)
        project = None if scope == "global" else scope
        result = await self.memory.context(project, None)
        return str(result["content"])
