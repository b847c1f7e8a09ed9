"""The front door, in two layers, before any work.

``Connection`` is the HTTP/1.1 protocol the daemon serves with (uvicorn's httptools
protocol with limits). A request head (target and header lines) larger than
ASTER_MAX_HEADER_BYTES gets 431; it is counted as it arrives, so a head that never ends
holds at most the limit and one read. A head must be in within
ASTER_CLIENT_TIMEOUT_SECONDS of its first byte, and a body may go that long without a
byte: past it, 408. A connection that sends nothing for as long is closed. At shutdown a
request still waiting for its body gets 503 at once, so stalled clients do not hold up a
stop. These answers are problem+json and close the connection. uvicorn's httptools
protocol alone collects a head without limit, and its h11 one answers a head past its
limit with a plain 400, so the daemon serves with this one.

``Guard`` is a pure ASGI middleware (no per-request task; a body is joined once and
handed on as one message), outermost in the stack, so a refused request never reaches a
route. Order of checks: Host (403), Origin (403), token (401), body size (413), requests
in progress (503). A declared length is checked at once; a body is then read here whole,
up to the limit, and replayed, so a request counts against ASTER_MAX_REQUESTS only once
its body is in: clients that stall mid-body hold no slot that complete requests need.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from ..errors import PROBLEM_MEDIA_TYPE, problem_body
from ..schemas.journal import CLIENT_ACTORS, REQUEST_ACTOR

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
OPEN_PATHS = frozenset({"/healthz"})
PAGE = "/"  # the dashboard's page and files carry no data: they load without a token
PAGE_FILES = "/ui/"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def is_open(path: str) -> bool:
    """Paths anyone allowed by Host and Origin may read without a token."""
    return path in OPEN_PATHS or path == PAGE or path.startswith(PAGE_FILES)


def host_name(value: str) -> str:
    """The host part of a Host header, lower-cased, without the port."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        rest = value[end + 1 :] if end > 0 else "x"
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return value  # "[::1]evil.example" is not [::1]
        return value[: end + 1]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


STREAMED = frozenset({"/v1/sessions/import"})  # bodies the route reads as they come
IMPORT_LIMIT = "ASTER_MAX_IMPORT_BYTES"


class Guard:
    """The front door: Host allowlist, Origin check, bearer token, body size, request
    count and client timeouts, refused with a problem body before any framework code runs."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: list[str],
        allowed_origins: list[str],
        token: str | None,
        max_body_bytes: int,
        max_import_bytes: int | None = None,
        max_requests: int = 1024,
        warning: str | None = None,
    ) -> None:
        self.app = app
        self.hosts = LOCAL_HOSTS | {h.lower() for h in allowed_hosts}
        self.wildcard_hosts = "*" in allowed_hosts
        self.origins = {o.rstrip("/").lower() for o in allowed_origins}
        self.token = token.encode() if token else None
        self.max_body = max_body_bytes
        self.max_import = max_import_bytes if max_import_bytes is not None else max_body_bytes
        self.max_requests = max_requests
        self.active = 0
        self.warning = warning

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k: v for k, v in scope["headers"]} if scope["headers"] else {}
        if self.warning is not None:
            send = self._warn(send)
        host = headers.get(b"host", b"").decode("latin-1")
        if not self.wildcard_hosts and host_name(host) not in self.hosts:
            await send_problem(
                send,
                403,
                "host_not_allowed",
                "Forbidden",
                f"Host {host[:100]!r} is not on the allowlist (ASTER_ALLOWED_HOSTS)",
            )
            return
        origin = headers.get(b"origin")
        if origin is not None:
            value = origin.decode("latin-1").rstrip("/").lower()
            if value == "null" or value not in self.origins:
                await send_problem(
                    send,
                    403,
                    "origin_not_allowed",
                    "Forbidden",
                    f"Origin {value[:100]!r} is not allowed (ASTER_CORS_ORIGINS)",
                )
                return
        if (
            self.token is not None
            and not is_open(scope["path"])
            and scope.get("method") != "OPTIONS"
        ):
            given = headers.get(b"authorization", b"")
            scheme, _, credential = given.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(
                credential.strip(), self.token
            ):
                await send_problem(
                    send,
                    401,
                    "unauthorized",
                    "Unauthorized",
                    "a valid bearer token is required (ASTER_TOKEN or <home>/token)",
                    extra=[(b"www-authenticate", b'Bearer realm="aster-persist"')],
                )
                return
        said = headers.get(b"x-aster-actor")
        actor = said.decode("latin-1") if said is not None else "api"
        if actor not in CLIENT_ACTORS:
            await send_problem(
                send,
                422,
                "invalid",
                "Invalid request",
                f"X-Aster-Actor must be one of {', '.join(CLIENT_ACTORS)}, not {actor[:40]!r}",
            )
            return
        if scope["type"] == "http":
            received = await self._body(scope, receive, send, headers)
            if received is None:
                return
            receive = received
        if self.active >= self.max_requests and scope["path"] not in OPEN_PATHS:
            await send_problem(
                send,
                503,
                "too_many_requests",
                "Service unavailable",
                f"{self.active} requests are in progress, the limit is "
                f"{self.max_requests} (ASTER_MAX_REQUESTS); retry shortly",
                extra=[(b"retry-after", b"1")],
            )
            return
        self.active += 1
        said_actor = REQUEST_ACTOR.set(actor)  # who the journal says made the changes
        try:
            await self.app(scope, receive, send)
        finally:
            REQUEST_ACTOR.reset(said_actor)
            self.active -= 1

    async def _body(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes]
    ) -> Receive | None:
        """The ``receive`` to hand on: the whole body replayed, or the original when there
        is no body; None when the request was answered here or the client left."""
        length = declared_length(headers)
        if scope["path"] in STREAMED and scope.get("method") == "POST":
            # an import's file is handed on as it arrives, held on disk by the route,
            # which keeps to the limit of its own (it may be larger than memory)
            if length is not None and length > self.max_import:
                await self._too_large(send, f"the file is {length} bytes", IMPORT_LIMIT)
                return None
            return receive
        if length is not None and length > self.max_body:
            await self._too_large(send, f"the body is {length} bytes")
            return None
        if length == 0 or (length is None and scope.get("method") not in BODY_METHODS):
            return receive
        chunks = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_body:
                await self._too_large(send, "the body is longer")
                return None
            chunks.append(body)
            more = message.get("more_body", False)
        return _replay(b"".join(chunks), receive)

    async def _too_large(self, send: Send, what: str, setting: str = "") -> None:
        limit = self.max_import if setting else self.max_body
        detail = f"{what}; the limit is {limit} bytes ({setting or 'ASTER_MAX_BODY_BYTES'})"
        await send_problem(send, 413, "payload_too_large", "Payload too large", detail)

    def _warn(self, send: Send) -> Send:
        value = f'199 aster-persist "{self.warning}"'.encode("latin-1", "replace")

        async def warned(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"warning", value)]
            await send(message)

        return warned


def declared_length(headers: dict[bytes, bytes]) -> int | None:
    """The Content-Length, if the request declares a valid one."""
    declared = headers.get(b"content-length")
    if declared is None:
        return None
    try:
        return int(declared)
    except ValueError:
        return None


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def send_problem(
    send: Send,
    status: int,
    code: str,
    title: str,
    detail: str,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    body = orjson.dumps(problem_body(status, code, title, detail))
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
                (b"content-length", str(len(body)).encode()),
                *(extra or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


NEW, HEAD, BODY, IDLE = range(4)  # a connection's phase: what it is waiting for


class Connection(HttpToolsProtocol):
    """uvicorn's httptools protocol with each request head bounded in size and time and
    each body in time. One timer per connection: armed when it opens, and again only for
    a request that takes more than one read to arrive."""

    max_head = 64 * 1024
    timeout = 30.0
    phase = NEW
    head_bytes = 0  # received while the head is not complete
    since = 0.0  # when the connection opened, or its head began
    last = 0.0  # when bytes of an incomplete request last arrived
    timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.since = self.last = self.loop.time()
        self.timer = self.loop.call_later(self.timeout, self._check)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.phase = IDLE
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def data_received(self, data: bytes) -> None:
        if self.phase != BODY:
            self.head_bytes += len(data)
        super().data_received(data)
        if self.phase == IDLE or self.transport.is_closing():
            return  # the common case: a whole request (or nothing of the next) in one read
        self.last = self.loop.time()
        if self.phase == HEAD:
            self.since = self.since or self.last
            if self.head_bytes > self.max_head:
                self._head_too_large()
                return
        if self.timer is None:
            self.timer = self.loop.call_later(self.timeout, self._check)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.phase = HEAD
        self.since = 0.0  # set after this read, if the head is not complete by then

    def on_headers_complete(self) -> None:
        self.phase = BODY
        size = len(self.url)
        for name, value in self.headers:
            size += len(name) + len(value) + 4
        if size <= self.max_head:
            super().on_headers_complete()
            return
        app, self.app = self.app, self._refuse_head
        try:
            super().on_headers_complete()
        finally:
            self.app = app

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.phase = IDLE
        self.head_bytes = 0

    def shutdown(self) -> None:
        if self.phase == BODY and not self.pipeline and not self.cycle.response_started:
            detail = "the daemon is stopping and this request's body was not in; send it again"
            self._answer(503, "shutting_down", "Service unavailable", detail)
            return
        super().shutdown()

    def _check(self) -> None:
        self.timer = None
        if self.phase == IDLE or self.transport.is_closing():
            return
        now = self.loop.time()
        if self.flow.read_paused or (self.phase == HEAD and self._answering()):
            self.since = self.last = now  # the wait is the daemon's, not the client's
        due = (self.last if self.phase == BODY else self.since) + self.timeout
        if now < due:
            self.timer = self.loop.call_at(due, self._check)
        elif self.phase == NEW:
            self.transport.close()
        elif self.phase == HEAD or not self.cycle.response_started:
            self._answer(408, "request_timeout", "Request timeout", self._timeout_detail())
        elif self.cycle.response_complete:
            self.transport.close()  # answered already; the rest of the body never came
        else:
            self.cycle.keep_alive = False

    def _answering(self) -> bool:
        """A request before this one is still being answered (HTTP pipelining)."""
        return self.cycle is not None and not self.cycle.response_complete

    def _head_too_large(self) -> None:
        if self._answering():
            self.transport.close()  # no answer can go out before the one in progress
            return
        self._answer(431, *self._head_problem())

    async def _refuse_head(self, scope: Any, receive: Any, send: Any) -> None:
        await send_problem(send, 431, *self._head_problem(), extra=[(b"connection", b"close")])

    def _head_problem(self) -> tuple[str, str, str]:
        return (
            "header_fields_too_large",
            "Request header fields too large",
            f"the request head (target and header lines) is larger than {self.max_head} "
            "bytes (ASTER_MAX_HEADER_BYTES)",
        )

    def _timeout_detail(self) -> str:
        return (
            f"the request did not arrive in time: its head must be in within {self.timeout:g} s "
            "of its first byte, and its body may not stall for as long "
            "(ASTER_CLIENT_TIMEOUT_SECONDS)"
        )

    def _answer(self, status: int, code: str, title: str, detail: str) -> None:
        """A problem written straight to the connection, which is then closed; a request
        still waiting for its body is told that the client left."""
        if self.phase == BODY:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        self.phase = IDLE
        body = orjson.dumps(problem_body(status, code, title, detail))
        head = [STATUS_LINE[status]]
        head += [
            name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers
        ]
        head.append(
            b"content-type: %s\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
            % (PROBLEM_MEDIA_TYPE.encode(), len(body))
        )
        self.transport.write(b"".join(head) + body)
        self.transport.close()


def connection(max_head_bytes: int, timeout_seconds: float) -> type[Connection]:
    """The connection protocol with these limits (uvicorn takes a class)."""

    class Limited(Connection):
        max_head = max_head_bytes
        timeout = timeout_seconds

    return Limited
