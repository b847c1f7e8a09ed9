"""The application class: FastAPI with a front door outside all of the framework's own
layers (the guard, then the fast path)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send


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
        if scope["type"] == "http":
            send = _line_ended(send)
        await self._front_app(scope, receive, send)


JSON_TYPES = (b"application/json", b"application/problem+json")


def _line_ended(send: Send) -> Send:
    """``send``, with a JSON reply ended by a newline, as a line of text is: a terminal
    shows the prompt after it, not on it (``curl`` prints the body as it comes)."""
    ended = False

    async def sending(message: Message) -> None:
        nonlocal ended
        if message["type"] == "http.response.start":
            headers = message.get("headers", [])
            kind = next((v for k, v in headers if k == b"content-type"), b"")
            ended = kind.split(b";", 1)[0].strip() in JSON_TYPES
            if ended:
                message = {**message, "headers": [_longer(k, v) for k, v in headers]}
        elif ended and message["type"] == "http.response.body" and not message.get("more_body"):
            message = {**message, "body": message.get("body", b"") + b"\n"}
        await send(message)

    return sending


def _longer(name: bytes, value: bytes) -> tuple[bytes, bytes]:
    return (name, str(int(value) + 1).encode()) if name == b"content-length" else (name, value)
