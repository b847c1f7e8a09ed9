"""The store as an MCP server, at ``/mcp`` on the daemon (Streamable HTTP).

It shares the daemon's stores and sits behind the same front door (Host allowlist,
Origin check, token), so an MCP client needs one URL and, when auth is on, one
header. Tools: ``remember``, ``recall``, ``forget`` (the very runner behind
``/v1/memory/tools``), ``search_memory``, ``search_sessions``, ``get_session`` and
``list_sessions``, each made from its one definition in ``schemas/tools.py`` (so a
memory tool reads as in ``/v1/memory/tools``, and arguments it does not define are
refused before it runs); each answers with concise text for the model and structured
content beside it. Resources: a project's memory context, each block, each session's
transcript; journal entries (the change feed's source) become resource-updated and
list-changed events for clients listening. A prompt loads a project's memory context.
A block in which a hand edit left a secret is withheld from every tool and resource.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from mcp.server.mcpserver import MCPServer, ResourceSecurity
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourcesListChanged, ResourceUpdated
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent
from pydantic import ConfigDict, create_model
from starlette.types import ASGIApp

from .. import __version__
from ..api.models import summary_of
from ..errors import AsterError
from ..index.text import parse_query
from ..schemas.rendering import read_event, unretracted
from ..schemas.tools import MCP_TOOLS, ToolSpec
from ..services.tools import search_memory as search_tool
from ..services.tools import withheld
from ..storage.home import check_session_id

if TYPE_CHECKING:
    from ..services.memory import Memory
    from ..services.sessions import Sessions

CONTEXT = "aster://memory/context"
RESULT_CHARS = 2000  # a tool result or content is cut to this in get_session's text
INSTRUCTIONS = (
    "Durable memory and searchable history shared by coding agents. Read the "
    "project's memory context first (resource aster://memory/context or the "
    "memory_context prompt), recall a block before relying on it, remember what "
    "will matter in future sessions, and search past sessions before redoing work."
)


Handler = Callable[..., Awaitable[CallToolResult]]


class Arguments(ArgModelBase):
    """A tool's arguments; a key the tool does not take is refused, never dropped."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")


def make_tool(spec: ToolSpec, fn: Handler) -> Tool:
    """The MCP tool of a definition: its input schema is that of the model the
    arguments are checked with, made from the definition's parameters, and ``fn``
    takes those parameters by name."""
    taken, defined = list(inspect.signature(fn).parameters), [p.name for p in spec.params]
    if taken != defined:
        raise TypeError(f"the {spec.name} tool takes {taken}; its definition has {defined}")
    model = create_model(f"{spec.name}Arguments", __base__=Arguments, **spec.fields())
    return Tool(
        fn=fn,
        name=spec.name,
        title=None,
        description=spec.description,
        parameters=model.model_json_schema(by_alias=True),
        fn_metadata=FuncMetadata(arg_model=model),
        is_async=True,
        context_kwarg=None,
        annotations=None,
    )


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
        """Serve while the daemon does; journal entries become change events."""
        self.sessions, self.memory = sessions, memory
        self.loop = asyncio.get_running_loop()
        memory.store.journal.listeners.append(self._changed)
        try:
            async with self.server.session_manager.run():
                yield
        finally:
            memory.store.journal.listeners.remove(self._changed)

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
            scope = self.memory.store.scope_for(repo_root)
        except AsterError as exc:
            raise ToolError(exc.detail) from None
        if repo_root:
            self.roots.setdefault(scope, set()).add(repo_root)
        return scope

    # -- tools, resources, the prompt -----------------------------------------------------

    def _register(self) -> MCPServer[Any]:
        """The MCP server: the tools, each made from its one definition, the resources
        and the prompt."""
        specs = {spec.name: spec for spec in MCP_TOOLS}
        tools: list[Tool] = []

        def tool(fn: Handler) -> Handler:
            tools.append(make_tool(specs[fn.__name__], fn))
            return fn

        async def memory_tool(name: str, arguments: dict[str, Any], repo_root: str | None,
                              session_id: str | None) -> str:  # fmt: skip
            assert self.memory is not None
            scope = self._scope(repo_root)
            try:
                text = await self.memory.tool(scope, name, arguments, session=session_id)
            except AsterError as exc:  # said to the agent, as a failed call
                raise ToolError(exc.detail) from None
            return str(text)

        @tool
        async def remember(
            note: str, title: str | None, repo_root: str | None, session_id: str | None
        ) -> CallToolResult:
            arguments = {"note": note, **({"title": title} if title else {})}
            text = await memory_tool("remember", arguments, repo_root, session_id)
            return _result(text, {"result": text, "scope": self._scope(repo_root)})

        @tool
        async def recall(
            name: str, repo_root: str | None, session_id: str | None
        ) -> CallToolResult:
            text = await memory_tool("recall", {"name": name}, repo_root, session_id)
            return _result(text, {"name": name, "scope": self._scope(repo_root), "text": text})

        @tool
        async def forget(name: str, repo_root: str | None) -> CallToolResult:
            text = await memory_tool("forget", {"name": name}, repo_root, None)
            return _result(text, {"result": text, "name": name})

        @tool
        async def search_memory(query: str, k: int, repo_root: str | None) -> CallToolResult:
            assert self.sessions is not None
            text, hits = await self._query(
                search_tool(self.sessions, self._scope(repo_root), query, k)
            )
            return _result(text, {"items": hits})

        @tool
        async def search_sessions(query: str, repo_root: str | None, limit: int) -> CallToolResult:
            assert self.sessions is not None
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

        @tool
        async def get_session(session_id: str, after: int, limit: int) -> CallToolResult:
            assert self.sessions is not None
            try:
                check_session_id(session_id)
                lines, _raw, info = await self.sessions.read(session_id)
            except AsterError as exc:
                raise ToolError(exc.detail) from None
            events = [
                e
                for e in unretracted(lines)
                if e.get("type") != "session" and isinstance(e.get("seq"), int) and e["seq"] > after
            ][:limit]
            text = "\n".join(_line(e) for e in events) or "No events there."
            more = bool(events) and events[-1]["seq"] < info.last_seq
            head = f"{info.title or '(untitled)'} · {info.repo_root} · {info.last_seq} events\n"
            return _result(head + text, {"session_id": session_id, "events": events, "more": more})

        @tool
        async def list_sessions(repo_root: str | None, limit: int) -> CallToolResult:
            assert self.sessions is not None
            page = await self._query(
                self.sessions.listing(repo_root=repo_root, state=None, limit=limit, cursor=None)
            )
            items = [summary_of(i, page.parents.get(i.id)).model_dump() for i in page.items]
            lines = [
                f"- {s['id']} {s['title'] or '(untitled)'} · {s['events']} events · {s['updated_at']}"
                for s in items
            ]
            return _result("\n".join(lines) or "No sessions.", {"items": items})

        missing = sorted(specs.keys() - {t.name for t in tools})
        if missing:
            raise TypeError(f"no function for the tools {missing}")
        server: MCPServer[Any] = MCPServer(
            "aster-persist",
            version=__version__,
            instructions=INSTRUCTIONS,
            tools=tools,
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
                text, _block = self.memory.store.read_block(scope, name)
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

        return server

    async def _context(self, repo_root: str | None) -> str:
        assert self.memory is not None
        scope = self._scope(repo_root)
        project = None if scope == "global" else scope
        result = await asyncio.to_thread(self.memory.store.render_context, project, None)
        return str(result["content"])

    async def _query(self, pending: Any) -> Any:
        try:
            return await pending
        except AsterError as exc:
            raise ToolError(exc.detail) from None


def _line(line: dict[str, Any]) -> str:
    """An event on one line, for a model reading a transcript."""
    event = read_event(line)
    if event.kind == "summary":
        return f"#{event.seq} [summary] {_cut(event.text)}"
    if event.kind == "eviction":
        return f"#{event.seq} [evicted {event.tool_call_id or event.target_seq}]"
    if event.kind == "title":
        return f"#{event.seq} [title] {event.text}"
    if event.kind == "reasoning":
        return f"#{event.seq} [thinking] {_cut(event.text, 300)}"
    if event.kind == "retraction":
        return f"#{event.seq} [took back #{event.target_seq}] {event.text}".rstrip()
    parts = [f"#{event.seq} {event.role}:"]
    if event.text:
        parts.append(_cut(event.text))
    for call in event.calls:
        parts.append(f"[calls {call.name}({_cut(call.arguments, 300)})]")
    return " ".join(parts)


def _cut(text: Any, limit: int = RESULT_CHARS) -> str:
    value = str(text or "")
    return value if len(value) <= limit else value[:limit] + f"… ({len(value)} characters)"
