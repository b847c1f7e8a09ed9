"""/v1/search and /v1/memory/search: BM25 full-text search over transcripts and memory.

The query syntax is in `index/text.py`: plain words match any of them, ranked by BM25;
`"phrases"`, `prefix*`, `AND`/`OR`/`NOT` and filters (`repo:`, `session:`, `kind:`,
`role:`, `after:`, `before:`) narrow it. A query that cannot be understood is a 422 that
says why.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from ..errors import Invalid
from ..index.fusion import RRF_K
from ..index.text import parse_query
from ..schemas.names import check_session_id
from ..schemas.search import DocKind, MemoryHits, Role, SearchPage, SessionSearchPage
from ..services.memory import Memory
from .bounds import TimeBound, time_bound
from .plumbing import ERRORS, json_response, running

router = APIRouter(prefix="/v1", tags=["search"])


async def _memory_scopes(memory: Memory, repo_root: str | None) -> list[str]:
    scope = await memory.scope_of(repo_root)
    return ["global"] if scope == "global" else [scope, "global"]


@router.get(
    "/search",
    operation_id="search",
    response_model=SearchPage | SessionSearchPage,
    responses=ERRORS,
)
async def search(
    request: Request,
    q: Annotated[str, Query(max_length=2000)] = "",
    kind: Literal["messages", "memory", "all"] = "messages",
    kinds: Annotated[list[DocKind] | None, Query()] = None,
    role: Annotated[list[Role] | None, Query()] = None,
    repo_root: str | None = None,
    session_id: str | None = None,
    since: TimeBound = None,
    until: TimeBound = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: str | None = None,
    group: Literal["session"] | None = None,
    rerank: bool = True,
) -> Response:
    """Full-text search. Transcript hits (`kind=messages`, the default) carry their
    session, seq, role, a snippet with the `highlights` as `[start, end)` character
    offsets, and a BM25 `score` (higher is better); pages follow `next_cursor`.
    `kind=memory` searches blocks and `ASTER.md` instead; `kind=all` adds the best
    memory hits to the first page of transcript hits. `since` and `until` (a date, whole
    days, or an RFC 3339 time) bound the hits' times (a memory hit's is when it was last
    changed), like `after:` and `before:` in `q`. Memory hits come from the project and
    global memory when a project is named, from every scope when none is; a memory hit
    of a project says its `repo_root`. With `group=session`, the items are sessions
    ("which session was that"), ranked by the sum of their best three turns' scores
    among the query's best hits, each with those turns as its evidence (transcripts
    only; one page). A question that says whose words it looks for ("what did I say",
    "the hotel you recommended") ranks that speaker's turns first: the other speaker's
    keep 0.35 of their score. With search by meaning on (`ASTER_SEMANTIC`), a query of plain
    words is ranked by BM25 and by meaning fused, `score` being the fused score, and the
    rest BM25 finds follows with `score` 0; the best 30 of them are then weighed again,
    word by word against the query (`ASTER_RERANK`, on by default with search by
    meaning), and come in that order, each with the score of its place; `rerank=false`
    leaves them in the fused order (about 0.15 s sooner)."""
    sessions = running(request).sessions
    memory: Memory = running(request).memory
    query = parse_query(q)
    query.rerank = rerank
    query.kinds += [k for k in kinds or [] if k not in query.kinds]
    query.roles += [r for r in role or [] if r not in query.roles]
    query.repo = query.repo or repo_root
    if session_id is not None:  # checked even when q names a session too
        session_id = check_session_id(session_id)
    query.session = query.session or session_id
    query.after = query.after or time_bound(since, "since")
    query.before = query.before or time_bound(until, "until", end=True)
    if group == "session":
        if kind == "memory" or cursor is not None:
            raise Invalid(
                "group=session groups transcript hits on one page: no kind=memory, no cursor"
            )
        found = await sessions.search_grouped(query, limit=limit)
        return json_response({"items": found, "next_cursor": None})
    items: list[dict[str, object]] = []
    next_cursor = None
    if kind != "memory":
        items, next_cursor = await sessions.search(query, limit=limit, cursor=cursor)
    if kind != "messages" and cursor is None:
        found = await sessions.search_memory(
            query,
            scopes=await _memory_scopes(memory, query.repo) if query.repo else None,
            kinds=("block", "core"),
            k=limit,
            steepness=RRF_K,  # fused as the transcript hits beside them are
        )
        roots = {f"project:{p['slug']}": p["repo_root"] for p in await sessions.projects()}
        hits = [
            {
                "kind": h["kind"],
                "scope": h["scope"],
                "repo_root": roots.get(h["scope"]),
                "name": h["name"],
                "snippet": h["snippet"],
                "highlights": h["highlights"],
                "score": h["relevance"],
                "ts": h["updated_at"] or None,
            }
            for h in found
        ]
        items = sorted([*items, *hits], key=lambda h: -float(h["score"]))[:limit]
    return json_response({"items": items, "next_cursor": next_cursor})


@router.get(
    "/memory/search", operation_id="memory-search", response_model=MemoryHits, responses=ERRORS
)
async def search_memory(
    request: Request,
    q: Annotated[str, Query(min_length=1, max_length=2000)],
    repo_root: str | None = None,
    k: Annotated[int, Query(ge=1, le=100)] = 5,
) -> Response:
    """`recallSimilar`: blocks of the project and global scopes ranked by BM25 relevance
    (fused with meaning when search by meaning is on) raised by recency (`score =
    relevance * (1 + 0.5 * recency)`, recency halving every 30 days), with their
    relations. Not journaled as a recall."""
    sessions = running(request).sessions
    memory: Memory = running(request).memory
    found = await sessions.search_memory(
        parse_query(q), scopes=await _memory_scopes(memory, repo_root), kinds=("block",), k=k
    )
    return json_response({"items": found})
