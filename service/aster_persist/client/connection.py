"""Where the daemon is and how to prove who is asking: the URL (the one given,
ASTER_URL, then ``http://127.0.0.1:4627``) and the bearer token (the one given,
ASTER_TOKEN, then the data home's token file, never read through a link)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx

from ..paths import resolve_home

DEFAULT_URL = "http://127.0.0.1:4627"


def token_for(explicit: str | None = None) -> str | None:
    """The token to send: the one given, ASTER_TOKEN, else the data home's token file."""
    if explicit or os.environ.get("ASTER_TOKEN"):
        return explicit or os.environ["ASTER_TOKEN"]
    try:
        home = resolve_home(
            Path(os.environ["ASTER_HOME"]) if os.environ.get("ASTER_HOME") else None
        )
        fd = os.open(home / "token", os.O_RDONLY | os.O_NOFOLLOW)  # never through a link
        with os.fdopen(fd, encoding="utf-8") as handle:
            return handle.read().strip() or None
    except (OSError, ValueError):
        return None


KEEPALIVE_SECONDS = 2.0


def http_options(url: str | None, token: str | None, timeout: float) -> dict[str, Any]:
    """The httpx client settings for a daemon: base URL, Authorization header, timeout."""
    secret = token_for(token)
    return {
        "base_url": url or os.environ.get("ASTER_URL") or DEFAULT_URL,
        "headers": {"Authorization": f"Bearer {secret}"} if secret else {},
        "timeout": httpx.Timeout(10, read=timeout),
        # an idle connection is let go before the server's keep-alive (5 s) ends it: one
        # reused as the server closes it would fail a request it never read
        "limits": httpx.Limits(keepalive_expiry=KEEPALIVE_SECONDS),
    }
