"""``mcp``: the daemon's MCP server for a client that speaks stdio only.

It starts no store of its own: each JSON-RPC message read from stdin (one per line, as
MCP's stdio transport sends them) is posted to the running daemon's ``/mcp`` with the
daemon's token, and whatever comes back (one JSON reply, or a stream of events, such
as a subscription's or a request to the client) is written to stdout, one message per
line, as it arrives. The session id and the protocol version the daemon gives are
sent with every later message. Logs go to stderr only: stdout is the protocol's.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, BinaryIO
from urllib.parse import quote

import anyio
import httpx
import orjson
import typer

from .common import Url, fail, top_level

ACCEPT = "application/json, text/event-stream"
HANDSHAKE = ("initialize", "notifications/initialized")


class Proxy:
    """One stdio client's connection to the daemon's ``/mcp``."""

    def __init__(self, http: httpx.AsyncClient, out: BinaryIO, path: str) -> None:
        self.http, self.out, self.path = http, out, path
        self.headers: dict[str, str] = {"Accept": ACCEPT, "Content-Type": "application/json"}
        self.lock = anyio.Lock()  # one message written at a time
        self.handshake: dict[str, bytes] = {}  # the client's, to open a session again

    async def write(self, data: bytes) -> None:
        if "MCP-Protocol-Version" not in self.headers:
            self.negotiated(data)
        async with self.lock:
            self.out.write(data.strip() + b"\n")
            self.out.flush()

    async def forward(self, line: bytes) -> None:
        """Post one message and write back what the daemon answers. A daemon that
        restarted no longer knows the session: the handshake is made again, once."""
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError as exc:  # answered with id null, as /mcp answers it
            await self.reply_error(None, -32700, f"Parse error: {exc}", always=True)
            return
        if not isinstance(message, dict):
            await self.reply_error(
                None, -32600, "Invalid Request: a message is one JSON object", always=True
            )
            return
        asked = message.get("id") if "method" in message else None  # only a request
        if message.get("method") in HANDSHAKE:
            self.handshake[message["method"]] = line
        try:
            response = await self.post(line, message)
            if response.status_code == 404 and self.session_lost(message):
                await response.aclose()
                await self.resume()
                response = await self.post(line, message)
        except httpx.TransportError as exc:
            await self.reply_error(asked, -32000, f"the daemon is not reachable ({exc})")
            return
        try:
            kind = response.headers.get("content-type", "")
            if response.status_code >= 400:
                said = (await response.aread()).decode("utf-8", "replace")
                await self.reply_error(
                    asked, -32000, f"the daemon said {response.status_code}: {said}"
                )
            elif kind.startswith("text/event-stream"):
                async for data in events(response):
                    await self.write(data)
            else:
                body = await response.aread()
                if body.strip():
                    await self.write(body)
        finally:
            await response.aclose()

    async def post(self, line: bytes, message: dict[str, Any]) -> httpx.Response:
        """The daemon's reply to one message, as a stream; the session id it gives kept."""
        headers = self.headers_for(message)
        request = self.http.build_request("POST", self.path, content=line, headers=headers)
        response = await self.http.send(request, stream=True)
        self.keep(response)
        return response

    def session_lost(self, message: dict[str, Any]) -> bool:
        return "Mcp-Session-Id" in self.headers and message.get("method") != "initialize"

    async def resume(self) -> None:
        """A new session for the client's: its handshake posted again, replies unread."""
        self.headers.pop("Mcp-Session-Id", None)
        for method in HANDSHAKE:
            line = self.handshake.get(method)
            if line is not None:
                response = await self.post(line, orjson.loads(line))
                await response.aclose()
        print(
            "aster-persist mcp: the daemon restarted; the session was opened again", file=sys.stderr
        )

    def headers_for(self, message: Any) -> dict[str, str]:
        """The headers a message is posted with. Over HTTP, a message of the current
        protocol (stamped with its version in ``_meta``) names its version, method and
        tool (or prompt, or resource) in headers too; a handshake starts afresh."""
        from mcp.shared.inbound import NAME_BEARING_METHODS  # the SDK: loaded when used
        from mcp_types import PROTOCOL_VERSION_META_KEY

        headers = dict(self.headers)
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return headers
        method, params = message["method"], message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "initialize":
            headers.pop("MCP-Protocol-Version", None)
            headers.pop("Mcp-Session-Id", None)
        meta = params.get("_meta")
        stamped = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
        if isinstance(stamped, str):
            headers["MCP-Protocol-Version"] = stamped
            headers["Mcp-Method"] = method
            field = NAME_BEARING_METHODS.get(method)
            if field is not None and isinstance(params.get(field), str):
                headers["Mcp-Name"] = params[field]
        return headers

    def keep(self, response: httpx.Response) -> None:
        """The session id the daemon gave, to send from now on."""
        session = response.headers.get("mcp-session-id")
        if session:
            self.headers["Mcp-Session-Id"] = session

    def negotiated(self, data: bytes) -> None:
        """The protocol version an initialize result settled on, sent from now on."""
        try:
            message = orjson.loads(data)
        except orjson.JSONDecodeError:
            return
        result = message.get("result") if isinstance(message, dict) else None
        if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
            self.headers["MCP-Protocol-Version"] = result["protocolVersion"]

    async def reply_error(self, asked: Any, code: int, text: str, *, always: bool = False) -> None:
        """A JSON-RPC error for the request ``asked`` (a notification gets none); with
        ``always``, for a message that could not be read (its id unknown: null)."""
        print(f"aster-persist mcp: {text}", file=sys.stderr)
        if asked is not None or always:
            error = {"jsonrpc": "2.0", "id": asked, "error": {"code": code, "message": text}}
            await self.write(orjson.dumps(error))


async def events(response: httpx.Response) -> AsyncIterator[bytes]:
    """The data of each event of a ``text/event-stream`` reply, as it arrives."""
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield "\n".join(data).encode()
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    if data:
        yield "\n".join(data).encode()


async def serve_stdio(url: str | None, token: str | None, path: str = "/mcp") -> None:
    """Read messages from stdin until it closes; each is forwarded as it comes, so a
    long call never holds back the next message."""
    from ..client.connection import http_options

    options = http_options(url, token, timeout=3600)
    options["timeout"] = httpx.Timeout(10, read=None)  # a subscription's stream may idle
    stdin = anyio.wrap_file(sys.stdin.buffer)
    async with httpx.AsyncClient(**options) as http, anyio.create_task_group() as tasks:
        proxy = Proxy(http, sys.stdout.buffer, path)
        first = True
        async for line in stdin:
            if not line.strip():
                continue
            if first:  # the handshake, alone: later messages need what it answers
                first = False
                await proxy.forward(line)
                continue
            tasks.start_soon(proxy.forward, line)


def mcp_command(
    url: Url = None,
    token: Annotated[str | None, typer.Option(help="The daemon's token (default: found).")] = None,
    repo_root: Annotated[
        Path | None,
        typer.Option(
            help="The project a call without repo_root is about (default: the git "
            "repository the client starts this in, if it is in one)."
        ),
    ] = None,
) -> None:
    """Serve the running daemon's MCP server over stdio, for clients that speak stdio
    only (configure the client to run `aster-persist mcp`)."""
    root = top_level(repo_root) if repo_root is not None else git_top(Path.cwd())
    path = "/mcp" if root is None else f"/mcp?repo_root={quote(str(root), safe='/')}"
    try:
        anyio.run(serve_stdio, url, token, path)
    except KeyboardInterrupt:
        raise fail("stopped", 0) from None


def git_top(folder: Path) -> Path | None:
    """The top of the git work tree ``folder`` is in; None when it is in none."""
    top = top_level(folder)
    return top if (top / ".git").exists() else None
