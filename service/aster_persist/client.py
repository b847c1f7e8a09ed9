"""Talking to a running daemon over HTTP: the CLI's client commands are built on this.

``follow`` iterates the change feed and resumes by itself: when the connection drops
(the daemon restarted, the network blinked) it reconnects with ``Last-Event-ID`` set to
the last entry it yielded, so nothing is missed and nothing is repeated.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson

from .storage.home import resolve_home

DEFAULT_URL = "http://127.0.0.1:4627"


class ServiceError(Exception):
    """The daemon refused a request (the message says why)."""


class DaemonUnavailable(ServiceError):
    """The daemon could not be reached."""


def token_for(explicit: str | None = None) -> str | None:
    """ASTER_TOKEN, else the token file of the data home, if there is one."""
    if explicit or os.environ.get("ASTER_TOKEN"):
        return explicit or os.environ["ASTER_TOKEN"]
    try:
        home = resolve_home(
            Path(os.environ["ASTER_HOME"]) if os.environ.get("ASTER_HOME") else None
        )
        return (home / "token").read_text(encoding="utf-8").strip() or None
    except (OSError, ValueError):
        return None


def connect(url: str | None = None, token: str | None = None) -> httpx.Client:
    headers = {}
    secret = token_for(token)
    if secret:
        headers["Authorization"] = f"Bearer {secret}"
    return httpx.Client(
        base_url=url or os.environ.get("ASTER_URL") or DEFAULT_URL,
        headers=headers,
        timeout=httpx.Timeout(10, read=60),
    )


def sse(response: httpx.Response) -> Iterator[tuple[str, str | None, dict[str, Any]]]:
    """(event, id, data) of each Server-Sent Event in a response."""
    fields: dict[str, str] = {}
    for line in response.iter_lines():
        if not line:
            if "data" in fields:
                yield fields.get("event", "message"), fields.get("id"), orjson.loads(fields["data"])
            fields = {}
        elif not line.startswith(":"):
            key, _, value = line.partition(":")
            fields[key] = value[1:] if value.startswith(" ") else value


def journal(http: httpx.Client, **filters: Any) -> Iterator[dict[str, Any]]:
    """Every journal entry (after ``after``, if given), oldest first, page by page."""
    cursor = filters.pop("after", None)
    while True:
        params = {k: v for k, v in {**filters, "cursor": cursor, "limit": 1000}.items() if v}
        page = _get(http, "/v1/journal", params)
        yield from page["items"]
        cursor = page["next_cursor"]
        if not cursor:
            return


def follow(
    http: httpx.Client, *, after: str | None = None, retry: float = 0.5, **filters: Any
) -> Iterator[dict[str, Any]]:
    """Journal entries as they happen, after ``after``; reconnects and resumes forever."""
    last = after
    while True:
        headers = {"Last-Event-ID": last} if last else {}
        params = {k: v for k, v in filters.items() if v}
        try:
            with http.stream("GET", "/v1/events", params=params, headers=headers) as response:
                if response.status_code >= 400:
                    response.read()
                    raise ServiceError(_problem(response))
                for event, event_id, data in sse(response):
                    if event == "journal" and event_id:
                        last = event_id
                        yield data
        except httpx.TransportError:
            pass  # dropped or restarting: resume from the last entry seen
        time.sleep(retry)


def import_file(
    http: httpx.Client, data: bytes, *, format: str = "auto", repo_root: str | None = None
) -> dict[str, Any]:
    """Import one file's bytes; the daemon's summary of what it did."""
    params = {"format": format, **({"repo_root": repo_root} if repo_root else {})}
    try:
        response = http.post(
            "/v1/sessions/import",
            content=data,
            params=params,
            headers={"Content-Type": "application/octet-stream"},
            timeout=httpx.Timeout(10, read=300),
        )
    except httpx.TransportError as exc:
        raise DaemonUnavailable(f"the daemon is not running at {http.base_url} ({exc})") from None
    if response.status_code >= 400:
        raise ServiceError(_problem(response))
    return dict(response.json())


def _get(http: httpx.Client, path: str, params: dict[str, Any]) -> Any:
    try:
        response = http.get(path, params=params)
    except httpx.TransportError as exc:
        raise DaemonUnavailable(f"the daemon is not running at {http.base_url} ({exc})") from None
    if response.status_code >= 400:
        raise ServiceError(_problem(response))
    return response.json()


def _problem(response: httpx.Response) -> str:
    try:
        body = response.json()
        return f"{response.status_code} {body.get('title')}: {body.get('detail')}"
    except ValueError:
        return f"{response.status_code} {response.text[:200]}"
