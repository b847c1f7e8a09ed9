"""The session endpoints of both clients: create, list, read, append, export, import,
rename, trash and restore, prune (one `Call` each; see `calls.py`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from ..schemas.events import SessionHeader
from ..schemas.sessions import (
    Activity,
    AppendOut,
    ChatMessages,
    CompressOut,
    EventPage,
    ImportOut,
    KnownFilesOut,
    ProjectList,
    PruneOut,
    RunningSessions,
    SessionDetail,
    SessionFacets,
    SessionPage,
    SessionSummary,
)
from .calls import Call, body_of, endpoint, if_match_header, read_json, read_model, read_nothing


class SessionEndpoints:
    """``/v1/sessions`` and ``/v1/projects``, in the order of the README."""

    @endpoint
    def create_session(
        repo_root: str,
        *,
        title: str | None = None,
        model: str | None = None,
        cwd: str | None = None,
        id: str | None = None,
        alias: str | None = None,
        **extra: Any,
    ) -> Call[SessionHeader]:
        """``POST /v1/sessions``: a new session; extra keys are kept in its header. An
        ``alias`` (your own name for it) is refused while another live session has it."""
        body = body_of(repo_root=repo_root, title=title, model=model, cwd=cwd, id=id, alias=alias)
        return Call("POST", "/v1/sessions", read_model(SessionHeader), json=body | extra)

    @endpoint
    def list_sessions(
        repo_root: str | None = None,
        *,
        state: Literal["ok", "damaged", "read_only"] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        alias: str | None = None,
        parent_id: str | None = None,
        **filters: Any,
    ) -> Call[SessionPage]:
        """``GET /v1/sessions``: newest first, a page at a time (``next_cursor``); with
        ``alias``, the live session of that alias; with ``parent_id``, its sub-agents'.
        ``filters`` are the listing's others (``source_tool``, ``model``, ``since``,
        ``until``, ``errors``, ``has_secrets``, ``top_level``, ``sort``, ``order``)."""
        params = {
            "repo_root": repo_root,
            "state": state,
            "limit": limit,
            "cursor": cursor,
            "alias": alias,
            "parent_id": parent_id,
            **filters,
        }
        return Call("GET", "/v1/sessions", read_model(SessionPage), params=params)

    @endpoint
    def session_facets() -> Call[SessionFacets]:
        """``GET /v1/sessions/facets``: the source tools and models sessions have."""
        return Call("GET", "/v1/sessions/facets", read_model(SessionFacets))

    @endpoint
    def latest_session(repo_root: str) -> Call[SessionSummary]:
        """``GET /v1/sessions/latest``: the project's most recently active session."""
        return Call(
            "GET",
            "/v1/sessions/latest",
            read_model(SessionSummary),
            params={"repo_root": repo_root},
        )

    @endpoint
    def running_sessions() -> Call[RunningSessions]:
        """``GET /v1/sessions/running``: the sessions being written now, the latest first."""
        return Call("GET", "/v1/sessions/running", read_model(RunningSessions))

    @endpoint
    def projects(*, limit: int | None = None, cursor: str | None = None) -> Call[ProjectList]:
        """``GET /v1/projects``: projects with their session count and last activity, a
        page at a time (``next_cursor``)."""
        params = {"limit": limit, "cursor": cursor}
        return Call("GET", "/v1/projects", read_model(ProjectList), params=params)

    @endpoint
    def activity(repo_root: str | None = None, *, days: int | None = None) -> Call[Activity]:
        """``GET /v1/projects/activity``: events per day of a project (or of all)."""
        params = {"repo_root": repo_root, "days": days}
        return Call("GET", "/v1/projects/activity", read_model(Activity), params=params)

    @endpoint
    def get_session(session_id: str) -> Call[SessionDetail]:
        """``GET /v1/sessions/{id}``: the summary and the header."""
        return Call("GET", f"/v1/sessions/{session_id}", read_model(SessionDetail))

    @endpoint
    def rename_session(session_id: str, title: str) -> Call[SessionSummary]:
        """``PATCH /v1/sessions/{id}``: set the title (journaled, revertible)."""
        return Call(
            "PATCH", f"/v1/sessions/{session_id}", read_model(SessionSummary), json={"title": title}
        )

    @endpoint
    def delete_session(session_id: str, *, purge: bool = False) -> Call[None]:
        """``DELETE /v1/sessions/{id}``: to the trash (restorable); ``purge`` for good."""
        params = {"purge": purge or None}
        return Call("DELETE", f"/v1/sessions/{session_id}", read_nothing, params=params)

    @endpoint
    def restore_session(session_id: str) -> Call[SessionSummary]:
        """``POST /v1/sessions/{id}/restore``: back from the trash."""
        return Call("POST", f"/v1/sessions/{session_id}/restore", read_model(SessionSummary))

    @endpoint
    def append(
        session_id: str,
        events: dict[str, Any] | Iterable[dict[str, Any]],
        *,
        idempotency_key: str | None = None,
        if_match: str | None = None,
    ) -> Call[AppendOut]:
        """``POST /v1/sessions/{id}/events``: one event or a batch, durable on return."""
        body = events if isinstance(events, dict) else list(events)
        headers = if_match_header(if_match)
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        return Call(
            "POST",
            f"/v1/sessions/{session_id}/events",
            read_model(AppendOut),
            json=body,
            headers=headers,
        )

    @endpoint
    def events(
        session_id: str,
        *,
        after: int | None = None,
        limit: int | None = None,
        type: list[str] | None = None,
        cursor: str | None = None,
        inline: bool | None = None,
    ) -> Call[EventPage]:
        """``GET /v1/sessions/{id}/events``: a page of events after a seq."""
        params = {"after": after, "limit": limit, "type": type, "cursor": cursor, "inline": inline}
        return Call(
            "GET", f"/v1/sessions/{session_id}/events", read_model(EventPage), params=params
        )

    @endpoint
    def messages(
        session_id: str, *, view: Literal["history", "context"] = "history"
    ) -> Call[ChatMessages]:
        """``GET /v1/sessions/{id}/messages``: the transcript as chat messages;
        ``view=context`` is what a model should be sent (summaries and evictions applied)."""
        params = {"view": view}
        return Call(
            "GET", f"/v1/sessions/{session_id}/messages", read_model(ChatMessages), params=params
        )

    @endpoint
    def export(session_id: str, *, redact: bool = False) -> Call[bytes]:
        """``GET /v1/sessions/{id}/export``: the transcript's JSONL, blobs inlined; with
        ``redact``, each secret in it replaced by ``[redacted: <kind>]``."""
        params = {"redact": "true"} if redact else {}
        return Call(
            "GET",
            f"/v1/sessions/{session_id}/export",
            lambda r: r.content,
            params=params,
            timeout=300,
        )

    @endpoint
    def export_openai(session_id: str, *, redact: bool = False) -> Call[list[dict[str, Any]]]:
        """``GET /v1/sessions/{id}/export?format=openai``: a chat-completions array (each
        secret redacted with ``redact``)."""
        params = {"format": "openai", **({"redact": "true"} if redact else {})}
        return Call("GET", f"/v1/sessions/{session_id}/export", read_json, params=params)

    @endpoint
    def import_file(
        data: bytes | Iterable[bytes],
        *,
        format: str = "auto",
        repo_root: str | None = None,
        modified_at: str | None = None,
        path: str | None = None,
    ) -> Call[ImportOut]:
        """``POST /v1/sessions/import``: one file's bytes (or, with the blocking client,
        its chunks as they are read: a file of any size is sent as a stream); importing
        it again adds nothing, and again once it grew adds what it gained.
        ``modified_at`` (the file's time) dates a file that holds no times of its own;
        ``path`` (where the file is) is remembered with it, for ``known_files``."""
        params = {"format": format, "repo_root": repo_root, "modified_at": modified_at}
        return Call(
            "POST",
            "/v1/sessions/import",
            read_model(ImportOut),
            params=params | ({"path": path} if path is not None else {}),
            content=data,
            headers={"Content-Type": "application/octet-stream"},
            timeout=300,
        )

    @endpoint
    def known_files(files: list[dict[str, Any]]) -> Call[KnownFilesOut]:
        """``POST /v1/sessions/import/known``: which of ``files`` (each a ``path``, a
        ``size`` and a ``modified_at``) were imported as they are now, their sessions
        still here (an import of a tree sends only the others)."""
        return Call(
            "POST",
            "/v1/sessions/import/known",
            read_model(KnownFilesOut),
            json={"files": files},
        )

    @endpoint
    def prune_sessions(
        *,
        older_than_days: float | None = None,
        keep_latest: int | None = None,
        purge_trash_older_than_days: float | None = None,
        dry_run: bool = True,
    ) -> Call[PruneOut]:
        """``POST /v1/sessions/prune``: what would go (``dry_run``), or move it to the trash
        (and empty the trash of what has been there longer than the last argument)."""
        body = body_of(
            older_than_days=older_than_days,
            keep_latest=keep_latest,
            purge_trash_older_than_days=purge_trash_older_than_days,
            dry_run=dry_run,
        )
        return Call("POST", "/v1/sessions/prune", read_model(PruneOut), json=body)

    @endpoint
    def compress_sessions(
        *, older_than_days: float | None = None, dry_run: bool = True
    ) -> Call[CompressOut]:
        """``POST /v1/sessions/compress``: keep sessions with no event for a while
        compressed (``<ulid>.jsonl.zst``), or (``dry_run``) say what that would free."""
        body = body_of(older_than_days=older_than_days, dry_run=dry_run)
        return Call(
            "POST", "/v1/sessions/compress", read_model(CompressOut), json=body, timeout=600
        )
