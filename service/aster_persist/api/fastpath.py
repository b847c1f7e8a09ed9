"""The append hot path, served without the framework's routing and dependency machinery.

Appends are the one request agents send all the time. Routing through FastAPI's router
and dependency solver costs several times what the append itself does, so this small
ASGI app (behind the Guard, so Host, Origin, token and size checks still apply)
answers ``POST /v1/sessions/{id}/events`` with the very handler behind the documented
route. Every other request passes through untouched.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from ..errors import AsterError, problem_body
from .guard import ASGIApp, Receive, Scope, Send
from .problems import problem_response
from .sessions import handle_append

log = logging.getLogger("aster_persist")
_APPEND = re.compile(r"^/v1/sessions/([^/]+)/events$")


class AppendFastPath:
    def __init__(self, app: ASGIApp, owner: Any) -> None:
        self.app = app
        self.owner = owner  # the FastAPI app whose state holds the stores

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        match = _APPEND.match(scope["path"])
        if match is None:
            await self.app(scope, receive, send)
            return
        sessions: Any = self.owner.state.sessions
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        extra: list[tuple[bytes, bytes]] = []
        origin = headers.get("origin")
        if origin is not None:  # the Guard has already checked it against the allowlist
            extra = [
                (b"access-control-allow-origin", origin.encode("latin-1")),
                (b"access-control-expose-headers", b"ETag, Idempotent-Replayed, Warning"),
                (b"vary", b"Origin"),
            ]
        try:
            chunks = []
            more = True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                chunks.append(message.get("body", b""))
                more = message.get("more_body", False)
            result = await handle_append(sessions, match.group(1), headers, b"".join(chunks))
        except AsterError as exc:
            response = problem_response(exc.problem(), exc.headers)
        except Exception:
            log.exception("unhandled error in POST %s", scope["path"])
            response = problem_response(
                problem_body(
                    500,
                    "internal_error",
                    "Internal error",
                    "the service failed to handle this request; the log has the details",
                )
            )
        else:
            # The reply is three small headers and a tiny body: sent as raw ASGI messages.
            body = result.body_bytes()
            raw = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"etag", b'"%d"' % result.last_seq),
                *extra,
            ]
            if result.replayed:
                raw.append((b"idempotent-replayed", b"true"))
            await send({"type": "http.response.start", "status": result.status, "headers": raw})
            await send({"type": "http.response.body", "body": body})
            return
        for name, value in extra:
            response.headers[name.decode()] = value.decode()
        await response(scope, receive, send)
