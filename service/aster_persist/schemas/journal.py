"""The journal on the wire: one entry a change, and a page of them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class JournalEntry(BaseModel):
    id: str
    ts: str
    op: str
    scope: str
    name: str | None
    actor: str
    session: str | None
    before: Any
    after: Any
    detail: dict[str, Any]


class JournalPage(BaseModel):
    items: list[JournalEntry]
    next_cursor: str | None
