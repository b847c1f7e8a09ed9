"""/v1/team: this machine's place in the team that shares sessions through NATS."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from ..schemas.team import TeamStatus
from .plumbing import json_response, running

router = APIRouter(tags=["team"])


@router.get("/v1/team", operation_id="team-status", response_model=TeamStatus)
async def team_status(request: Request) -> Response:
    """Whether this daemon shares sessions with a team (`ASTER_TEAM_URL`), whether the
    cluster answers, the machines seen, what waits in each direction and the replication
    lag (`aster-persist team status` prints it)."""
    return json_response(await running(request).team.status())
