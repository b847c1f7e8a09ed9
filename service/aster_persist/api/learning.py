"""Learning over HTTP: on-demand extraction, the queue's state, consolidation."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from ..errors import LEARNING_OFF, Invalid, LearningOff
from ..learning.learner import Learner
from ..schemas.learning import ConsolidateIn, Consolidation, ExtractIn, ExtractionStatus, Queued
from ..storage.home import check_session_id
from .body import StrictRoute
from .sessions import ERRORS, json_response

router = APIRouter(prefix="/v1", tags=["learning"], route_class=StrictRoute)


def _learner(request: Request) -> Learner:
    learner: Learner = request.app.state.learner
    return learner


@router.post(
    "/sessions/{session_id:session}/extract",
    operation_id="sessions-extract",
    status_code=202,
    response_model=Queued,
    responses=ERRORS,
)
async def extract(request: Request, session_id: str, body: ExtractIn | None = None) -> Response:
    """Queue an extraction of memories from a range of a session's events (by default
    the last turn); `GET /v1/extraction` follows it."""
    check_session_id(session_id)
    _lines, _raw, info = await request.app.state.sessions.read(session_id)  # 404 first
    learner = _learner(request)
    if not learner.enabled:
        raise LearningOff(LEARNING_OFF)
    body = body or ExtractIn()
    to_seq = body.to_seq or info.last_seq
    if to_seq > info.last_seq or to_seq < 1:
        raise Invalid(f"to_seq must be from 1 to {info.last_seq}, the session's last seq")
    if body.from_seq is not None and body.from_seq > to_seq:
        raise Invalid("from_seq is after to_seq")
    job: dict[str, Any] = {"kind": "extract", "session": session_id, "to_seq": to_seq}
    if body.from_seq is not None:
        job["from_seq"] = body.from_seq
    return json_response({"job": learner.put(job), "queued": len(learner.queue)}, 202)


@router.get("/extraction", operation_id="extraction-status", response_model=ExtractionStatus)
async def extraction(request: Request) -> Response:
    """Whether learning is on, the queue, what was done, failed, accepted and rejected,
    the last errors and the model's latency."""
    return json_response(_learner(request).status())


@router.post(
    "/memory/consolidate",
    operation_id="memory-consolidate",
    response_model=Consolidation,
    tags=["memory"],
    responses={**ERRORS, 502: ERRORS[500]},
)
async def consolidate(
    request: Request,
    repo_root: str | None = None,
    apply: bool = False,
    body: ConsolidateIn | None = None,
) -> Response:
    """Propose merges of duplicate blocks, archives of stale or contradicted ones and new
    distilled blocks (a dry run); with `apply=true`, make them (journaled, revertible).
    The model sees at most 40 blocks, each cut short: never a transcript."""
    scope = await request.app.state.memory.scope_of(repo_root)
    proposal = body.proposal if body is not None else None
    result = await _learner(request).consolidate(scope, apply=apply, proposal=proposal)
    return json_response(result)
