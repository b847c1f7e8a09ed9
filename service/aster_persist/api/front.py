"""The application class: FastAPI with a front door outside all of the framework's own
layers (the guard, then the fast path)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

EXPOSED_HEADERS = ["ETag", "Location", "Link", "Idempotent-Replayed", "Warning"]


class AsterApp(FastAPI):
    """FastAPI with a front door outside all of the framework's own layers.

    ``front`` wraps the whole application: the Guard refuses foreign hosts, origins,
    missing tokens and oversized bodies before any framework code runs, and the fast
    path answers the hottest routes (append, remember, recall) without routing,
    dependency solving or the framework's per-request bookkeeping. Lifespan events go straight to FastAPI.
    """

    front: Any = None
    _front_app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or self.front is None:
            await super().__call__(scope, receive, send)
            return
        if self._front_app is None:
            self._front_app = self.front(super().__call__)
        await self._front_app(scope, receive, send)
