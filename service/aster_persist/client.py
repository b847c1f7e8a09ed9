"""The Python client of a running daemon: ``Client`` (blocking) and ``AsyncClient``.

Both have the same methods, one per endpoint, typed with the models the API itself
uses, and both raise the same typed errors, built from the problem body of a refusal::

    with Client() as aster:                       # ASTER_URL, ASTER_TOKEN or the home's token
        sid = aster.create_session(repo_root="/src/app").id
        aster.append(sid, {"type": "message", "role": "user", "content": "hi"})
        for event in aster.follow():              # the change feed, resumed after a drop
            ...

    async with AsyncClient() as aster:
        page = await aster.search("flaky test")

Each method is written once, as a function that describes its request (`Call`); the
`endpoint` descriptor runs it blocking on a `Client` and awaitable on an `AsyncClient`.
``follow`` and ``follow_session`` reconnect by themselves when the connection drops (the
daemon restarted, the network blinked), with ``Last-Event-ID`` set to the last item they
yielded, so nothing is missed and nothing is repeated.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, ParamSpec, TypeVar, overload

import httpx
import orjson
from pydantic import BaseModel

from .errors import PROBLEM_TYPE
from .paths import resolve_home
from .schemas.events import SessionHeader
from .schemas.journal import JournalEntry, JournalPage
from .schemas.learning import Consolidation, ExtractionStatus, Queued
from .schemas.memory import (
    Block,
    BlockList,
    BlockRead,
    ContextOut,
    Core,
    CoreWritten,
    MemoryPruneOut,
    Note,
    Reverted,
    SavedBlock,
    ToolList,
    ToolResult,
)
from .schemas.ops import Health, Readiness
from .schemas.search import MemoryHits, SearchPage
from .schemas.sessions import (
    AppendOut,
    ChatMessages,
    EventPage,
    ImportOut,
    ProjectList,
    PruneOut,
    SessionDetail,
    SessionPage,
    SessionSummary,
)

DEFAULT_URL = "http://127.0.0.1:4627"

T = TypeVar("T")
P = ParamSpec("P")
M = TypeVar("M", bound=BaseModel)


# -- errors ------------------------------------------------------------------------------


class ServiceError(Exception):
    """The daemon refused a request, or could not be asked."""


class DaemonUnavailable(ServiceError):
    """The daemon could not be reached (not running, wrong URL)."""


class ApiError(ServiceError):
    """A refusal, from its problem body: ``status``, ``code`` (the problem type's last
    part, such as ``session_not_found``), ``title``, ``detail`` and field ``errors``."""

    status = 0

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        self.status = status
        self.problem = problem
        kind = str(problem.get("type") or "")
        self.code = kind.removeprefix(PROBLEM_TYPE) if kind.startswith(PROBLEM_TYPE) else kind
        self.title = str(problem.get("title") or "")
        self.detail = str(problem.get("detail") or "")
        self.errors: list[dict[str, Any]] = list(problem.get("errors") or [])
        super().__init__(f"{status} {self.title}: {self.detail}")


class BadRequest(ApiError):
    status = 400


class Unauthorized(ApiError):
    status = 401


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    status = 409


class PreconditionFailed(ApiError):
    status = 412


class PayloadTooLarge(ApiError):
    status = 413


class Invalid(ApiError):
    """422: the request was understood and is wrong (a bad event, a secret, a name)."""

    status = 422


class Unavailable(ApiError):
    """503: busy, or not ready yet."""

    status = 503


class InsufficientStorage(ApiError):
    status = 507


_ERRORS: dict[int, type[ApiError]] = {
    cls.status: cls
    for cls in (
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        Conflict,
        PreconditionFailed,
        PayloadTooLarge,
        Invalid,
        Unavailable,
        InsufficientStorage,
    )
}


def error_of(response: httpx.Response) -> ApiError:
    """The typed error for a refusal (``ApiError`` itself for a status without a class)."""
    try:
        problem = response.json()
        if not isinstance(problem, dict):
            raise ValueError
    except ValueError:
        problem = {"title": response.reason_phrase, "detail": response.text[:500]}
    return _ERRORS.get(response.status_code, ApiError)(response.status_code, problem)


# -- requests ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request and how to read its reply."""

    method: str
    path: str
    read: Callable[[httpx.Response], T]
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    content: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    answers: tuple[int, ...] = ()  # refusal statuses that are answers, not errors

    def request(self, http: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        params = {k: _param(v) for k, v in self.params.items() if v is not None}
        return http.build_request(
            self.method,
            self.path,
            params=params,
            json=self.json,
            content=self.content,
            headers=self.headers,
            timeout=httpx.Timeout(10, read=self.timeout)
            if self.timeout
            else httpx.USE_CLIENT_DEFAULT,
        )


def _param(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return list(value) if isinstance(value, list | tuple) else value  # repeated


def _model(cls: type[M]) -> Callable[[httpx.Response], M]:
    return lambda response: cls.model_validate_json(response.content)


def _saved_or_note(response: httpx.Response) -> SavedBlock | Note:
    data = orjson.loads(response.content)
    return SavedBlock.model_validate(data) if "name" in data else Note.model_validate(data)


def _json(response: httpx.Response) -> Any:
    return orjson.loads(response.content)


def _nothing(response: httpx.Response) -> None:
    return None


def _text(response: httpx.Response) -> str:
    return response.text


def _body(**fields: Any) -> dict[str, Any]:
    """A JSON body from keyword arguments, leaving out the ones not given."""
    return {k: v for k, v in fields.items() if v is not None}


def _if_match(etag: str | None) -> dict[str, str]:
    return {"If-Match": etag} if etag else {}


class endpoint(Generic[P, T]):
    """A method of both clients from one request description: blocking on `Client`,
    awaitable on `AsyncClient`."""

    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, obj: None, owner: type) -> endpoint[P, T]: ...
    @overload
    def __get__(self, obj: Client, owner: type) -> Callable[P, T]: ...
    @overload
    def __get__(self, obj: AsyncClient, owner: type) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        build, send = self.build, obj._send

        @functools.wraps(build)
        def bound(*args: Any, **kwargs: Any) -> Any:
            return send(build(*args, **kwargs))

        return bound


Scope = str | None  # a project's repository root; None for global memory


class _Endpoints:
    """Every endpoint of the HTTP API, in the order of the README."""

    # -- operations

    @endpoint
    def health() -> Call[Health]:
        """``GET /healthz``: the process answers."""
        return Call("GET", "/healthz", _model(Health))

    @endpoint
    def ready() -> Call[Readiness]:
        """``GET /readyz``: ready once the index has caught up (503 with progress before)."""
        return Call("GET", "/readyz", _model(Readiness), answers=(503,))

    @endpoint
    def info() -> Call[dict[str, Any]]:
        """``GET /v1/info``: version, data home, settings in effect, counts."""
        return Call("GET", "/v1/info", _json)

    @endpoint
    def metrics() -> Call[str]:
        """``GET /metrics``: Prometheus text."""
        return Call("GET", "/metrics", _text)

    # -- sessions

    @endpoint
    def create_session(
        repo_root: str,
        *,
        title: str | None = None,
        model: str | None = None,
        cwd: str | None = None,
        id: str | None = None,
        **extra: Any,
    ) -> Call[SessionHeader]:
        """``POST /v1/sessions``: a new session; extra keys are kept in its header."""
        body = _body(repo_root=repo_root, title=title, model=model, cwd=cwd, id=id)
        return Call("POST", "/v1/sessions", _model(SessionHeader), json=body | extra)

    @endpoint
    def list_sessions(
        repo_root: str | None = None,
        *,
        state: Literal["ok", "damaged", "read_only"] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Call[SessionPage]:
        """``GET /v1/sessions``: newest first, a page at a time (``next_cursor``)."""
        params = {"repo_root": repo_root, "state": state, "limit": limit, "cursor": cursor}
        return Call("GET", "/v1/sessions", _model(SessionPage), params=params)

    @endpoint
    def latest_session(repo_root: str) -> Call[SessionSummary]:
        """``GET /v1/sessions/latest``: the project's most recently active session."""
        return Call(
            "GET", "/v1/sessions/latest", _model(SessionSummary), params={"repo_root": repo_root}
        )

    @endpoint
    def projects(*, limit: int | None = None, cursor: str | None = None) -> Call[ProjectList]:
        """``GET /v1/projects``: projects with their session count and last activity, a
        page at a time (``next_cursor``)."""
        params = {"limit": limit, "cursor": cursor}
        return Call("GET", "/v1/projects", _model(ProjectList), params=params)

    @endpoint
    def get_session(session_id: str) -> Call[SessionDetail]:
        """``GET /v1/sessions/{id}``: the summary and the header."""
        return Call("GET", f"/v1/sessions/{session_id}", _model(SessionDetail))

    @endpoint
    def rename_session(session_id: str, title: str) -> Call[SessionSummary]:
        """``PATCH /v1/sessions/{id}``: set the title (journaled, revertible)."""
        return Call(
            "PATCH", f"/v1/sessions/{session_id}", _model(SessionSummary), json={"title": title}
        )

    @endpoint
    def delete_session(session_id: str, *, purge: bool = False) -> Call[None]:
        """``DELETE /v1/sessions/{id}``: to the trash (restorable); ``purge`` for good."""
        params = {"purge": purge or None}
        return Call("DELETE", f"/v1/sessions/{session_id}", _nothing, params=params)

    @endpoint
    def restore_session(session_id: str) -> Call[SessionSummary]:
        """``POST /v1/sessions/{id}/restore``: back from the trash."""
        return Call("POST", f"/v1/sessions/{session_id}/restore", _model(SessionSummary))

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
        headers = _if_match(if_match)
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        return Call(
            "POST",
            f"/v1/sessions/{session_id}/events",
            _model(AppendOut),
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
        return Call("GET", f"/v1/sessions/{session_id}/events", _model(EventPage), params=params)

    @endpoint
    def messages(
        session_id: str, *, view: Literal["history", "context"] = "history"
    ) -> Call[ChatMessages]:
        """``GET /v1/sessions/{id}/messages``: the transcript as chat messages;
        ``view=context`` is what a model should be sent (summaries and evictions applied)."""
        params = {"view": view}
        return Call(
            "GET", f"/v1/sessions/{session_id}/messages", _model(ChatMessages), params=params
        )

    @endpoint
    def export(session_id: str) -> Call[bytes]:
        """``GET /v1/sessions/{id}/export``: the transcript's JSONL, blobs inlined."""
        return Call("GET", f"/v1/sessions/{session_id}/export", lambda r: r.content, timeout=300)

    @endpoint
    def export_openai(session_id: str) -> Call[list[dict[str, Any]]]:
        """``GET /v1/sessions/{id}/export?format=openai``: a chat-completions array."""
        return Call("GET", f"/v1/sessions/{session_id}/export", _json, params={"format": "openai"})

    @endpoint
    def import_file(
        data: bytes,
        *,
        format: str = "auto",
        repo_root: str | None = None,
    ) -> Call[ImportOut]:
        """``POST /v1/sessions/import``: one file's bytes; importing it again adds nothing."""
        return Call(
            "POST",
            "/v1/sessions/import",
            _model(ImportOut),
            params={"format": format, "repo_root": repo_root},
            content=data,
            headers={"Content-Type": "application/octet-stream"},
            timeout=300,
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
        body = _body(
            older_than_days=older_than_days,
            keep_latest=keep_latest,
            purge_trash_older_than_days=purge_trash_older_than_days,
            dry_run=dry_run,
        )
        return Call("POST", "/v1/sessions/prune", _model(PruneOut), json=body)

    # -- memory

    @endpoint
    def core(repo_root: Scope = None) -> Call[Core]:
        """``GET /v1/memory/core``: ``ASTER.md`` of the global scope or a project."""
        return Call("GET", "/v1/memory/core", _model(Core), params={"repo_root": repo_root})

    @endpoint
    def put_core(
        content: str, repo_root: Scope = None, *, if_match: str | None = None
    ) -> Call[CoreWritten]:
        """``PUT /v1/memory/core``: replace ``ASTER.md``; ``if_match`` guards it (412)."""
        return Call(
            "PUT",
            "/v1/memory/core",
            _model(CoreWritten),
            params={"repo_root": repo_root},
            json={"content": content},
            headers=_if_match(if_match),
        )

    @endpoint
    def add_note(
        note: str, repo_root: Scope = None, *, session_id: str | None = None
    ) -> Call[Note]:
        """``POST /v1/memory/core/notes``: a bullet in ``ASTER.md`` (kept once)."""
        return Call(
            "POST",
            "/v1/memory/core/notes",
            _model(Note),
            params={"repo_root": repo_root},
            json=_body(note=note, session_id=session_id),
        )

    @endpoint
    def remember(
        content: str,
        repo_root: Scope = None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        type: Literal["semantic", "procedural"] | None = None,
        tags: list[str] | None = None,
        importance: float | None = None,
        pinned: bool | None = None,
        replace: bool | None = None,
        session_id: str | None = None,
        **meta: Any,
    ) -> Call[SavedBlock]:
        """``POST /v1/memory/blocks``: a named block (the same content twice is merged)."""
        body = _body(
            content=content,
            name=name,
            title=title,
            description=description,
            type=type,
            tags=tags,
            importance=importance,
            pinned=pinned,
            replace=replace,
            session_id=session_id,
        )
        return Call(
            "POST",
            "/v1/memory/blocks",
            _model(SavedBlock),
            params={"repo_root": repo_root},
            json=body | meta,
        )

    @endpoint
    def remember_tool(
        note: str,
        repo_root: Scope = None,
        *,
        title: str | None = None,
        tags: list[str] | None = None,
        replace: bool | None = None,
        session_id: str | None = None,
    ) -> Call[SavedBlock | Note]:
        """``POST /v1/memory/remember``: the agents' `remember` tool: with a title, a
        block named after it; without, a bullet in ``ASTER.md``."""
        body = _body(note=note, title=title, tags=tags, replace=replace, session_id=session_id)
        return Call(
            "POST",
            "/v1/memory/remember",
            _saved_or_note,
            params={"repo_root": repo_root},
            json=body,
        )

    @endpoint
    def recall(
        name: str,
        repo_root: Scope = None,
        *,
        track: bool | None = None,
        archived: bool | None = None,
        session_id: str | None = None,
    ) -> Call[BlockRead]:
        """``GET /v1/memory/blocks/{name}``: a block in full (journaled as a recall)."""
        params = {
            "repo_root": repo_root,
            "track": track,
            "archived": archived,
            "session_id": session_id,
        }
        return Call("GET", f"/v1/memory/blocks/{name}", _model(BlockRead), params=params)

    @endpoint
    def blocks(
        repo_root: Scope = None,
        *,
        tag: str | None = None,
        type: str | None = None,
        include_archived: bool | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Call[BlockList]:
        """``GET /v1/memory/blocks``: the blocks of a scope, filtered, a page at a time
        (``next_cursor``)."""
        params = {
            "repo_root": repo_root,
            "tag": tag,
            "type": type,
            "include_archived": include_archived,
            "limit": limit,
            "cursor": cursor,
        }
        return Call("GET", "/v1/memory/blocks", _model(BlockList), params=params)

    @endpoint
    def recent(repo_root: Scope = None, *, n: int | None = None) -> Call[BlockList]:
        """``GET /v1/memory/recent``: the most recently changed blocks."""
        params = {"repo_root": repo_root, "n": n}
        return Call("GET", "/v1/memory/recent", _model(BlockList), params=params)

    @endpoint
    def put_block(
        name: str,
        content: str,
        repo_root: Scope = None,
        *,
        if_match: str | None = None,
    ) -> Call[SavedBlock]:
        """``PUT /v1/memory/blocks/{name}``: replace a block with markdown (frontmatter
        and body); ``if_match`` guards it (412 when someone else changed it)."""
        return Call(
            "PUT",
            f"/v1/memory/blocks/{name}",
            _model(SavedBlock),
            params={"repo_root": repo_root},
            content=content.encode(),
            headers={"Content-Type": "text/markdown", **_if_match(if_match)},
        )

    @endpoint
    def patch_block(
        name: str,
        repo_root: Scope = None,
        *,
        if_match: str | None = None,
        **changes: Any,
    ) -> Call[Block]:
        """``PATCH /v1/memory/blocks/{name}``: tags, importance, pinned, description…"""
        return Call(
            "PATCH",
            f"/v1/memory/blocks/{name}",
            _model(Block),
            params={"repo_root": repo_root},
            json=changes,
            headers=_if_match(if_match),
        )

    @endpoint
    def forget(name: str, repo_root: Scope = None) -> Call[None]:
        """``DELETE /v1/memory/blocks/{name}``: forget (the journal keeps it: revertible)."""
        return Call(
            "DELETE", f"/v1/memory/blocks/{name}", _nothing, params={"repo_root": repo_root}
        )

    @endpoint
    def archive(name: str, repo_root: Scope = None) -> Call[Block]:
        """``POST /v1/memory/blocks/{name}/archive``: out of the context, kept."""
        return Call(
            "POST",
            f"/v1/memory/blocks/{name}/archive",
            _model(Block),
            params={"repo_root": repo_root},
        )

    @endpoint
    def restore(name: str, repo_root: Scope = None) -> Call[Block]:
        """``POST /v1/memory/blocks/{name}/restore``: back from the archive."""
        return Call(
            "POST",
            f"/v1/memory/blocks/{name}/restore",
            _model(Block),
            params={"repo_root": repo_root},
        )

    @endpoint
    def context(repo_root: Scope = None, *, query: str | None = None) -> Call[ContextOut]:
        """``GET /v1/memory/context``: the markdown an agent puts in its prompt."""
        params = {"repo_root": repo_root, "query": query}
        return Call("GET", "/v1/memory/context", _model(ContextOut), params=params)

    @endpoint
    def search_memory(q: str, repo_root: Scope = None, *, k: int | None = None) -> Call[MemoryHits]:
        """``GET /v1/memory/search``: blocks and core memory by relevance and recency."""
        params = {"q": q, "repo_root": repo_root, "k": k}
        return Call("GET", "/v1/memory/search", _model(MemoryHits), params=params)

    @endpoint
    def remember_procedure(
        outcome: Literal["success", "failure"],
        task: str,
        repo_root: Scope = None,
        *,
        tools: list[str] | None = None,
        result: str | None = None,
        error: str | None = None,
        importance: float | None = None,
        session_id: str | None = None,
    ) -> Call[SavedBlock]:
        """``POST /v1/memory/procedures``: how a task went, as a procedural block."""
        body = _body(
            outcome=outcome,
            task=task,
            tools=tools,
            result=result,
            error=error,
            importance=importance,
            session_id=session_id,
        )
        return Call(
            "POST",
            "/v1/memory/procedures",
            _model(SavedBlock),
            params={"repo_root": repo_root},
            json=body,
        )

    @endpoint
    def prune_memory(
        repo_root: Scope = None,
        *,
        max_age_days: float | None = None,
        max_importance: float | None = None,
        dry_run: bool = True,
    ) -> Call[MemoryPruneOut]:
        """``POST /v1/memory/prune``: archive stale, unimportant blocks (dry run first)."""
        body = _body(max_age_days=max_age_days, max_importance=max_importance, dry_run=dry_run)
        return Call(
            "POST",
            "/v1/memory/prune",
            _model(MemoryPruneOut),
            params={"repo_root": repo_root},
            json=body,
        )

    @endpoint
    def tools() -> Call[ToolList]:
        """``GET /v1/memory/tools``: remember, recall and forget as tool definitions."""
        return Call("GET", "/v1/memory/tools", _model(ToolList))

    @endpoint
    def call_tool(
        name: str,
        arguments: dict[str, Any] | str,
        *,
        repo_root: Scope = None,
        session_id: str | None = None,
    ) -> Call[ToolResult]:
        """``POST /v1/memory/tools/call``: run a model's tool call; ``content`` is its reply."""
        body = _body(name=name, arguments=arguments, repo_root=repo_root, session_id=session_id)
        return Call("POST", "/v1/memory/tools/call", _model(ToolResult), json=body)

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
            _model(Queued),
            json=_body(from_seq=from_seq, to_seq=to_seq),
        )

    @endpoint
    def extraction() -> Call[ExtractionStatus]:
        """``GET /v1/extraction``: the learning queue and what it has done."""
        return Call("GET", "/v1/extraction", _model(ExtractionStatus))

    @endpoint
    def consolidate(
        repo_root: Scope = None, *, apply: bool = False, proposal: dict[str, Any] | None = None
    ) -> Call[Consolidation]:
        """``POST /v1/memory/consolidate``: proposed merges, archives and new blocks (a dry
        run); with ``apply``, made (``proposal`` applies a dry run's answer as it is)."""
        return Call(
            "POST",
            "/v1/memory/consolidate",
            _model(Consolidation),
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
    ) -> Call[SearchPage]:
        """``GET /v1/search``: sessions (and memory with ``kind``), best first."""
        params = {
            "q": q,
            "kind": kind,
            "kinds": kinds,
            "role": role,
            "repo_root": repo_root,
            "session_id": session_id,
            "limit": limit,
            "cursor": cursor,
        }
        return Call("GET", "/v1/search", _model(SearchPage), params=params)

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
        return Call("GET", "/v1/journal", _model(JournalPage), params=params)

    @endpoint
    def revert(entry_id: str) -> Call[Reverted]:
        """``POST /v1/journal/{id}/revert``: undo one journaled change."""
        return Call("POST", f"/v1/journal/{entry_id}/revert", _model(Reverted))


def token_for(explicit: str | None = None) -> str | None:
    """The token to send: the one given, ASTER_TOKEN, else the data home's token file."""
    if explicit or os.environ.get("ASTER_TOKEN"):
        return explicit or os.environ["ASTER_TOKEN"]
    try:
        home = resolve_home(
            Path(os.environ["ASTER_HOME"]) if os.environ.get("ASTER_HOME") else None
        )
        fd = os.open(home / "token", os.O_RDONLY | os.O_NOFOLLOW)  # never through a link
        with os.fdopen(fd, encoding="utf-8") as handle:
            return handle.read().strip() or None
    except (OSError, ValueError):
        return None


def _options(url: str | None, token: str | None, timeout: float) -> dict[str, Any]:
    secret = token_for(token)
    return {
        "base_url": url or os.environ.get("ASTER_URL") or DEFAULT_URL,
        "headers": {"Authorization": f"Bearer {secret}"} if secret else {},
        "timeout": httpx.Timeout(10, read=timeout),
    }


def _check(response: httpx.Response, answers: tuple[int, ...] = ()) -> httpx.Response:
    if response.status_code >= 400 and response.status_code not in answers:
        raise error_of(response)
    return response


def _unavailable(base: httpx.URL, exc: Exception) -> DaemonUnavailable:
    return DaemonUnavailable(f"the daemon is not running at {base} ({exc})")


class Client(_Endpoints):
    """A blocking client. ``url`` defaults to ASTER_URL, then ``http://127.0.0.1:4627``;
    ``token`` to ASTER_TOKEN, then the data home's token file."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 60,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.http = httpx.Client(transport=transport, **_options(url, token, timeout))

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _send(self, call: Call[T]) -> T:
        try:
            response = self.http.send(call.request(self.http))
        except httpx.TransportError as exc:
            raise _unavailable(self.http.base_url, exc) from None
        return call.read(_check(response, call.answers))

    def journal(self, *, after: str | None = None, **filters: Any) -> Iterator[JournalEntry]:
        """Every journal entry after ``after`` (from the first without), page by page."""
        cursor = after
        while True:
            page = self.journal_page(cursor=cursor, limit=1000, **filters)
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def follow(
        self,
        *,
        after: str | None = None,
        scope: str | None = None,
        op: str | None = None,
        repo_root: str | None = None,
        notices: bool = False,
        retry: float = 0.5,
    ) -> Iterator[JournalEntry | dict[str, Any]]:
        """The change feed: journal entries after ``after``, then live, forever,
        reconnecting and resuming by itself. With ``notices``, ``session.appended``
        notices (plain dicts) come too."""
        feed = _Feed("/v1/events", after, {"scope": scope, "op": op, "repo_root": repo_root})
        while True:
            try:
                with self.http.stream(**feed.request()) as response:
                    _check_stream(response)
                    for item in feed.take(response.iter_lines()):
                        if notices or isinstance(item, JournalEntry):
                            yield item
            except httpx.TransportError:
                pass  # dropped or restarting: resume from the last item seen
            time.sleep(retry)

    def follow_session(
        self, session_id: str, *, after: int = 0, retry: float = 0.5
    ) -> Iterator[dict[str, Any]]:
        """A session's events after seq ``after``, then each one appended, forever."""
        feed = _Feed(f"/v1/sessions/{session_id}/events/stream", str(after), {})
        while True:
            try:
                with self.http.stream(**feed.request()) as response:
                    _check_stream(response)
                    yield from feed.take(response.iter_lines())  # type: ignore[misc]
            except httpx.TransportError:
                pass
            time.sleep(retry)


class AsyncClient(_Endpoints):
    """The same client for asyncio: every endpoint method is awaitable."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 60,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.http = httpx.AsyncClient(transport=transport, **_options(url, token, timeout))

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.http.aclose()

    async def _send(self, call: Call[T]) -> T:
        try:
            response = await self.http.send(call.request(self.http))
        except httpx.TransportError as exc:
            raise _unavailable(self.http.base_url, exc) from None
        return call.read(_check(response, call.answers))

    async def journal(
        self, *, after: str | None = None, **filters: Any
    ) -> AsyncIterator[JournalEntry]:
        """Every journal entry after ``after`` (from the first without), page by page."""
        cursor = after
        while True:
            page = await self.journal_page(cursor=cursor, limit=1000, **filters)
            for entry in page.items:
                yield entry
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def follow(
        self,
        *,
        after: str | None = None,
        scope: str | None = None,
        op: str | None = None,
        repo_root: str | None = None,
        notices: bool = False,
        retry: float = 0.5,
    ) -> AsyncIterator[JournalEntry | dict[str, Any]]:
        """The change feed, as `Client.follow`."""
        feed = _Feed("/v1/events", after, {"scope": scope, "op": op, "repo_root": repo_root})
        while True:
            try:
                async with self.http.stream(**feed.request()) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        raise error_of(response)
                    async for line in response.aiter_lines():
                        for item in feed.take((line,)):
                            if notices or isinstance(item, JournalEntry):
                                yield item
            except httpx.TransportError:
                pass
            await asyncio.sleep(retry)

    async def follow_session(
        self, session_id: str, *, after: int = 0, retry: float = 0.5
    ) -> AsyncIterator[dict[str, Any]]:
        """A session's events after seq ``after``, then each one appended, forever."""
        feed = _Feed(f"/v1/sessions/{session_id}/events/stream", str(after), {})
        while True:
            try:
                async with self.http.stream(**feed.request()) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        raise error_of(response)
                    async for line in response.aiter_lines():
                        for item in feed.take((line,)):
                            yield item  # type: ignore[misc]
            except httpx.TransportError:
                pass
            await asyncio.sleep(retry)


def _check_stream(response: httpx.Response) -> None:
    if response.status_code >= 400:
        response.read()
        raise error_of(response)


class _Feed:
    """The state of one followed stream: where to resume, and the event being read."""

    def __init__(self, path: str, after: str | None, filters: dict[str, Any]) -> None:
        self.path = path
        self.last = after if after not in (None, "0") else None
        self.filters = {k: v for k, v in filters.items() if v}
        self.fields: dict[str, str] = {}

    def request(self) -> dict[str, Any]:
        self.fields = {}
        headers = {"Last-Event-ID": self.last} if self.last else {}
        return {
            "method": "GET",
            "url": self.path,
            "params": self.filters,
            "headers": headers,
            "timeout": httpx.Timeout(10, read=None),
        }

    def take(self, lines: Iterable[str]) -> Iterator[JournalEntry | dict[str, Any]]:
        """The items completed by these lines of the stream."""
        for line in lines:
            if line:
                if not line.startswith(":"):
                    key, _, value = line.partition(":")
                    self.fields[key] = value[1:] if value.startswith(" ") else value
                continue
            fields, self.fields = self.fields, {}
            if "data" not in fields:
                continue
            data = orjson.loads(fields["data"])
            if fields.get("id"):
                self.last = fields["id"]
            if fields.get("event") == "journal":
                yield JournalEntry.model_validate(data)
            else:
                yield data
