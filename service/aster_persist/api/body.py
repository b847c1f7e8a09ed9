"""Strict JSON bodies on the framework's routes: ``StrictRoute`` parses a route's JSON
body with ``schemas/strict.py``'s ``loads``, so a repeated key or a body nested too
deeply is refused before the body is validated. The rules themselves, and what every
other reader of JSON (the fast path, the routes that read their body by hand, imports)
calls, are in ``schemas/strict.py``; they are named here too for the routes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from ..errors import ValidationFailed
from ..schemas.strict import (
    MAX_DEPTH,
    Loc,
    Path,
    body_loc,
    brackets,
    check,
    loads,
    refuse,
    refuse_unknown,
)

__all__ = [
    "MAX_DEPTH",
    "Loc",
    "Path",
    "StrictRoute",
    "ValidationFailed",
    "body_loc",
    "brackets",
    "check",
    "loads",
    "refuse",
    "refuse_unknown",
]


class _StrictRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_strict_json"):
            self._strict_json = loads(await self.body())
        return self._strict_json


class StrictRoute(APIRoute):
    """A route whose JSON body is parsed by ``loads``: a repeated key or a body nested too
    deeply is refused before the body is validated (a body that is not JSON at all is
    left to the framework, which says so)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if self.body_field is None:
            return handler

        async def strict(request: Request) -> Response:
            request = _StrictRequest(request.scope, request.receive)
            media = request.headers.get("content-type")
            if (media is None or "json" in media) and await request.body():
                with contextlib.suppress(ValueError):
                    await request.json()
            return await handler(request)

        return strict
