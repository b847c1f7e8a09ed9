"""Learning over HTTP: on-demand extraction, the queue's state, consolidation, and the
review of items held back (a tool's instruction-like words)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from ..errors import LEARNING_OFF, Conflict, Invalid, LearningOff, NameTaken, NotFound
from ..learning.learner import Learner
from ..learning.prompts import SCHEMA_NAME
from ..learning.validation import item_meta
from ..schemas.learning import (
    ConsolidateIn,
    Consolidation,
    ExtractIn,
    ExtractionStatus,
    Queued,
    Reviewed,
    ReviewIn,
    ReviewList,
)
from ..schemas.names import check_session_id
from .body import StrictRoute
from .plumbing import ERRORS, json_response, running

router = APIRouter(prefix="/v1", tags=["learning"], route_class=StrictRoute)


def _learner(request: Request) -> Learner:
    learner = running(request).learner
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
    _lines, _raw, info = await running(request).sessions.read(session_id)  # 404 first
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
    scope = await running(request).memory.scope_of(repo_root)
    proposal = body.proposal if body is not None else None
    result = await _learner(request).consolidate(scope, apply=apply, proposal=proposal)
    return json_response(result)


_REVIEWED = ("memory.held", "memory.conflict")


def _pending(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What waits for a person, oldest first: extracted items held back, and changes of a
    team's memory that met another machine's (``memory.conflict``) not reverted yet."""
    details = [e["detail"] for e in entries if isinstance(e.get("detail"), dict)]
    reviewed = {d.get("reviewed") for d in details}
    reverted = {d.get("reverted") for d in details}
    items = []
    for e in entries:
        if e["id"] in reviewed:
            continue
        if e.get("op") == "memory.held":
            items.append(
                {
                    "id": e["id"],
                    "ts": e["ts"],
                    "scope": e["scope"],
                    "session": e.get("session"),
                    "item": e["detail"].get("item") or {},
                    "reason": str(e["detail"].get("reason", "")),
                    "origin": str(e["detail"].get("origin", "tool")),
                }
            )
        elif e.get("op") == "memory.conflict" and e["id"] not in reverted:
            kept = e.get("before") or {}
            items.append(
                {
                    "id": e["id"],
                    "ts": e["ts"],
                    "scope": e["scope"],
                    "session": None,
                    "item": {
                        "title": e.get("name"),
                        "content": kept.get("content", ""),
                        "machine": e["detail"].get("machine"),
                    },
                    "reason": str(e["detail"].get("reason", "")),
                    "origin": "team",
                }
            )
    return items


@router.get(
    "/memory/review",
    operation_id="memory-review-list",
    response_model=ReviewList,
    tags=["memory"],
    responses=ERRORS,
)
async def review_list(request: Request) -> Response:
    """Extracted items held for review, not stored: their words came from a tool result
    and read as an instruction (a fetched page or a command's output steering the agent);
    and in a team, changes of shared memory made here that met another machine's
    (`origin: team`, both versions kept). `POST /v1/memory/review/{id}` accepts or
    dismisses one."""
    entries = await asyncio.to_thread(running(request).journal.entries)
    return json_response({"items": _pending(entries)})


@router.post(
    "/memory/review/{entry_id}",
    operation_id="memory-review",
    response_model=Reviewed,
    tags=["memory"],
    responses=ERRORS,
)
async def review(request: Request, entry_id: str, body: ReviewIn) -> Response:
    """Decide on a held item: `accept` stores it as a block (journaled with the review;
    the same text as a block's is merged into it), `dismiss` refuses it
    (`memory.rejected`, with the review). Each is decided once."""
    async with _learner(request).review_lock:  # one decision at a time: each taken once
        return await _decide(request, entry_id, body)


async def _decide(request: Request, entry_id: str, body: ReviewIn) -> Response:
    entries = await asyncio.to_thread(running(request).journal.entries)
    held = next((h for h in _pending(entries) if h["id"] == entry_id), None)
    if held is None:
        if any(e["id"] == entry_id and e.get("op") in _REVIEWED for e in entries):
            raise Conflict(f"held item {entry_id} was reviewed already")
        raise NotFound(f"no held item {entry_id[:40]}")
    memory = running(request).memory
    if held["origin"] == "team" and body.decision == "accept":  # this machine's version
        conflict = next(e for e in entries if e["id"] == entry_id)
        await memory.revert(conflict)
        return json_response({"id": entry_id, "decision": "accept", "block": conflict["name"]})
    item = held["item"]
    if body.decision == "dismiss":
        await memory.record(
            "memory.rejected",
            scope=held["scope"],
            session=held["session"],
            detail={"item": item, "reason": "dismissed on review", "reviewed": entry_id},
        )
        return json_response({"id": entry_id, "decision": "dismiss", "block": None})
    meta = {**item_meta(item), "schema": SCHEMA_NAME}
    if held["session"]:
        meta["source_session"] = held["session"]
    base = memory.name_for(str(item.get("title") or "reviewed"))[:56]
    for attempt in range(1, 6):  # as extraction does: the next free name
        try:
            block, _merged = await memory.write_block(
                held["scope"],
                base if attempt == 1 else f"{base}-{attempt}",
                body=str(item.get("content") or "").strip() + "\n",
                meta=meta,
                detail={"reviewed": entry_id},
            )
        except NameTaken:
            continue
        return json_response({"id": entry_id, "decision": "accept", "block": block.name})
    raise NameTaken(f"{base} and the next four names are taken; store it by hand")
