"""/v1/sessions: create, list, read, append, rename, delete, restore, prune, export."""

from __future__ import annotations

import asyncio
import errno
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, Literal

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from ..errors import InsufficientStorage, Invalid, PayloadTooLarge
from ..importers import CHOICES
from ..index.catalog import Listing
from ..schemas.clock import format_ts
from ..schemas.names import check_session_id
from ..schemas.sessions import MAX_ALIAS
from ..schemas.validation import SessionHeader
from ..services.sessions import Sessions
from . import body as strict
from .appends import appended_body, appended_headers, appended_status, handle_append
from .bounds import TimeBound, time_bound
from .models import (
    LIST_LIMIT,
    AppendOut,
    CompressIn,
    CompressOut,
    ImportOut,
    KnownFilesIn,
    KnownFilesOut,
    ProjectList,
    PruneIn,
    PruneOut,
    RenameIn,
    RunningSessions,
    SessionDetail,
    SessionIn,
    SessionPage,
    SessionSummary,
    page_of,
    summary_of,
)
from .plumbing import ERRORS, configured, etag, json_response, running
from .rules import IfMatch, IfNoneMatch, checked_time, parse_seq_match
from .session_docs import APPEND_DOC, REPLAYED

router = APIRouter(prefix="/v1", tags=["sessions"], route_class=strict.StrictRoute)
SortKey = Literal[
    "updated", "created", "events", "turns", "tool_calls", "tool_errors", "tokens", "duration"
]
if TYPE_CHECKING:
    ImportFormat = str
else:  # the importers' registry names the formats; the OpenAPI enum follows it
    ImportFormat = Literal[CHOICES]


def _summary(info: Any, parent: tuple[str, str | None] | None = None) -> dict[str, Any]:
    return summary_of(info, parent).model_dump()


async def _linked(sessions: Sessions, info: Any) -> dict[str, Any]:
    """A session's summary with the session that started it, if one did."""
    parent, _children = await sessions.links(info)
    return _summary(info, parent)


@router.post(
    "/sessions",
    status_code=201,
    operation_id="sessions-create",
    response_model=SessionHeader,
    responses={
        **ERRORS,
        200: {
            "model": SessionHeader,
            "description": "A create retried with the same id and fields: that session",
        },
    },
)
async def create_session(request: Request, body: SessionIn) -> Response:
    """Create a session: a new transcript file holding its header."""
    fields = body.model_dump(exclude_unset=True)
    extra = {k: v for k, v in fields.items() if k not in SessionIn.model_fields}
    if body.alias is not None:
        extra["alias"] = body.alias
    header = await running(request).sessions.create(
        repo_root=body.repo_root,
        session_id=body.id,
        cwd=body.cwd,
        model=body.model,
        aster_version=body.aster_version,
        title=body.title,
        extra=extra,
    )
    location = {"Location": f"/v1/sessions/{header['id']}"}
    if header.pop("replayed", False):  # a retried create: the session the first one made
        return json_response(header, 200, location)
    return json_response(header, 201, location | {"ETag": etag(0)})


@router.get("/sessions", operation_id="sessions-list", response_model=SessionPage, responses=ERRORS)
async def list_sessions(
    request: Request,
    repo_root: str | None = None,
    state: Literal["ok", "damaged", "read_only"] | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: str | None = None,
    parent_id: str | None = None,
    alias: Annotated[str | None, Query(min_length=1, max_length=MAX_ALIAS)] = None,
    source_tool: Annotated[str | None, Query(min_length=1, max_length=100)] = None,
    model: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    since: TimeBound = None,
    until: TimeBound = None,
    errors: bool | None = None,
    has_secrets: bool | None = None,
    top_level: bool = False,
    sort: SortKey = "updated",
    order: Literal["asc", "desc"] = "desc",
) -> Response:
    """Sessions, newest activity first, served from the catalog (no transcript is read).
    With `parent_id`, the sessions that one started (its sub-agents); with `alias`, the
    live session its caller named so (none, or one). Filters: `source_tool` (`api` for
    sessions written through the API), `model`, last activity `since` and `until` (a
    date, whole days, or an RFC 3339 time), `errors` (had tool errors or not),
    `has_secrets` (its text holds a key, token or password, or not), `top_level` (no sub-agents). `sort` by activity, creation, events, turns, tool calls,
    tool errors, tokens or duration, `order` largest (latest) first by default; the
    cursor follows the order it was given in."""
    if parent_id is not None:
        check_session_id(parent_id)
    listing = Listing(
        source_tool=source_tool,
        model=model,
        since=time_bound(since, "since"),
        until=time_bound(until, "until", end=True),
        errors=errors,
        secrets=has_secrets,
        top_level=top_level,
        sort=sort,
        descending=order == "desc",
    )
    page = await running(request).sessions.listing(
        repo_root=repo_root,
        state=state,
        limit=limit,
        cursor=cursor,
        parent=parent_id,
        alias=alias,
        listing=listing,
    )
    items = [_summary(i, page.parents.get(i.id)) for i in page.items]
    return json_response({"items": items, "next_cursor": page.next_cursor})


@router.get(
    "/sessions/latest",
    operation_id="sessions-latest",
    response_model=SessionSummary,
    responses=ERRORS,
)
async def latest_session(request: Request, repo_root: str) -> Response:
    """The session of a repository with the most recent activity (`--continue`)."""
    sessions = running(request).sessions
    return json_response(await _linked(sessions, await sessions.latest(repo_root)))


@router.get(
    "/sessions/running",
    operation_id="sessions-running",
    response_model=RunningSessions,
    responses=ERRORS,
)
async def running_sessions(request: Request) -> Response:
    """The sessions being written now: an append of the present came within the last
    `window_seconds` (written here, through the API or into the home, or lines of now
    from a followed tool or a team's machine; an import of old history is not). Kept in
    memory: after a restart, a session runs again at its next append."""
    services = running(request)
    last = services.activity.running()
    infos = await services.sessions.in_catalog(lambda c: [c.get(sid) for sid in last])
    items = [
        {**_summary(info), "last_append": format_ts(last[info.id])}
        for info in infos
        if info is not None
    ]
    window = services.activity.window.total_seconds()
    return json_response({"window_seconds": window, "items": items})


@router.get(
    "/projects",
    operation_id="projects-list",
    response_model=ProjectList,
    tags=["projects"],
    responses=ERRORS,
)
async def list_projects(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=1000)] = LIST_LIMIT,
    cursor: str | None = None,
) -> Response:
    """Projects with their session counts and last activity, most recently active first."""
    projects = await running(request).sessions.projects()
    items, next_cursor = page_of(
        projects, lambda p: (str(p["last_activity"] or ""), str(p["slug"])), limit, cursor
    )
    return json_response({"items": items, "next_cursor": next_cursor})


@router.get(
    "/sessions/{session_id:session}",
    operation_id="sessions-get",
    response_model=SessionDetail,
    responses={**ERRORS, 304: {"description": "Not modified"}},
)
async def get_session(
    request: Request,
    session_id: str,
    if_none_match: IfNoneMatch = None,
) -> Response:
    """One session's summary and header. ETag is its last seq."""
    check_session_id(session_id)
    lines, _raw, info = await running(request).sessions.read(session_id, inline=False)
    info.secrets = await running(request).sessions.in_catalog(lambda c: c.secrets_of(session_id))
    tag = etag(info.last_seq)
    if if_none_match is not None and tag in [t.strip() for t in if_none_match.split(",")]:
        return Response(status_code=304, headers={"ETag": tag})
    header = lines[0] if lines and lines[0].get("type") == "session" else {}
    parent, children = await running(request).sessions.links(info)
    cost = running(request).spending.of_session(info.stats.ledger, info.stats.models)
    body = _summary(info, parent) | {
        "header": header,
        "bad_lines": info.bad_lines,
        "children": children,
        "cost": cost,
    }
    return json_response(body, headers={"ETag": tag})


@router.patch(
    "/sessions/{session_id:session}",
    operation_id="sessions-rename",
    response_model=SessionSummary,
    responses=ERRORS,
)
async def rename_session(
    request: Request,
    session_id: str,
    body: RenameIn,
    if_match: IfMatch = None,
) -> Response:
    """Rename: appends a `title` event with `source: user`. `If-Match` (the session's ETag,
    its last seq) guards it."""
    check_session_id(session_id)
    sessions = running(request).sessions
    await sessions.rename(session_id, body.title, if_match=parse_seq_match(if_match))
    _lines, _raw, info = await sessions.read(session_id, inline=False)
    return json_response(await _linked(sessions, info), headers={"ETag": etag(info.last_seq)})


@router.delete(
    "/sessions/{session_id:session}",
    status_code=204,
    operation_id="sessions-delete",
    responses=ERRORS,
)
async def delete_session(
    request: Request,
    session_id: str,
    purge: bool = False,
    if_match: IfMatch = None,
) -> Response:
    """Move to the project's trash, or delete for good with `purge=true`. `If-Match` (the
    session's ETag) guards it: 412 when an append came in since."""
    check_session_id(session_id)
    await running(request).sessions.delete(
        session_id, purge=purge, if_match=parse_seq_match(if_match)
    )
    return Response(status_code=204)


@router.post(
    "/sessions/{session_id:session}/restore",
    operation_id="sessions-restore",
    response_model=SessionSummary,
    responses=ERRORS,
)
async def restore_session(request: Request, session_id: str) -> Response:
    """Bring a session back from the trash."""
    check_session_id(session_id)
    sessions = running(request).sessions
    await sessions.restore(session_id)
    _lines, _raw, info = await sessions.read(session_id, inline=False)
    return json_response(await _linked(sessions, info))


@router.post(
    "/sessions/import",
    operation_id="sessions-import",
    response_model=ImportOut,
    responses={**ERRORS, 201: {"model": ImportOut, "description": "Sessions were imported"}},
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
            },
        }
    },
)
async def import_sessions(
    request: Request,
    format: ImportFormat = "auto",
    repo_root: str | None = None,
    modified_at: str | None = None,
    path: Annotated[str | None, Query(min_length=1, max_length=4096)] = None,
) -> Response:
    """Import a transcript file written by another tool, or exported from here: one
    session per conversation, in the project of the source's working folder (or
    `repo_root`). Importing the same source again creates nothing and says so (200);
    again once it grew, it appends what it gained to the same session (`updated`).
    `modified_at`, the file's time, dates a file that holds no times of its own. `path`,
    where the file is as the caller names it, is remembered with its size and
    `modified_at`, so `POST /v1/sessions/import/known` can say it need not be sent again."""
    if repo_root is not None:  # a bad parameter is said before the file is read
        await running(request).sessions.repo_root(repo_root)
    if modified_at is not None:
        modified_at = checked_time(modified_at, "modified_at")
    sessions = running(request).sessions
    limit = configured(request).settings.max_import_bytes
    with await asyncio.to_thread(sessions.spool) as spool:
        size = await _spooled(request, spool, limit)  # (its reader checks each line)
        result = await sessions.import_stream(
            spool, format=format, repo_root=repo_root, modified_at=modified_at
        )
    if path is not None and modified_at is not None:
        ids = [s["id"] for s in result["sessions"]]
        await sessions.remember_file(path, size, modified_at, ids)
    return json_response(result, 201 if result["imported"] else 200)


@router.post(
    "/sessions/import/known",
    operation_id="sessions-import-known",
    response_model=KnownFilesOut,
    responses=ERRORS,
)
async def known_files(request: Request, body: KnownFilesIn) -> Response:
    """Which of these files were imported (with `path`) as they are now, their sessions
    still here: a tree imported again (after an interruption, say) sends only the rest."""
    files = [f.model_dump() for f in body.files]
    known = await running(request).sessions.known_files(files)
    return json_response({"known": known})


async def _spooled(request: Request, spool: BinaryIO, limit: int) -> int:
    """The body, as it arrives, into ``spool`` (a file: it may be larger than memory);
    how many bytes it was."""
    size = held = 0
    pending: list[bytes] = []
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(
                f"the file is longer; the limit is {limit} bytes (ASTER_MAX_IMPORT_BYTES)"
            )
        pending.append(chunk)
        held += len(chunk)
        if held >= SPOOL_CHUNK:
            await asyncio.to_thread(_write_out, spool, pending)
            pending, held = [], 0
    await asyncio.to_thread(_write_out, spool, pending)
    return size


SPOOL_CHUNK = 1 << 20


def _write_out(spool: BinaryIO, chunks: list[bytes]) -> None:
    try:
        spool.writelines(chunks)
        spool.flush()
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise InsufficientStorage("the disk is full: the file was not imported") from None
        raise


@router.post(
    "/sessions/prune", operation_id="sessions-prune", response_model=PruneOut, responses=ERRORS
)
async def prune_sessions(request: Request, body: PruneIn) -> Response:
    """Move old sessions to trash (dry run by default) and purge old trash."""
    if (
        body.older_than_days is None
        and body.keep_latest is None
        and body.purge_trash_older_than_days is None
    ):
        raise Invalid(
            "say what to prune: older_than_days, keep_latest or purge_trash_older_than_days"
        )
    result = await running(request).sessions.prune(
        older_than_days=body.older_than_days,
        keep_latest=body.keep_latest,
        dry_run=body.dry_run,
        purge_trash_older_than_days=body.purge_trash_older_than_days,
    )
    return json_response(result)


@router.post(
    "/sessions/compress",
    operation_id="sessions-compress",
    response_model=CompressOut,
    responses=ERRORS,
)
async def compress_sessions(request: Request, body: CompressIn) -> Response:
    """Keep sessions with no event for a while compressed (`<ulid>.jsonl.zst`): a dry run
    by default, saying what it would free. The daemon does this itself every few hours
    for sessions idle `ASTER_COMPRESS_AFTER_DAYS` (0: never)."""
    result = await running(request).sessions.compress_cold(
        older_than_days=body.older_than_days, dry_run=body.dry_run
    )
    return json_response(result)


@router.post(
    "/sessions/{session_id:session}/events",
    status_code=201,
    operation_id="sessions-append",
    response_model=AppendOut,
    responses={**ERRORS, 200: REPLAYED},
    openapi_extra=APPEND_DOC,
)
async def append_events(request: Request, session_id: str) -> Response:
    """Append one event, a JSON array, or `{"events": [...]}`; all or nothing; 2xx means durable.

    `Idempotency-Key` makes a retry safe; `If-Match: "<seq>"` applies only at that last seq.
    The daemon serves this route through `fastpath.FastPath`; this handler is the same
    code behind the documented route.
    """
    result = await handle_append(
        running(request).sessions, session_id, request.headers, await request.body()
    )
    return Response(
        appended_body(result),
        status_code=appended_status(result),
        media_type="application/json",
        headers=appended_headers(result),
    )
