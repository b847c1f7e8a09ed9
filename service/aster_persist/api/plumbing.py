"""What every router, the fast path and the operations routes share: the application's
state, typed (what ``create_app`` was given, ``Configured``, and what the lifespan
built, ``Running``: the stores are reached through ``running(request)``, never through
``app.state``'s names); JSON replies and ETags; RFC 9457 problem replies and the headers
a refusal carries; the problem responses every route documents; and the response
headers a page may read (CORS)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from starlette.responses import Response

from ..errors import PROBLEM_MEDIA_TYPE, AsterError
from ..schemas.sessions import Problem

if TYPE_CHECKING:
    from ..costs.spending import Spending
    from ..learning.learner import Learner
    from ..live.feed import Feed
    from ..live.follow import Following
    from ..services.memory import Memory
    from ..services.sessions import Activity, Sessions
    from ..settings import Settings
    from ..storage.home import Home
    from ..storage.journal import Journal
    from ..team.service import Team

EXPOSED_HEADERS = ["ETag", "Location", "Link", "Idempotent-Replayed", "Warning"]
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem, "content": {"application/problem+json": {}}}
    for code in (400, 404, 409, 412, 413, 422, 500, 507)
}
NDJSON = "application/x-ndjson"


@dataclass(frozen=True)
class Configured:
    """What the application was made with: its settings, its open home, its token."""

    settings: Settings
    home: Home
    token: str | None


@dataclass(frozen=True)
class Running:
    """What the lifespan built, for as long as the application serves."""

    journal: Journal
    sessions: Sessions
    memory: Memory
    feed: Feed
    learner: Learner
    following: Following
    watching: asyncio.Event  # set once the watcher of hand edits is watching
    team: Team
    spending: Spending
    activity: Activity


def _state(holder: Any) -> Any:
    """An application's state, from the application or a request to it."""
    app = getattr(holder, "app", holder)
    return app.state


def configured(holder: Any) -> Configured:
    found = _state(holder).configured
    assert isinstance(found, Configured)
    return found


def running(holder: Any) -> Running:
    found = _state(holder).running
    assert isinstance(found, Running)
    return found


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        orjson.dumps(data), status_code=status, media_type="application/json", headers=headers
    )


def etag(seq: int) -> str:
    return f'"{seq}"'


def problem_headers(exc: AsterError) -> dict[str, str]:
    """The headers a refusal carries: the current ETag of what it named, and when to
    try again."""
    headers = {}
    if exc.current is not None:
        headers["ETag"] = exc.current
    if exc.retry_after is not None:
        headers["Retry-After"] = str(exc.retry_after)
    return headers


def problem_response(body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    return Response(
        orjson.dumps(body),
        status_code=body["status"],
        media_type=PROBLEM_MEDIA_TYPE,
        headers=headers,
    )
