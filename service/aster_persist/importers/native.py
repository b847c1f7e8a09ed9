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

from typing import Any

from .reader import Conversation, Format, Head, ImportProblem
from .records import Events

NAME = "native"

_RENUMBERED = ("seq", "batch_size")  # assigned again; the idempotency key is kept
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


class Reader:
    """An export read one line at a time (``importers.lines`` drives it)."""

    def __init__(self) -> None:
        self.out = Events()
        self.header: dict[str, Any] | None = None

    def feed(self, record: dict[str, Any]) -> None:
        if self.header is None:
            if record.get("type") != "session":
                raise ImportProblem("line 1: a native transcript starts with its session header")
            self.header = record
            return
        # the key stays on the event until ``keys`` takes it off
        self.out.add({k: v for k, v in record.items() if k not in _RENUMBERED})

    def settle(self, events: list[dict[str, Any]]) -> None:
        pass

    def keys(self, events: list[dict[str, Any]]) -> list[str | None] | None:
        """Each event's own idempotency key, taken off it."""
        return [event.pop("idempotency_key", None) for event in events]

    def conversation(self) -> tuple[Conversation, str | None]:
        header = self.header or {}
        conversation = Conversation(
            fingerprint=f"{NAME}:{header.get('id')}",
            events=[],
            created_at=header.get("created_at"),
            cwd=header.get("cwd"),
            model=header.get("model"),
            title=header.get("title"),
            session_id=str(header.get("id") or "") or None,
            source={
                "repo_root": header.get("repo_root"),
                **{k: v for k, v in header.items() if k not in _HEADER_KEYS},
            },
        )
        return conversation, None


FORMAT = Format(NAME, "this store's own export (JSON Lines, header first)", detects, lines=Reader)
