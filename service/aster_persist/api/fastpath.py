"""The append hot path, served without the framework's routing and dependency machinery.

Appends are the one request agents send all the time. Routing through FastAPI's router
and dependency solver costs several times what the append itself does, so this small
ASGI middleware (inside the Guard, so Host, Origin, token and size checks still apply)
answers ``POST /v1/sessions/{id}/events`` with the very handler behind the documented
route. Every other request passes through untouched.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.datastructures import Headers

from ..errors import AsterError
from .guard import ASGIApp, Receive, Scope, Send
from .problems import problem_response
from .sessions import handle_append

_APPEND = re.compile(r"^/v1/sessions/([^/]+)/events$")


class AppendFastPath:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        match = _APPEND.match(scope["path"])
        if match is None:
            await self.app(scope, receive, send)
            return
        sessions: Any = scope["app"].state.sessions
        try:
            chunks = []
            more = True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                chunks.append(message.get("body", b""))
                more = message.get("more_body", False)
            response = await handle_append(sessions, match.group(1), Headers(scope=scope), b"".join(chunks))
        except AsterError as exc:
            response = problem_response(exc.problem(), exc.headers)
        await response(scope, receive, send)
