"""``native``: this store's own export (``GET /v1/sessions/{id}/export``), read back.

The file is a session's JSON Lines transcript: line 1 the session header (``type``
``session``, with ``v`` and ``repo_root``), then one event per line. The reader
guarantees the export comes back identical: the session keeps its id (the fingerprint
is that id), its header and the header fields this store does not name, and each event
its idempotency key (``keys``), so an append retried after the import is still known.
``seq`` is taken off the events, and the import assigns it again, as an append would;
the events are written again in the appends they were (``batch_size`` says which), so
the session exports byte for byte as it did.
"""

from __future__ import annotations

from typing import Any

from .reader import Conversation, Format, Head, ImportProblem
from .records import Events

NAME = "native"

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


MAX_KEY = 200  # an idempotency key's longest, as an append takes it
MAX_RUN = 4096  # the most events of one append kept together again


class _Appends(Events):
    """An export's events, handed on a whole append at a time: the first line of an
    append of several events says how many (``batch_size``), and the import writes
    them again as one append, so the session comes back as it was."""

    def __init__(self) -> None:
        super().__init__()
        self.ends: list[bool] = []  # whether each event held ends its append
        self.left = 0  # events still to come of the append under way

    def add(self, event: dict[str, Any]) -> dict[str, Any]:
        size = event.get("batch_size")
        if self.left == 0 and type(size) is int and 1 < size <= MAX_RUN:
            self.left = size  # (a larger one than an append could make is not kept)
        super().add(event)
        self.left = max(0, self.left - 1)
        self.ends.append(self.left == 0)
        return event

    def take(self, hold: int) -> list[dict[str, Any]]:
        cut = len(self.events) - hold
        while cut > 0 and not self.ends[cut - 1]:
            cut -= 1
        if cut <= 0:
            return []
        done, self.events, self.ends = self.events[:cut], self.events[cut:], self.ends[cut:]
        return done


class Reader:
    """An export read one line at a time (``importers.lines`` drives it)."""

    def __init__(self) -> None:
        self.out = _Appends()
        self.header: dict[str, Any] | None = None

    def feed(self, record: dict[str, Any]) -> None:
        if self.header is None:
            if record.get("type") != "session":
                raise ImportProblem("line 1: a native transcript starts with its session header")
            self.header = record
            return
        # the key and the append's size stay on the event until ``keys`` and ``runs``
        # take them off
        self.out.add({k: v for k, v in record.items() if k != "seq"})

    def settle(self, events: list[dict[str, Any]]) -> None:
        pass

    def keys(self, events: list[dict[str, Any]]) -> list[str | None] | None:
        """Each event's own idempotency key, taken off it (one an append could not have
        had is refused)."""
        keys = [event.pop("idempotency_key", None) for event in events]
        for key in keys:
            if key is not None and not (isinstance(key, str) and 0 < len(key) <= MAX_KEY):
                raise ImportProblem(
                    f"an event's idempotency_key is {str(key)[:40]!r}: a key is text of 1 to "
                    f"{MAX_KEY} characters"
                )
        return keys

    def runs(self, events: list[dict[str, Any]]) -> list[int] | None:
        """The appends the events were, as their lengths, each ``batch_size`` taken off."""
        out = []
        n = 0
        while n < len(events):
            size = events[n].get("batch_size")
            size = size if type(size) is int and 1 < size <= len(events) - n else 1
            for event in events[n : n + size]:
                event.pop("batch_size", None)
            out.append(size)
            n += size
        return out

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
