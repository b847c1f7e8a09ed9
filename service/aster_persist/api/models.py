"""Helpers the routers share for their bodies: the models are in ``schemas/``.

Request bodies are closed: a field a body does not have is refused (422 naming it).
Events are not (a transcript keeps what the service does not know), and neither are a
session's own ``x_…`` fields, kept in its header as verbatim as an event's."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from ..errors import Invalid
from ..schemas.cursors import BadCursor, listing_cursor, read_listing_cursor
from ..schemas.sessions import (
    LIST_LIMIT,
    AppendBody,
    AppendOut,
    ChatMessages,
    CompressIn,
    CompressOut,
    EventPage,
    EventsIn,
    ImportedSession,
    ImportOut,
    KnownFilesIn,
    KnownFilesOut,
    Problem,
    Project,
    ProjectList,
    PrunedSession,
    PruneIn,
    PruneOut,
    RenameIn,
    RunningSessions,
    SessionDetail,
    SessionHeader,
    SessionIn,
    SessionPage,
    SessionSummary,
)
from ..secrets.redact import redact_text

if TYPE_CHECKING:
    from ..storage.summary import SessionInfo

T = TypeVar("T")

__all__ = [
    "LIST_LIMIT",
    "AppendBody",
    "AppendOut",
    "ChatMessages",
    "CompressIn",
    "CompressOut",
    "EventPage",
    "EventsIn",
    "ImportOut",
    "ImportedSession",
    "KnownFilesIn",
    "KnownFilesOut",
    "Problem",
    "Project",
    "ProjectList",
    "PruneIn",
    "PruneOut",
    "PrunedSession",
    "RenameIn",
    "RunningSessions",
    "SessionDetail",
    "SessionHeader",
    "SessionIn",
    "SessionPage",
    "SessionSummary",
    "page_of",
    "summary_of",
]


def summary_of(info: SessionInfo, parent: tuple[str, str | None] | None = None) -> SessionSummary:
    """A session's summary on the wire, from the catalog's row (and, for a session
    another started, that one's id and call); a secret in its title redacted."""
    stats = info.stats
    return SessionSummary(
        id=info.id,
        project=info.slug,
        repo_root=info.repo_root,
        title=redact_text(info.title)[0] if info.title else info.title,
        title_source=info.title_source,  # type: ignore[arg-type]
        created_at=info.created_at,
        updated_at=info.updated_at,
        events=info.events,
        last_seq=info.last_seq,
        bytes=info.offset,
        state=info.state,  # type: ignore[arg-type]
        source_tool=info.source_tool,
        git_branch=info.git_branch,
        parent_id=parent[0] if parent else None,
        parent_tool_call_id=parent[1] if parent else None,
        turns=stats.turns,
        tool_calls=stats.tool_calls,
        tool_errors=stats.tool_errors,
        tokens_in=stats.tokens_in,
        tokens_out=stats.tokens_out,
        models=stats.models,
        duration_ms=info.duration_ms,
        timed=not info.undated,
        alias=info.alias,
        secrets=info.secrets,
        machine=info.machine,
        project_key=info.project_key,
        read_only=info.machine is not None,
    )


def page_of(
    items: list[T], key: Callable[[T], tuple[str, str]], limit: int, cursor: str | None
) -> tuple[list[T], str | None]:
    """The page of ``items`` after ``cursor``, in descending order of ``key`` (unique per
    item), and the cursor of the next page (None after the last)."""
    ordered = sorted(items, key=key, reverse=True)
    if cursor is not None:
        try:
            after = read_listing_cursor(cursor)
        except BadCursor as exc:
            raise Invalid(str(exc)) from None
        ordered = [item for item in ordered if key(item) < after]
    page = ordered[:limit]
    return page, listing_cursor(*key(page[-1])) if len(ordered) > limit else None
