"""/v1/journal: the audit trail, oldest first, with filters and cursors, and the revert
of one entry."""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from ..errors import NotFound
from ..schemas.journal import ACTORS, JournalOperations, JournalPage, operations
from ..schemas.memory import RevertResult
from .bounds import TimeBound, time_bound
from .plumbing import ERRORS, json_response, running

router = APIRouter(prefix="/v1", tags=["journal"])


@router.get("/journal", operation_id="journal-list", response_model=JournalPage, responses=ERRORS)
async def list_journal(
    request: Request,
    op: str | None = None,
    scope: str | None = None,
    name: str | None = None,
    session: str | None = None,
    actor: Literal[ACTORS] | None = None,  # type: ignore[valid-type]
    since: TimeBound = None,
    until: TimeBound = None,
    order: Literal["asc", "desc"] = "asc",
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: str | None = None,
) -> Response:
    """Journal entries after `cursor` (an entry id), oldest first; with `order=desc`,
    newest first and before `cursor`. `op=session` matches every `session.*` operation;
    `since` and `until` (a date, whole days, or an RFC 3339 time) bound when. Each entry
    says whether it can be reverted and, once it was, by which entry (`reverted_by`)."""
    journal = running(request).journal
    items, next_cursor = await asyncio.to_thread(
        journal.page,
        after=cursor,
        limit=limit,
        op=op,
        scope=scope,
        name=name,
        session=session,
        actor=actor,
        since=time_bound(since, "since"),
        until=time_bound(until, "until", end=True),
        newest_first=order == "desc",
    )
    return json_response({"items": items, "next_cursor": next_cursor})


@router.get(
    "/journal/operations",
    operation_id="journal-operations",
    response_model=JournalOperations,
    responses=ERRORS,
)
async def journal_operations() -> Response:
    """Every operation an entry may have (whether it can be reverted, what it records)
    and every actor it may name: what `op` and `actor` filter by."""
    return json_response(operations(ACTORS))


@router.post(
    "/journal/{entry_id}/revert",
    operation_id="journal-revert",
    response_model=RevertResult,
    responses=ERRORS,
)
async def revert(request: Request, entry_id: str) -> Response:
    """Undo one journaled change. A memory file goes back to its previous bytes; a deleted
    session comes back from the trash, a restored one goes back, a rename is renamed back.
    The revert is journaled too, so reverting it redoes the change."""
    memory = running(request).memory
    entry = await asyncio.to_thread(running(request).journal.get, entry_id)
    if entry is None:
        raise NotFound(f"no journal entry {entry_id[:40]}")
    if str(entry.get("op", "")).startswith("session."):
        return json_response(await running(request).sessions.revert(entry))
    result = await memory.revert(entry)
    return json_response(result)
