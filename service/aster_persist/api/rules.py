"""What a request's names and headers must be, written once: the check each route runs
and the pattern the OpenAPI document shows for it are the same regex, so a request valid
by the document is one the server takes (unless the store's state says otherwise).

The stores check names (``check_session_id``, ``normalize_repo_root``, ``check_name``);
this module gathers their patterns, parses the two forms of ``If-Match``, and keeps
``{session_id}`` off the words of the routes beside it.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Header
from pydantic import TypeAdapter, ValidationError
from starlette.convertors import Convertor, register_url_convertor

from ..errors import Invalid
from ..schemas import cursors
from ..schemas.conditions import ANY, SeqCondition, TagCondition
from ..schemas.events import TIMESTAMP, Timestamp
from ..schemas.memory import NOT_SPACE
from ..schemas.names import NAME_RE, REPO_ROOT_RE, ULID_RE

# The request headers routes read, named as RFC 9110 and the README write them: a client
# generated from the document takes each name as it is declared (``If-Match``, never
# ``if-match``); the server reads them in any case, as HTTP says.
IfMatch = Annotated[str | None, Header(alias="If-Match")]
IfNoneMatch = Annotated[str | None, Header(alias="If-None-Match")]
LastEventId = Annotated[str | None, Header(alias="Last-Event-ID")]

# If-Match as RFC 9110 writes it: "*", or entity tags (each maybe weak, W/) separated
# by commas. A well-formed tag that is not the current version is 412; only a header of
# another form is 422.
ENTITY_TAG = r'(?:W/)?"[\x21\x23-\x7e\x80-\xff]*"'
IF_MATCH_RE = re.compile(rf"^[ \t]*(?:\*|{ENTITY_TAG}(?:[ \t]*,[ \t]*(?:{ENTITY_TAG})?)*)[ \t]*$")
_TAG = re.compile(r'(W/)?"([^"]*)"')
_SEQ = re.compile(r"[0-9]{1,18}")

# The literal paths beside /v1/sessions/{session_id}: a session id never matches them
# (it is a ULID, in upper case), and with them kept out of the session routes, a method
# those paths do not serve is a 405 that lists the ones they do.
SESSION_SIBLINGS = ("import", "latest", "prune", "compress", "facets", "running")


class SessionSegment(Convertor[str]):
    """One path segment that is not the name of a route beside the session routes."""

    regex = "(?!(?:" + "|".join(SESSION_SIBLINGS) + ")(?:/|$))[^/]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("session", SessionSegment())


def parse_seq_match(value: str | None) -> SeqCondition:
    """A session's ``If-Match``: the seqs its strong entity tags name (its ETag is its
    last seq, quoted: ``"12"``); ``None`` for none or ``*``."""
    tags = _strong_tags(value)
    return None if tags is None else frozenset(int(t) for t in tags if _SEQ.fullmatch(t))


def parse_etag_match(value: str | None) -> TagCondition:
    """A memory file's ``If-Match``: the ETags its strong entity tags name, quoted as an
    ETag is; ``ANY`` for ``*`` (the file must exist), ``None`` for no header."""
    tags = _strong_tags(value)
    if tags is None:
        return None if value is None else ANY
    return frozenset(f'"{t}"' for t in tags)


def _strong_tags(value: str | None) -> list[str] | None:
    """The opaque parts of the strong entity tags of an ``If-Match`` (a weak tag never
    matches in the strong comparison a write needs); ``None`` when there is no header or
    it is ``*`` (any current version: the resource exists, or the write answers 404).
    A header of no such form is refused."""
    if value is None:
        return None
    if IF_MATCH_RE.match(value) is None:
        raise Invalid(
            'If-Match must be "*" or entity tags in double quotes, as an ETag reads '
            f'(like "12"), got {value[:40]!r}'
        )
    if value.strip() == "*":
        return None
    return [opaque for weak, opaque in _TAG.findall(value) if not weak]


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
IF_MATCH: dict[str, str] = {"sessions": IF_MATCH_RE.pattern, "memory": IF_MATCH_RE.pattern}
# What a stream resumes after, by operation id and parameter: a journal entry id, or a seq.
RESUME: dict[tuple[str, str], str] = {
    ("events-stream", "after"): ULID_RE.pattern,
    ("events-stream", "last-event-id"): ULID_RE.pattern,
    ("sessions-events-stream", "last-event-id"): cursors.SEQ.pattern,
}
