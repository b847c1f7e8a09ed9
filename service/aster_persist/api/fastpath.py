"""The hot routes, served without the framework's routing and dependency machinery.

Agents append turns and remember and recall memory all the time. Routing through
FastAPI's router, middleware and dependency solver costs several times what those
operations do themselves, so this small ASGI app (behind the Guard, so Host, Origin,
token and size checks still apply) answers them with the very handlers behind the
documented routes:

- ``POST /v1/sessions/{id}/events``
- ``POST /v1/memory/blocks``
- ``GET /v1/memory/blocks/{name}``
- ``GET /v1/events`` (the change feed: each follower's writes skip the framework's
  per-message wrappers)

It takes only the plain, well-formed form of each request. Anything else (an unknown
query parameter, a body that does not validate, a markdown ``Accept``) is handed to the
framework with its body intact, so every error reads exactly as the documented route's.
A body that repeats a key or nests too deeply is refused here as there (``body.py``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import orjson
from pydantic import ValidationError

from ..errors import AsterError, problem_body
from ..schemas.memory import BlockIn
from . import body as strict
from .appends import appended_body, appended_status, handle_append
from .events import open_feed
from .guard import ASGIApp, Message, Receive, Scope, Send
from .memory import recalled, saved
from .plumbing import EXPOSED_HEADERS, problem_headers, problem_response, running

log = logging.getLogger("aster_persist")
_EXPOSED = ", ".join(EXPOSED_HEADERS).encode()  # what CORS lets a page read: every route's

_BOOLS = {"true": True, "1": True, "false": False, "0": False}


@dataclass
class Reply:
    """A fast-path answer: status, body and headers."""

    status: int
    body: bytes
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)


# A handler gets the stores' owner, the path match, the query, the headers and the body;
# None means "not the plain form": the framework answers instead.
Handler = Callable[
    [Any, re.Match[str], dict[str, str], dict[str, str], bytes], Awaitable[Reply | None]
]


def _query(raw: bytes, allowed: set[str]) -> dict[str, str] | None:
    """The query as a dict when it has only ``allowed`` keys, each once; else None."""
    pairs = parse_qsl(raw.decode("latin-1"), keep_blank_values=True)
    query = dict(pairs)
    if len(query) != len(pairs) or not query.keys() <= allowed:
        return None
    return query


async def _append(
    owner: Any, match: re.Match[str], query: dict[str, str], headers: dict[str, str], body: bytes
) -> Reply | None:
    result = await handle_append(running(owner).sessions, match.group(1), headers, body)
    etag = b'"%d"' % result.last_seq
    reply = Reply(appended_status(result), appended_body(result), [(b"etag", etag)])
    if result.replayed:
        reply.headers.append((b"idempotent-replayed", b"true"))
    return reply


async def _remember(
    owner: Any, match: re.Match[str], query: dict[str, str], headers: dict[str, str], body: bytes
) -> Reply | None:
    if "json" not in headers.get("content-type", ""):
        return None
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    strict.check(body, data)
    try:
        block = BlockIn.model_validate(data)
    except ValidationError:
        return None
    saved_block, merged = await running(owner).memory.remember(block, query.get("repo_root"))
    reply = orjson.dumps(saved(saved_block, merged))
    return Reply(200 if merged else 201, reply, [(b"etag", saved_block.etag.encode())])


async def _recall(
    owner: Any, match: re.Match[str], query: dict[str, str], headers: dict[str, str], body: bytes
) -> Reply | None:
    track = _BOOLS.get(query.get("track", "true"))
    archived = _BOOLS.get(query.get("archived", "false"))
    if (
        track is None
        or archived is None
        or "markdown" in headers.get("accept", "")
        or "if-none-match" in headers
    ):
        return None
    text, block = await running(owner).memory.recall(
        match.group(1),
        query.get("repo_root"),
        track=track,
        archived=archived,
        session_id=query.get("session_id"),
    )
    return Reply(200, orjson.dumps(recalled(text, block)), [(b"etag", block.etag.encode())])


ROUTES: list[tuple[str, re.Pattern[str], set[str], Handler]] = [
    ("POST", re.compile(r"^/v1/sessions/([^/]+)/events$"), set(), _append),
    ("POST", re.compile(r"^/v1/memory/blocks$"), {"repo_root"}, _remember),
    (
        "GET",
        re.compile(r"^/v1/memory/blocks/([^/]+)$"),
        {"repo_root", "track", "archived", "session_id"},
        _recall,
    ),
]


_FEED_QUERY = {"after", "scope", "op", "repo_root"}


class FastPath:
    """The hottest routes (append, remember, recall) answered without routing or
    dependency solving, with the same checks and replies as their routers; anything else
    goes on to the app."""

    def __init__(self, app: ASGIApp, owner: Any) -> None:
        self.app = app
        self.owner = owner  # the FastAPI app whose state holds the stores

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] == "GET" and scope["path"] == "/v1/events":
            query = _query(scope["query_string"], _FEED_QUERY)
            if query is not None:
                await self._feed(scope, receive, send, query)
                return
        for method, pattern, allowed, handler in ROUTES:
            match = pattern.match(scope["path"]) if scope["method"] == method else None
            if match is None:
                continue
            query = _query(scope["query_string"], allowed)
            if query is not None:
                await self._serve(scope, receive, send, match, query, handler)
                return
            break
        await self.app(scope, receive, send)

    async def _feed(
        self, scope: Scope, receive: Receive, send: Send, query: dict[str, str]
    ) -> None:
        """The change feed, streamed without the framework's per-message send wrappers
        (every event of every follower would pass through each of them)."""
        try:
            response = await _feed_response(self.owner, scope, query)
        except AsterError as exc:
            response = problem_response(exc.problem(), problem_headers(exc))
        await response(scope, receive, send)

    async def _serve(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        match: re.Match[str],
        query: dict[str, str],
        handler: Handler,
    ) -> None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        extra: list[tuple[bytes, bytes]] = []
        origin = headers.get("origin")
        if origin is not None:  # the Guard has already checked it against the allowlist
            extra = [
                (b"access-control-allow-origin", origin.encode("latin-1")),
                (b"access-control-expose-headers", _EXPOSED),
                (b"vary", b"Origin"),
            ]
        chunks = []
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            reply = await handler(self.owner, match, query, headers, body)
        except AsterError as exc:
            response = problem_response(exc.problem(), problem_headers(exc))
        except Exception:
            log.exception("unhandled error in %s %s", scope["method"], scope["path"])
            response = problem_response(
                problem_body(
                    500,
                    "internal_error",
                    "Internal error",
                    "the service failed to handle this request; the log has the details",
                )
            )
        else:
            if reply is None:
                await self.app(scope, _replay(body, receive), send)
                return
            # The reply is a few small headers and a JSON body: sent as raw ASGI messages.
            raw = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(reply.body)).encode()),
                *reply.headers,
                *extra,
            ]
            await send({"type": "http.response.start", "status": reply.status, "headers": raw})
            await send({"type": "http.response.body", "body": reply.body})
            return
        for name, value in extra:
            response.headers[name.decode()] = value.decode()
        await response(scope, receive, send)


async def _feed_response(owner: Any, scope: Scope, query: dict[str, str]) -> Any:
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
    response = await open_feed(
        owner,
        headers.get("last-event-id") or query.get("after"),
        scope=query.get("scope"),
        op=query.get("op"),
        repo_root=query.get("repo_root"),
    )
    origin = headers.get("origin")
    if origin is not None:  # the Guard has already checked it against the allowlist
        response.headers["access-control-allow-origin"] = origin
        response.headers["vary"] = "Origin"
    return response


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that yields the body already read, then defers to the real one."""
    pending = True

    async def replay() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
