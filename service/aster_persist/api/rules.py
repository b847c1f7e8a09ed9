"""What a request's names and headers must be, written once: the check each route runs
and the pattern the OpenAPI document shows for it are the same regex, so a request valid
by the document is one the server takes (unless the store's state says otherwise).

The stores check names (``check_session_id``, ``normalize_repo_root``, ``check_name``);
this module gathers their patterns, parses the two forms of ``If-Match``, and keeps
``{session_id}`` off the words of the routes beside it.
"""

from __future__ import annotations

import re

from pydantic import TypeAdapter, ValidationError
from starlette.convertors import Convertor, register_url_convertor

from ..errors import Invalid
from ..schemas import cursors
from ..schemas.events import TIMESTAMP, Timestamp
from ..schemas.memory import NOT_SPACE
from ..storage.home import REPO_ROOT_RE, ULID_RE
from ..storage.memory.names import NAME_RE

SEQ_MATCH = re.compile(r'^\s*(W/)?"*([0-9]{1,18})"*\s*$')
ETAG_MATCH = re.compile(r'^\s*(W/)?"?([0-9a-f]{64})"?\s*$')

# The literal paths beside /v1/sessions/{session_id}: a session id never matches them
# (it is a ULID, in upper case), and with them kept out of the session routes, a method
# those paths do not serve is a 405 that lists the ones they do.
SESSION_SIBLINGS = ("import", "latest", "prune", "facets")


class SessionSegment(Convertor[str]):
    """One path segment that is not the name of a route beside the session routes."""

    regex = "(?!(?:" + "|".join(SESSION_SIBLINGS) + ")(?:/|$))[^/]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("session", SessionSegment())


def parse_seq_match(value: str | None) -> int | None:
    """A session's ``If-Match``: its last seq, quoted as its ETag is (``"12"``)."""
    if value is None:
        return None
    match = SEQ_MATCH.match(value)
    if match is None:
        raise Invalid(f'If-Match must be a quoted seq like "12", got {value[:40]!r}')
    return int(match[2])


def parse_etag_match(value: str | None) -> str | None:
    """A memory file's ``If-Match``: the ETag it was read with, a SHA-256 in quotes (or
    without them, as the session's seq may be sent)."""
    if value is None:
        return None
    match = ETAG_MATCH.match(value)
    if match is None:
        raise Invalid(
            f"If-Match must be the ETag a read gave: 64 hex digits in quotes, got {value[:40]!r}"
        )
    return f'"{match[2]}"'


def checked_time(value: str, name: str) -> str:
    """A time a request names, as an event's time is checked (RFC 3339, a calendar day)."""
    try:
        return str(_TIME.validate_python(value))
    except ValidationError:
        raise Invalid(f"{name} must be an RFC 3339 time, like 2026-01-02T03:04:05Z") from None


_TIME: TypeAdapter[str] = TypeAdapter(Timestamp)

# Parameter name → pattern, wherever the parameter is (path, query or body).
PATTERNS: dict[str, str] = {
    "modified_at": TIMESTAMP,
    "session_id": ULID_RE.pattern,
    "parent_id": ULID_RE.pattern,
    "entry_id": ULID_RE.pattern,
    "repo_root": REPO_ROOT_RE.pattern,
}
BLOCK_NAME = NAME_RE.pattern
# A request body's property → pattern (``Component.property`` for one body's only).
BODY_PATTERNS: dict[str, str] = {
    "repo_root": REPO_ROOT_RE.pattern,
    "session_id": ULID_RE.pattern,
    "supersedes": BLOCK_NAME,
    "conflicts_with": BLOCK_NAME,
    "BlockIn.name": BLOCK_NAME,
    "SessionIn.id": ULID_RE.pattern,
    "note": NOT_SPACE,  # a note of nothing but white space is empty
}
# An operation's cursor, by operation id.
CURSORS: dict[str, str] = {
    "sessions-list": cursors.LISTING.pattern,
    "projects-list": cursors.LISTING.pattern,
    "memory-blocks-list": cursors.LISTING.pattern,
    "search": cursors.RANKED.pattern,
    "sessions-events": cursors.SEQ.pattern,
    "journal-list": ULID_RE.pattern,
}
# An operation's If-Match, by the first part of its operation id.
IF_MATCH: dict[str, str] = {"sessions": SEQ_MATCH.pattern, "memory": ETAG_MATCH.pattern}
# What a stream resumes after, by operation id and parameter: a journal entry id, or a seq.
RESUME: dict[tuple[str, str], str] = {
    ("events-stream", "after"): ULID_RE.pattern,
    ("events-stream", "last-event-id"): ULID_RE.pattern,
    ("sessions-events-stream", "last-event-id"): cursors.SEQ.pattern,
}
