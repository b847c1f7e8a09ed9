"""The MCP server's tools, each made from its one definition (``schemas/tools.py`` and
``schemas/mcp_tools.py``): its input schema, its annotations (read-only, destructive,
idempotent) and, where the result is structured, its output schema.

Every failure is a failed call (``isError``) whose text says what went wrong and what to
do. A call that leaves out ``repo_root`` uses the project of the connection
(``/mcp?repo_root=…``), else the client's first ``file://`` root (when it declares
roots), else the global memory.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote, urlparse

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict, ValidationError, create_model

from ..api.models import summary_of
from ..errors import AsterError
from ..index.text import parse_query
from ..schemas import frontmatter
from ..schemas.mcp_tools import MCP_TOOLS
from ..schemas.memory import ProcedureIn
from ..schemas.names import check_session_id
from ..schemas.rendering import read_event, unretracted
from ..schemas.tools import ToolSpec
from ..secrets.redact import redacted
from ..services.tools import failure, withheld
from ..services.tools import search_memory as search_tool

if TYPE_CHECKING:
    from ..services.memory import Memory
    from ..services.sessions import Sessions


class Front(Protocol):
    """What the tools need of the server they are served by."""

    def stores(self) -> tuple[Sessions, Memory]: ...

    async def scope(self, repo_root: str | None) -> str: ...

    async def query(self, pending: Any) -> Any: ...


Handler = Callable[..., Awaitable[CallToolResult]]
CONTEXT = "ctx"  # the parameter a tool function gets the request's context by
ROOTS_WAIT = 2.0  # seconds a client has to list its roots
RESULT_CHARS = 2000  # a tool result or content is cut to this in get_session's text


class Arguments(ArgModelBase):
    """A tool's arguments; a key the tool does not take is refused, never dropped."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")


class CheckedTool(Tool):
    """A tool whose arguments, when they are not what its definition takes, are refused
    in words that say what to send (never a validation dump)."""

    async def run(
        self, arguments: dict[str, Any], context: Any, convert_result: bool = False
    ) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            raise ToolError(argument_problems(self.name, self.parameters, exc.__cause__)) from None


def argument_problems(name: str, schema: dict[str, Any], error: ValidationError) -> str:
    """What is wrong with a call's arguments, each named, and what the tool takes."""
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "the arguments"
        given = item.get("input")
        if item["type"] == "extra_forbidden":
            problems.append(f"`{where}` is not one of its arguments")
        elif item["type"] == "missing":
            problems.append(f"`{where}` is required")
        else:
            said = str(item["msg"]).removeprefix("Input ").removeprefix("Value error, ")
            problems.append(f"`{where}` {said}, not {given!r}")
    required = set(schema.get("required", []))
    takes = ", ".join(
        f"{param} (required)" if param in required else param for param in schema["properties"]
    )
    return f"{name}: {'; '.join(problems)}. It takes: {takes}."


def make_tool(spec: ToolSpec, fn: Handler) -> Tool:
    """The MCP tool of a definition: its input schema is that of the model the
    arguments are checked with, made from the definition's parameters, and ``fn``
    takes those parameters by name (and the request's context last, as ``ctx``)."""
    taken = [p for p in inspect.signature(fn).parameters if p != CONTEXT]
    defined = [p.name for p in spec.params]
    if taken != defined:
        raise TypeError(f"the {spec.name} tool takes {taken}; its definition has {defined}")
    model = create_model(f"{spec.name}Arguments", __base__=Arguments, **spec.fields())
    return CheckedTool(
        fn=fn,
        name=spec.name,
        title=None,
        description=spec.description,
        parameters=model.model_json_schema(by_alias=True),
        fn_metadata=FuncMetadata(arg_model=model, output_schema=spec.output),
        is_async=True,
        context_kwarg=CONTEXT,
        annotations=ToolAnnotations.model_validate(spec.hints()),
    )


def result(text: str, data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


async def project_of(repo_root: str | None, ctx: Context[Any, Any] | None) -> str | None:
    """The repository root a call is about: its own, else the connection's, else the
    client's first ``file://`` root; None for the global memory."""
    if repo_root or ctx is None:
        return repo_root
    request = getattr(ctx.request_context, "request", None)
    params = getattr(request, "query_params", None)
    if params is not None and params.get("repo_root"):
        return str(params["repo_root"])
    capabilities = ctx.client_capabilities
    if capabilities is None or capabilities.roots is None:
        return None
    try:
        with anyio.fail_after(ROOTS_WAIT), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # roots are deprecated as of 2026-07-28
            listed = await ctx.session.list_roots()
    except Exception:  # no back channel, a slow or failing client: no root
        return None
    for root in listed.roots:
        uri = urlparse(str(root.uri))
        if uri.scheme == "file" and uri.path:
            return unquote(uri.path)
    return None


def tools_of(front: Front) -> list[Tool]:
    """Every tool of the server, each checked against its definition."""
    specs = {spec.name: spec for spec in MCP_TOOLS}
    tools: list[Tool] = []

    def tool(fn: Handler) -> Handler:
        tools.append(make_tool(specs[fn.__name__], fn))
        return fn

    async def scope_of(repo_root: str | None, ctx: Context[Any, Any]) -> str:
        return await front.scope(await project_of(repo_root, ctx))

    async def memory_tool(
        name: str, arguments: dict[str, Any], scope: str, session: str | None
    ) -> str:
        try:
            answer = await front.stores()[1].tool(scope, name, arguments, session=session)
        except AsterError as exc:
            raise ToolError(failure(name, arguments, exc)) from None
        if answer.failed:
            raise ToolError(answer.text)
        return answer.text

    @tool
    async def remember(
        note: str, title: str | None, repo_root: str | None, session_id: str | None, ctx: Any
    ) -> CallToolResult:
        scope = await scope_of(repo_root, ctx)
        arguments = {"note": note, **({"title": title} if title else {})}
        text = await memory_tool("remember", arguments, scope, session_id)
        return result(text, {"result": text, "scope": scope})

    @tool
    async def recall(
        name: str, repo_root: str | None, session_id: str | None, ctx: Any
    ) -> CallToolResult:
        scope = await scope_of(repo_root, ctx)
        text = await memory_tool("recall", {"name": name}, scope, session_id)
        return result(text, {"name": name, "scope": scope, "text": text})

    @tool
    async def forget(name: str, repo_root: str | None, ctx: Any) -> CallToolResult:
        scope = await scope_of(repo_root, ctx)
        text = await memory_tool("forget", {"name": name}, scope, None)
        return result(text, {"result": text, "name": name})

    @tool
    async def search_memory(query: str, k: int, repo_root: str | None, ctx: Any) -> CallToolResult:
        scope = await scope_of(repo_root, ctx)
        text, hits = await front.query(search_tool(front.stores()[0], scope, query, k))
        return result(text, {"items": hits})

    @tool
    async def edit_block(
        name: str,
        body: str | None,
        description: str | None,
        tags: str | None,
        repo_root: str | None,
        session_id: str | None,
        ctx: Any,
    ) -> CallToolResult:
        memory, scope = front.stores()[1], await scope_of(repo_root, ctx)
        changes: dict[str, Any] = {}
        if description is not None:
            changes["description"] = description
        if tags is not None:
            changes["tags"] = [t.strip() for t in tags.split(",") if t.strip()]
        if body is None and not changes:
            raise ToolError("Nothing to change: give the new body, description or tags.")
        arguments = {"name": name}
        try:
            if session_id is not None:
                check_session_id(session_id)
            if body is None:
                await memory.patch_block(scope, name, changes, actor="tool", session=session_id)
            else:
                text, block = await memory.read_block(scope, name)
                notice = withheld(name, text)
                if notice is not None:
                    raise ToolError(notice)
                meta = {**frontmatter.parse(text).meta, **changes}
                saved, merged = await memory.write_block(
                    scope, name, body=body, meta=meta, replace=True, if_match=block.etag,
                    actor="tool", session=session_id,
                )  # fmt: skip
                if merged and saved.name != name:
                    raise ToolError(
                        f"Not changed: block {saved.name!r} says that already (its importance "
                        f"was raised). Forget {name!r} if it is a duplicate."
                    )
        except AsterError as exc:
            raise ToolError(failure("edit_block", arguments, exc)) from None
        said = f"Changed {name!r} ({', '.join(sorted([*changes, *(['body'] if body else [])]))})."
        return result(said, {"result": said, "name": name, "scope": scope})

    @tool
    async def list_memory(limit: int, repo_root: str | None, ctx: Any) -> CallToolResult:
        scope = await scope_of(repo_root, ctx)
        memory = front.stores()[1]
        scopes = [scope] if scope == "global" else [scope, "global"]
        blocks = sorted(  # a block a hand edit left a secret in is withheld, as everywhere
            (b for s in scopes for b in memory.blocks(s) if not b.secrets),
            key=lambda b: (b.updated_at, b.name),
            reverse=True,
        )[:limit]
        items = [
            {
                "name": b.name,
                "scope": b.scope,
                "type": b.type,
                "description": b.description,
                "tags": b.tags,
                "updated_at": b.updated_at,
                "supersedes": b.supersedes,
                "conflicts_with": b.conflicts_with,
            }
            for b in blocks
        ]
        lines = [
            f"- {i['name']} ({i['scope']}, {i['type']}, {i['updated_at'][:10]}): {i['description']}"
            for i in items
        ]
        return result("\n".join(lines) or "No memory blocks yet.", {"items": items})

    @tool
    async def record_procedure(
        outcome: str,
        task: str,
        tools: str | None,
        detail: str | None,
        repo_root: str | None,
        session_id: str | None,
        ctx: Any,
    ) -> CallToolResult:
        scope = await scope_of(repo_root, ctx)
        fields: dict[str, Any] = {
            "outcome": outcome,
            "task": task,
            "tools": [t.strip() for t in (tools or "").split(",") if t.strip()],
            "session_id": session_id,
            ("result" if outcome == "success" else "error"): detail,
        }
        try:
            body = ProcedureIn.model_validate(fields)
            block, merged = await front.stores()[1].procedure(scope, body)
        except AsterError as exc:
            raise ToolError(failure("record_procedure", {}, exc)) from None
        except ValueError as exc:  # a field out of bounds (a task over 200 characters…)
            raise ToolError(f"Not recorded: {exc}") from None
        said = (
            f"Already recorded as {block.name!r}."
            if merged
            else f"Recorded as {block.name!r}: recall it next time the task comes up."
        )
        return result(said, {"result": said, "name": block.name, "scope": scope, "merged": merged})

    @tool
    async def search_sessions(
        query: str, repo_root: str | None, limit: int, ctx: Any
    ) -> CallToolResult:
        try:
            parsed = parse_query(query, asker="assistant")  # an agent's "I" is its own turns
        except AsterError as exc:
            raise ToolError(f"{exc.detail}. Fix the query and search again.") from None
        parsed.repo = parsed.repo or repo_root
        hits, _next = await front.query(front.stores()[0].search(parsed, limit=limit, cursor=None))
        lines = [
            f"- session {h['session_id']} turn {h['seq']} ({h.get('role') or h['kind']}, "
            f"{h.get('ts') or ''}): {h['snippet']}"
            for h in hits
        ]
        return result("\n".join(lines) or "No session matches that.", {"items": hits})

    @tool
    async def get_session(session_id: str, after: int, limit: int, ctx: Any) -> CallToolResult:
        sessions = front.stores()[0]
        try:
            check_session_id(session_id)
            lines, _raw, info = await sessions.read(session_id)
        except AsterError as exc:
            raise ToolError(
                f"{exc.detail}. Take an id from list_sessions or search_sessions."
            ) from None
        events = [
            redacted(e)  # a key pasted into a chat is kept, and never handed on
            for e in unretracted(lines)
            if e.get("type") != "session" and isinstance(e.get("seq"), int) and e["seq"] > after
        ][:limit]
        text = "\n".join(line_of(e) for e in events) or "No events there."
        more = bool(events) and events[-1]["seq"] < info.last_seq
        head = f"{info.title or '(untitled)'} · {info.repo_root} · {info.last_seq} events\n"
        return result(head + text, {"session_id": session_id, "events": events, "more": more})

    @tool
    async def list_sessions(repo_root: str | None, limit: int, ctx: Any) -> CallToolResult:
        listing = front.stores()[0].listing(
            repo_root=repo_root, state=None, limit=limit, cursor=None
        )
        page = await front.query(listing)
        items = [summary_of(i, page.parents.get(i.id)).model_dump() for i in page.items]
        lines = [
            f"- {s['id']} {s['title'] or '(untitled)'} · {s['events']} events · {s['updated_at']}"
            for s in items
        ]
        return result("\n".join(lines) or "No sessions.", {"items": items})

    missing = sorted(specs.keys() - {t.name for t in tools})
    if missing:
        raise TypeError(f"no function for the tools {missing}")
    return tools


def line_of(line: dict[str, Any]) -> str:
    """An event on one line, for a model reading a transcript."""
    event = read_event(line)
    if event.kind == "summary":
        return f"#{event.seq} [summary] {cut(event.text)}"
    if event.kind == "eviction":
        return f"#{event.seq} [evicted {event.tool_call_id or event.target_seq}]"
    if event.kind == "title":
        return f"#{event.seq} [title] {event.text}"
    if event.kind == "reasoning":
        return f"#{event.seq} [thinking] {cut(event.text, 300)}"
    if event.kind == "retraction":
        return f"#{event.seq} [took back #{event.target_seq}] {event.text}".rstrip()
    parts = [f"#{event.seq} {event.role}:"]
    if event.text:
        parts.append(cut(event.text))
    for call in event.calls:
        parts.append(f"[calls {call.name}({cut(call.arguments, 300)})]")
    return " ".join(parts)


def cut(text: Any, limit: int = RESULT_CHARS) -> str:
    value = str(text or "")
    return value if len(value) <= limit else value[:limit] + f"… ({len(value)} characters)"
