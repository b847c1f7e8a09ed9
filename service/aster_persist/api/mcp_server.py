"""The store as an MCP server, at ``/mcp`` on the daemon (Streamable HTTP).

It shares the daemon's stores and sits behind the same front door (Host allowlist,
Origin check, token), so an MCP client needs one URL and, when auth is on, one
header. Tools: ``remember``, ``recall``, ``forget`` (the very runner behind
``/v1/memory/tools``), ``search_memory``, ``search_sessions``, ``get_session`` and
``list_sessions``; each answers with concise text for the model and structured
content beside it. Resources: a project's memory context, each block, each session's
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
from mcp_types import CallToolResult, TextContent
from starlette.types import ASGIApp

from .. import __version__
from ..errors import AsterError
from ..index.text import parse_query
from ..storage.home import check_session_id
from ..tools import TOOLS, run_tool, withheld
from ..tools import search_memory as search_tool
from .models import summary_of

if TYPE_CHECKING:
    from ..sessions import Sessions
    from ..storage.memory import MemoryStore

CONTEXT = "aster://memory/context"
MAX_WINDOW = 200  # events one get_session call returns at most
RESULT_CHARS = 2000  # a tool result or content is cut to this in get_session's text


def _guidance(name: str) -> str:
    return str(next(t["function"]["description"] for t in TOOLS if t["function"]["name"] == name))


def _result(text: str, data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def context_uri(repo_root: str | None) -> str:
    return f"{CONTEXT}?repo_root={quote(repo_root, safe='/')}" if repo_root else CONTEXT


def block_uri(scope: str, name: str) -> str:
    return f"aster://memory/{scope}/{name}"


class McpFront:
    """The MCP server over the daemon's stores, and the routes that serve it."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self.server: MCPServer[Any] = MCPServer(
            "aster-persist",
            version=__version__,
            instructions=(
                "Durable memory and searchable history shared by coding agents. Read the "
                "project's memory context first (resource aster://memory/context or the "
                "memory_context prompt), recall a block before relying on it, remember what "
                "will matter in future sessions, and search past sessions before redoing work."
            ),
            subscriptions=self.bus,
        )
        self.sessions: Sessions | None = None
        self.memory: MemoryStore | None = None
        self.roots: dict[str, set[str]] = {}  # scope -> repository roots seen for it
        self.loop: asyncio.AbstractEventLoop | None = None
        self._register()
        app = self.server.streamable_http_app(
            streamable_http_path="/mcp",
            # the daemon's Guard checks Host, Origin and the token before this runs
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        (route,) = app.routes  # the one Streamable HTTP endpoint
        self.app: ASGIApp = route.endpoint  # type: ignore[attr-defined]

    @contextlib.asynccontextmanager
    async def running(self, sessions: Sessions, memory: MemoryStore) -> AsyncIterator[None]:
        """Serve while the daemon does; journal entries become change events."""
        self.sessions, self.memory = sessions, memory
        self.loop = asyncio.get_running_loop()
        memory.journal.listeners.append(self._changed)
        try:
            async with self.server.session_manager.run():
                yield
        finally:
            memory.journal.listeners.remove(self._changed)

    # -- change events --------------------------------------------------------------------

    def _changed(self, entry: dict[str, Any]) -> None:
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

    def _scope(self, repo_root: str | None) -> str:
        assert self.memory is not None
        try:
            scope = self.memory.scope_for(repo_root)
        except AsterError as exc:
            raise ToolError(exc.detail) from None
        if repo_root:
            self.roots.setdefault(scope, set()).add(repo_root)
        return scope

    # -- tools, resources, the prompt -----------------------------------------------------

    def _register(self) -> None:
        server = self.server

        async def memory_tool(name: str, arguments: dict[str, Any], repo_root: str | None,
                              session_id: str | None) -> str:  # fmt: skip
            assert self.memory is not None and self.sessions is not None
            scope = self._scope(repo_root)
            text = await self.sessions.committer.call(
                run_tool, self.memory, scope, name, arguments, session=session_id
            )
            return str(text)

        @server.tool(description=_guidance("remember"))
        async def remember(
            note: str,
            title: str | None = None,
            repo_root: str | None = None,
            session_id: str | None = None,
        ) -> CallToolResult:
            arguments = {"note": note, **({"title": title} if title else {})}
            text = await memory_tool("remember", arguments, repo_root, session_id)
            return _result(text, {"result": text, "scope": self._scope(repo_root)})

        @server.tool(description=_guidance("recall"))
        async def recall(
            name: str, repo_root: str | None = None, session_id: str | None = None
        ) -> CallToolResult:
            text = await memory_tool("recall", {"name": name}, repo_root, session_id)
            return _result(text, {"name": name, "scope": self._scope(repo_root), "text": text})

        @server.tool(description=_guidance("forget"))
        async def forget(name: str, repo_root: str | None = None) -> CallToolResult:
            text = await memory_tool("forget", {"name": name}, repo_root, None)
            return _result(text, {"result": text, "name": name})

        @server.tool(description=_guidance("search_memory"))
        async def search_memory(
            query: str, repo_root: str | None = None, k: int = 5
        ) -> CallToolResult:
            assert self.sessions is not None
            text, hits = await self._query(
                search_tool(self.sessions, self._scope(repo_root), query, k)
            )
            return _result(text, {"items": hits})

        @server.tool(
            description=(
                "Search past sessions (turns, tool calls and results, summaries): any of the "
                'words, best first; "phrases", prefix*, AND/OR/NOT and repo:/role:/after: '
                "filters work. Each hit names its session and turn for get_session."
            )
        )
        async def search_sessions(
            query: str, repo_root: str | None = None, limit: int = 10
        ) -> CallToolResult:
            assert self.sessions is not None
            if not 1 <= limit <= 50:
                raise ToolError("limit must be from 1 to 50")
            parsed = parse_query(query)
            parsed.repo = parsed.repo or repo_root
            hits, _next = await self._query(self.sessions.search(parsed, limit=limit, cursor=None))
            lines = [
                f"- session {h['session_id']} turn {h['seq']} ({h.get('role') or h['kind']}, "
                f"{h.get('ts') or ''}): {h['snippet']}"
                for h in hits
            ]
            text = "\n".join(lines) or "No session matches that."
            return _result(text, {"items": hits})

        @server.tool(
            description=(
                "Read a window of a session's transcript: the events after seq `after`, at "
                "most `limit` of them (long contents cut)."
            )
        )
        async def get_session(session_id: str, after: int = 0, limit: int = 50) -> CallToolResult:
            assert self.sessions is not None
            if not 1 <= limit <= MAX_WINDOW or after < 0:
                raise ToolError(f"limit must be from 1 to {MAX_WINDOW} and after at least 0")
            try:
                check_session_id(session_id)
                lines, _raw, info = await self.sessions.read(session_id)
            except AsterError as exc:
                raise ToolError(exc.detail) from None
            events = [
                e
                for e in lines
                if e.get("type") != "session" and isinstance(e.get("seq"), int) and e["seq"] > after
            ][:limit]
            text = "\n".join(_line(e) for e in events) or "No events there."
            more = bool(events) and events[-1]["seq"] < info.last_seq
            head = f"{info.title or '(untitled)'} · {info.repo_root} · {info.last_seq} events\n"
            return _result(head + text, {"session_id": session_id, "events": events, "more": more})

        @server.tool(description="List sessions, most recently active first.")
        async def list_sessions(repo_root: str | None = None, limit: int = 20) -> CallToolResult:
            assert self.sessions is not None
            if not 1 <= limit <= 200:
                raise ToolError("limit must be from 1 to 200")
            page = await self._query(
                self.sessions.listing(repo_root=repo_root, state=None, limit=limit, cursor=None)
            )
            items = [summary_of(info).model_dump() for info in page.items]
            lines = [
                f"- {s['id']} {s['title'] or '(untitled)'} · {s['events']} events · {s['updated_at']}"
                for s in items
            ]
            return _result("\n".join(lines) or "No sessions.", {"items": items})

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
                text, _block = self.memory.read_block(scope, name)
            except AsterError as exc:
                raise ResourceError(exc.detail) from None
            notice = withheld(name, text)  # a secret left there by hand never goes out
            if notice is not None:
                raise ResourceError(notice)
            return text

        @server.resource(
            "aster://sessions/{session_id}",
            name="session-transcript",
            description="A session's transcript as JSON Lines (large contents put back).",
            mime_type="application/x-ndjson",
        )
        async def session_transcript(session_id: str) -> str:
            assert self.sessions is not None
            try:
                check_session_id(session_id)
                data = await self.sessions.export(session_id)
            except AsterError as exc:
                raise ResourceError(exc.detail) from None
            return data.decode("utf-8", "replace")

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

    async def _context(self, repo_root: str | None) -> str:
        assert self.memory is not None
        scope = self._scope(repo_root)
        project = None if scope == "global" else scope
        result = await asyncio.to_thread(self.memory.render_context, project, None)
        return str(result["content"])

    async def _query(self, pending: Any) -> Any:
        try:
            return await pending
        except AsterError as exc:
            raise ToolError(exc.detail) from None


def _line(event: dict[str, Any]) -> str:
    seq = event.get("seq")
    if event.get("type") == "summary":
        return f"#{seq} [summary] {_cut(event.get('content'))}"
    if event.get("type") == "eviction":
        return f"#{seq} [evicted {event.get('tool_call_id') or event.get('target_seq')}]"
    if event.get("type") == "title":
        return f"#{seq} [title] {event.get('title')}"
    role = event.get("role")
    parts = [f"#{seq} {role}:"]
    content = event.get("content")
    if content:
        parts.append(_cut(content if isinstance(content, str) else orjson.dumps(content).decode()))
    for call in event.get("tool_calls") or []:
        function = call.get("function") or {}
        parts.append(f"[calls {function.get('name')}({_cut(function.get('arguments'), 300)})]")
    return " ".join(parts)


def _cut(text: Any, limit: int = RESULT_CHARS) -> str:
    value = str(text or "")
    return value if len(value) <= limit else value[:limit] + f"… ({len(value)} characters)"
