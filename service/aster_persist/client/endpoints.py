"""Every endpoint of the HTTP API, as both clients have them: operations here, then the
sessions (`sessions.py`) and memory (`memory.py`) endpoints, then learning, search and
the journal here, in the order of the README."""

from __future__ import annotations

from typing import Any, Literal

from ..schemas.journal import JournalOperations, JournalPage
from ..schemas.learning import Consolidation, ExtractionStatus, Queued, Reviewed, ReviewList
from ..schemas.memory import RevertResult
from ..schemas.ops import Health, Readiness
from ..schemas.search import SearchPage, SessionSearchPage
from .calls import Call, Scope, body_of, endpoint, read_json, read_model, read_text
from .memory import MemoryEndpoints
from .sessions import SessionEndpoints


class Endpoints(SessionEndpoints, MemoryEndpoints):
    """Every endpoint of the HTTP API, in the order of the README."""

    # -- operations

    @endpoint
    def health() -> Call[Health]:
        """``GET /healthz``: the process answers."""
        return Call("GET", "/healthz", read_model(Health))

    @endpoint
    def ready() -> Call[Readiness]:
        """``GET /readyz``: ready once the index has caught up (503 with progress before)."""
        return Call("GET", "/readyz", read_model(Readiness), answers=(503,))

    @endpoint
    def info(*, space: bool = False) -> Call[dict[str, Any]]:
        """``GET /v1/info``: version, data home, settings in effect, counts; with
        ``space``, what the home takes and what could be freed."""
        return Call(
            "GET",
            "/v1/info",
            read_json,
            params={"space": space or None},
            timeout=300 if space else None,
        )

    @endpoint
    def team() -> Call[dict[str, Any]]:
        """``GET /v1/team``: the team this machine shares sessions with, and its state."""
        return Call("GET", "/v1/team", read_json)

    @endpoint
    def stats(
        *,
        since: str | None = None,
        until: str | None = None,
        group: Literal["day", "project", "model"] | None = None,
        repo_root: str | None = None,
    ) -> Call[dict[str, Any]]:
        """``GET /v1/stats``: sessions, turns, tool calls and errors, tokens and an
        estimated cost from the day ``since`` through ``until`` (UTC; today by default),
        in total and by day, project or model."""
        params = {"since": since, "until": until, "group": group, "repo_root": repo_root}
        return Call("GET", "/v1/stats", read_json, params=params)

    @endpoint
    def metrics() -> Call[str]:
        """``GET /metrics``: Prometheus text."""
        return Call("GET", "/metrics", read_text)

    # -- learning

    @endpoint
    def extract(
        session_id: str, *, from_seq: int | None = None, to_seq: int | None = None
    ) -> Call[Queued]:
        """``POST /v1/sessions/{id}/extract``: queue an extraction of memories from a range
        of events (the last turn by default)."""
        return Call(
            "POST",
            f"/v1/sessions/{session_id}/extract",
            read_model(Queued),
            json=body_of(from_seq=from_seq, to_seq=to_seq),
        )

    @endpoint
    def extraction() -> Call[ExtractionStatus]:
        """``GET /v1/extraction``: the learning queue and what it has done."""
        return Call("GET", "/v1/extraction", read_model(ExtractionStatus))

    @endpoint
    def consolidate(
        repo_root: Scope = None, *, apply: bool = False, proposal: dict[str, Any] | None = None
    ) -> Call[Consolidation]:
        """``POST /v1/memory/consolidate``: proposed merges, archives and new blocks (a dry
        run); with ``apply``, made (``proposal`` applies a dry run's answer as it is)."""
        return Call(
            "POST",
            "/v1/memory/consolidate",
            read_model(Consolidation),
            params={"repo_root": repo_root, "apply": apply or None},
            json={"proposal": proposal} if proposal is not None else None,
            timeout=300,
        )

    # -- search and journal

    @endpoint
    def search(
        q: str,
        *,
        kind: Literal["messages", "memory", "all"] | None = None,
        kinds: list[str] | None = None,
        role: str | None = None,
        repo_root: str | None = None,
        session_id: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        since: str | None = None,
        until: str | None = None,
        rerank: bool | None = None,
    ) -> Call[SearchPage]:
        """``GET /v1/search``: sessions (and memory with ``kind``), best first;
        ``rerank=False`` keeps the fused order (search by meaning on)."""
        params = {
            "since": since,
            "until": until,
            "q": q,
            "kind": kind,
            "kinds": kinds,
            "role": role,
            "repo_root": repo_root,
            "session_id": session_id,
            "limit": limit,
            "cursor": cursor,
            "rerank": None if rerank is None else str(rerank).lower(),
        }
        return Call("GET", "/v1/search", read_model(SearchPage), params=params)

    @endpoint
    def held_items() -> Call[ReviewList]:
        """``GET /v1/memory/review``: extracted items held back for review (a tool's
        instruction-like words), not stored."""
        return Call("GET", "/v1/memory/review", read_model(ReviewList))

    @endpoint
    def review(entry_id: str, decision: Literal["accept", "dismiss"]) -> Call[Reviewed]:
        """``POST /v1/memory/review/{id}``: store a held item as a block, or refuse it."""
        return Call(
            "POST",
            f"/v1/memory/review/{entry_id}",
            read_model(Reviewed),
            json={"decision": decision},
        )

    @endpoint
    def search_sessions(
        q: str, *, repo_root: str | None = None, limit: int | None = None
    ) -> Call[SessionSearchPage]:
        """``GET /v1/search?group=session``: sessions ranked by their turns' hits, each
        with its best turns as evidence ("which session was that")."""
        params = {"q": q, "repo_root": repo_root, "limit": limit, "group": "session"}
        return Call("GET", "/v1/search", read_model(SessionSearchPage), params=params)

    @endpoint
    def journal_page(
        *,
        op: str | None = None,
        scope: str | None = None,
        name: str | None = None,
        session: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Call[JournalPage]:
        """``GET /v1/journal``: a page of entries, oldest first."""
        params = {
            "op": op,
            "scope": scope,
            "name": name,
            "session": session,
            "limit": limit,
            "cursor": cursor,
        }
        return Call("GET", "/v1/journal", read_model(JournalPage), params=params)

    @endpoint
    def journal_operations() -> Call[JournalOperations]:
        """``GET /v1/journal/operations``: every operation an entry may have (whether it
        can be reverted, what it records) and every actor it may name."""
        return Call("GET", "/v1/journal/operations", read_model(JournalOperations))

    @endpoint
    def revert(entry_id: str) -> Call[RevertResult]:
        """``POST /v1/journal/{id}/revert``: undo one journaled change."""
        return Call("POST", f"/v1/journal/{entry_id}/revert", read_model(RevertResult))
