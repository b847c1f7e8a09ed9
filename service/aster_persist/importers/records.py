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


def documents(data: bytes) -> list[Any]:
    """A file's records: one JSON document (an array of them, or one), else JSON Lines."""
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        return json_lines(data)
    return document if isinstance(document, list) else [document]


def message(role: Any, text: str, ts: str | None, roles: tuple[str, ...]) -> dict[str, Any]:
    """A message event; a role this store has no name for is ``system``, keeping its
    own under ``x_role``."""
    event: dict[str, Any] = {
        "type": "message",
        "role": role if role in roles else "system",
        "content": text,
        "ts": ts,
    }
    if role not in roles:
        event["x_role"] = role
    return event


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


def by_source(conversation: Any, tool: str, source_id: str) -> None:
    """Key a conversation by its source (the tool and the source's own session id) and
    each event by the record it came from, so that an import of the same source again,
    grown since, finds the session and appends only what it does not hold.

    An event's record is its ``x_source`` ``last_uuid`` or ``uuid`` (Claude Code's
    records), its ``node`` (ChatGPT's), else its place among the events: a source is
    written by appending, so a place keeps naming the same record."""
    conversation.fingerprint = f"{tool}:source:{source_id}"
    keys: list[str | None] = []
    for n, event in enumerate(conversation.events):
        found = event.get("x_source") if isinstance(event.get("x_source"), dict) else {}
        record = found.get("last_uuid") or found.get("uuid") or found.get("node") or f"#{n}"
        keys.append(f"{tool}:{source_id}:{record}"[:200])
    seen: set[str | None] = set()
    for n, key in enumerate(keys):  # one record made several events: number them
        if key in seen:
            keys[n] = f"{key}/{n}"[:200]
        seen.add(keys[n])
    conversation.keys = keys


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
