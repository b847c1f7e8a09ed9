"""The front door: Host allowlist, Origin check, bearer token and body size, before any work.

A pure ASGI middleware (no per-request task or body copy), outermost in the stack, so a
refused request never reaches a route. Order of checks: Host (403), Origin (403),
token (401), requests in progress (503), body size (413): a declared length is checked
at once, an undeclared (chunked) body is read here up to the limit and then replayed.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson

from ..errors import PROBLEM_MEDIA_TYPE, problem_body

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
OPEN_PATHS = frozenset({"/healthz"})
PAGE = "/"  # the dashboard's page and files carry no data: they load without a token
PAGE_FILES = "/ui/"


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


class Guard:
    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: list[str],
        allowed_origins: list[str],
        token: str | None,
        max_body_bytes: int,
        max_requests: int = 1024,
        warning: str | None = None,
    ) -> None:
        self.app = app
        self.hosts = LOCAL_HOSTS | {h.lower() for h in allowed_hosts}
        self.wildcard_hosts = "*" in allowed_hosts
        self.origins = {o.rstrip("/").lower() for o in allowed_origins}
        self.token = token.encode() if token else None
        self.max_body = max_body_bytes
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
        try:
            await self._admitted(scope, receive, send, headers)
        finally:
            self.active -= 1

    async def _admitted(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes]
    ) -> None:
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                size = -1
            if size > self.max_body:
                await self._too_large(send, f"the body is {size} bytes")
                return
            await self.app(scope, receive, send)
            return
        if scope.get("method") not in ("POST", "PUT", "PATCH", "DELETE"):
            await self.app(scope, receive, send)
            return
        # No declared length (chunked): read the body here, up to the limit, and replay it.
        chunks = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_body:
                await self._too_large(send, "the body is longer")
                return
            chunks.append(body)
            more = message.get("more_body", False)
        await self.app(scope, _replay(b"".join(chunks), receive), send)

    async def _too_large(self, send: Send, what: str) -> None:
        detail = f"{what}; the limit is {self.max_body} bytes (ASTER_MAX_BODY_BYTES)"
        await send_problem(send, 413, "payload_too_large", "Payload too large", detail)

    def _warn(self, send: Send) -> Send:
        value = f'199 aster-persist "{self.warning}"'.encode("latin-1", "replace")

        async def warned(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"warning", value)]
            await send(message)

        return warned


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
