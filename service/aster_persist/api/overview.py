"""/v1/sessions/facets, /v1/projects/activity and /v1/stats: what the sessions can be
filtered by, how busy a project was day by day, and what the sessions did and cost; all
read the catalog only."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from ..schemas.sessions import Activity, SessionFacets
from ..schemas.stats import Stats
from . import body as strict
from .bounds import DayBound, day_bound
from .plumbing import ERRORS, json_response, running

router = APIRouter(prefix="/v1", route_class=strict.StrictRoute)


@router.get(
    "/sessions/facets",
    operation_id="sessions-facets",
    response_model=SessionFacets,
    tags=["sessions"],
    responses=ERRORS,
)
async def facets(request: Request) -> Response:
    """The source tools and models of the sessions, each with how many sessions have it,
    most common first: the values `GET /v1/sessions` filters take."""
    sessions = running(request).sessions
    return json_response(await sessions.in_catalog(lambda c: c.facets()))


@router.get(
    "/projects/activity",
    operation_id="projects-activity",
    response_model=Activity,
    tags=["projects"],
    responses=ERRORS,
)
async def activity(
    request: Request,
    repo_root: str | None = None,
    days: Annotated[int, Query(ge=1, le=3660)] = 90,
) -> Response:
    """Events per day (UTC, by each event's own time) over the last `days` days, of one
    project (`repo_root`) or of all; days without events are left out."""
    sessions = running(request).sessions
    root = await sessions.repo_root(repo_root) if repo_root is not None else None
    since = (sessions.now() - timedelta(days=days - 1)).date().isoformat()
    found = await sessions.in_catalog(lambda c: c.activity(root, since))
    return json_response({"repo_root": root, "since": since, "days": found})


@router.get(
    "/stats",
    operation_id="stats",
    response_model=Stats,
    tags=["sessions"],
    responses=ERRORS,
)
async def stats(
    request: Request,
    since: DayBound = None,
    until: DayBound = None,
    group: Literal["day", "project", "model"] | None = None,
    repo_root: str | None = None,
) -> Response:
    """Sessions, turns, tool calls, tool errors and tokens (cache reads apart) from the day
    `since` through the day `until` (UTC, by each event's own time; both today by
    default), with an estimated cost from the price table (`prices` says where it comes
    from); `group` splits them by day, project or model. A model without a price is
    counted and named in `unpriced_models`, never priced; a span that ends before it
    starts counts nothing."""
    first, last = day_bound(since, "since"), day_bound(until, "until")
    spending = running(request).spending
    return json_response(await spending.report(first, last, group, repo_root))
