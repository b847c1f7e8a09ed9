"""What the readers share: source records from JSON Lines, fingerprints of what they
came from, and the events built from them.

Nothing in a source is dropped silently: a record with no equivalent in this store is
kept (``Events.keep``) and travels under ``x_source.records`` on the next event, or on
the last one when none follows (a summary that folds nothing when there is no event at
all).
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from .reader import ImportProblem


def json_lines(data: bytes) -> list[dict[str, Any]]:
    """One JSON object per non-blank line; raise ImportProblem naming the first bad line."""
    records = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ImportProblem(
                f"line {number}: not JSON ({exc}); expected one JSON object per line"
            ) from None
        if not isinstance(record, dict):
            raise ImportProblem(
                f"line {number}: expected a JSON object, found {type(record).__name__}"
            )
        records.append(record)
    if not records:
        raise ImportProblem("the file holds no records")
    return records


def fingerprint(name: str, source: bytes) -> str:
    """What a conversation came from: its format and the SHA-256 of its bytes."""
    return f"{name}:{hashlib.sha256(source).hexdigest()}"


class Events:
    """Events being built, with source records waiting for the next event to carry them."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.pending: list[Any] = []

    def add(self, event: dict[str, Any]) -> dict[str, Any]:
        """Append ``event``, carrying the records kept since the last one."""
        if self.pending:
            event.setdefault("x_source", {})["records"] = self.pending
            self.pending = []
        self.events.append(event)
        return event

    def keep(self, record: Any) -> None:
        """Keep a record with no event of its own for the next event to carry."""
        self.pending.append(record)

    def done(self) -> list[dict[str, Any]]:
        """The events, the records still waiting put on the last one."""
        if self.pending:
            if self.events:
                self.events[-1].setdefault("x_source", {}).setdefault("records", []).extend(
                    self.pending
                )
            else:
                self.events.append(
                    {
                        "type": "summary",
                        "content": "(records with no message of their own)",
                        "through_seq": 0,
                        "x_source": {"records": self.pending},
                    }
                )
        return self.events
