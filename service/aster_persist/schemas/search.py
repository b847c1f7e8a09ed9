"""Search on the wire: hits in transcripts and in memory, with their snippets."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

DocKind = Literal["message", "tool_call", "tool_result", "summary", "title"]


Role = Literal["user", "assistant", "tool", "system"]


class SearchHit(BaseModel):
    kind: str
    score: float
    snippet: str
    highlights: list[list[int]]
    session_id: str | None = None
    seq: int | None = None
    role: str | None = None
    ts: str | None = None
    repo_root: str | None = None
    title: str | None = None
    scope: str | None = None
    name: str | None = None


class SearchPage(BaseModel):
    items: list[SearchHit]
    next_cursor: str | None


class SessionHits(BaseModel):
    """A session found by its turns: its best hits are the evidence."""

    session_id: str
    title: str | None
    repo_root: str
    score: float
    matches: int = Field(description="Its hits among the best hits of the query.")
    hits: list[SearchHit]


class SessionSearchPage(BaseModel):
    items: list[SessionHits]
    next_cursor: None = None


class MemoryHit(BaseModel):
    kind: Literal["block", "core"]
    scope: str
    name: str
    description: str
    etag: str
    updated_at: str
    importance: float
    relevance: float
    recency: float
    score: float
    snippet: str
    highlights: list[list[int]]
    supersedes: list[str] = []
    conflicts_with: list[str] = []


class MemoryHits(BaseModel):
    items: list[MemoryHit]
