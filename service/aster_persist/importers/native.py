"""``native``: this store's own export (``GET /v1/sessions/{id}/export``), read back.

The file is a session's JSON Lines transcript: line 1 the session header (``type``
``session``, with ``v`` and ``repo_root``), then one event per line. The reader
guarantees the export comes back identical: the session keeps its id (the fingerprint
is that id), its header and the header fields this store does not name, and each event
its idempotency key (``keys``), so an append retried after the import is still known.
``seq`` and ``batch_size`` are taken off the events: the import assigns them again, as
an append would.
"""

from __future__ import annotations

from .reader import Conversation, Format, Head, ImportProblem
from .records import json_lines

NAME = "native"

_SERVER_KEYS = ("seq", "idempotency_key", "batch_size")
_HEADER_KEYS = (
    "type",
    "seq",
    "id",
    "v",
    "created_at",
    "cwd",
    "repo_root",
    "model",
    "aster_version",
    "title",
)


def detects(head: Head) -> bool:
    """Line 1 is a session header of this store."""
    first = head.first
    return first.get("type") == "session" and "v" in first and "repo_root" in first


def read(data: bytes) -> list[Conversation]:
    """The one session an export holds."""
    records = json_lines(data)
    header = records[0]
    if header.get("type") != "session":
        raise ImportProblem("line 1: a native transcript starts with its session header")
    events = [{k: v for k, v in r.items() if k not in _SERVER_KEYS} for r in records[1:]]
    return [
        Conversation(
            fingerprint=f"{NAME}:{header.get('id')}",
            events=events,
            created_at=header.get("created_at"),
            cwd=header.get("cwd"),
            model=header.get("model"),
            title=header.get("title"),
            session_id=str(header.get("id") or "") or None,
            keys=[r.get("idempotency_key") for r in records[1:]],
            source={
                "repo_root": header.get("repo_root"),
                **{k: v for k, v in header.items() if k not in _HEADER_KEYS},
            },
        )
    ]


FORMAT = Format(NAME, "this store's own export (JSON Lines, header first)", detects, read)
