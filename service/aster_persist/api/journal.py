"""/v1/journal: the audit trail, oldest first, with filters and cursors."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from ..schemas.journal import JournalPage
from ..storage.journal import Journal
from .sessions import ERRORS, json_response

router = APIRouter(prefix="/v1", tags=["journal"])


@router.get("/journal", operation_id="journal-list", response_model=JournalPage, responses=ERRORS)
async def list_journal(
    request: Request,
    op: str | None = None,
    scope: str | None = None,
    name: str | None = None,
    session: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: str | None = None,
) -> Response:
    """Journal entries after `cursor` (an entry id), oldest first. `op=session` matches
    every `session.*` operation."""
    journal: Journal = request.app.state.journal
    items, next_cursor = await asyncio.to_thread(
        journal.page, after=cursor, limit=limit, op=op, scope=scope, name=name, session=session
    )
    return json_response({"items": items, "next_cursor": next_cursor})
