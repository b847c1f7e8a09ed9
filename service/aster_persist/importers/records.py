"""What the readers share: source records from JSON Lines, fingerprints of what they
came from, and the events built from them.

Nothing in a source is dropped silently: a record with no equivalent in this store is
kept (``Events.keep``) and travels under ``x_source.records`` on the next event, or on
the last one when none follows (a summary that folds nothing when there is no event at
all).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from ..schemas.numbers import too_big
from ..schemas.strict import check_document, check_line
from .reader import ImportProblem


def documents(data: bytes) -> list[Any]:
    """A file's records: one JSON document (an array of them, or one), else JSON Lines."""
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        return json_lines(data)
    refuse_too_big(data)
    check_document(data)  # no key twice in an object, not too deep
    return document if isinstance(document, list) else [document]


def refuse_too_big(data: bytes, line: int = 0) -> None:
    """Raise ImportProblem naming the line of an integer past 64 bits in ``data`` (a
    line of a file when ``line`` is its number; else a whole document), as an append
    refuses one."""
    found = too_big(data)
    if found is not None:
        at, text = found
        raise ImportProblem(f"line {line or at}: the integer {text[:40]} does not fit in 64 bits")


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
    return [record for _number, record in numbered_records(data.splitlines())]


def numbered_records(lines: Iterable[bytes]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each non-blank line's number and JSON object, one at a time; raise ImportProblem
    naming the first bad line, or saying there was none at all."""
    found = False
    for number, line in enumerate(lines, 1):
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
        refuse_too_big(line, number)
        check_line(line, record, number)  # no key twice in an object, not too deep
        found = True
        yield number, record
    if not found:
        raise ImportProblem("the file holds no records")


def fingerprint(name: str, source: bytes) -> str:
    """What a conversation came from: its format and the SHA-256 of its bytes."""
    return f"{name}:{hashlib.sha256(source).hexdigest()}"


def earlier_keys(event: dict[str, Any], key: str | None) -> list[str]:
    """The keys ``event`` had when its source ended at an earlier one of the records it
    is made of (``x_source.uuids``: a turn written over several records and read before
    its last one was), latest first; none for an event made of one record."""
    source = event.get("x_source")
    made_of = source.get("uuids") if isinstance(source, dict) else None
    if not key or not isinstance(made_of, list) or len(made_of) < 2:
        return []
    last = made_of[-1]
    if not isinstance(last, str) or not key.endswith(last):
        return []
    prefix = key[: -len(last)]
    return [f"{prefix}{uuid}"[:200] for uuid in reversed(made_of[:-1]) if isinstance(uuid, str)]


class SourceKeys:
    """Each event's key by the record it came from, worked out one event at a time in
    the order of the file: ``tool:source:record``, the record being the event's
    ``x_source`` ``last_uuid`` or ``uuid`` (Claude Code's records), its ``node``
    (ChatGPT's), else its place among the events (a source is written by appending, so
    a place keeps naming the same record); one record that made several events (they
    come together) numbers them."""

    SEEN = 1024  # the events of one record come together: the latest keys are enough

    def __init__(self, tool: str, source_id: str) -> None:
        self.prefix = f"{tool}:{source_id}:" if tool else ""  # no tool: the records' part
        self.n = 0
        self.seen: dict[str, None] = {}  # the latest keys, oldest first

    def of(self, events: Iterable[dict[str, Any]]) -> list[str | None]:
        keys: list[str | None] = []
        for event in events:
            kept = event.get("x_source")
            found: dict[str, Any] = kept if isinstance(kept, dict) else {}
            record = (
                found.get("last_uuid") or found.get("uuid") or found.get("node") or f"#{self.n}"
            )
            key = f"{self.prefix}{record}"[:200]
            if key in self.seen:
                key = f"{key}/{self.n}"[:200]
            self.seen[key] = None
            if len(self.seen) > self.SEEN:
                del self.seen[next(iter(self.seen))]
            keys.append(key)
            self.n += 1
        return keys


def by_source(conversation: Any, tool: str, source_id: str) -> None:
    """Key a conversation by its source (the tool and the source's own session id) and
    each event by the record it came from, so that an import of the same source again,
    grown since, finds the session and appends only what it does not hold.

    An event's record is its ``x_source`` ``last_uuid`` or ``uuid`` (Claude Code's
    records), its ``node`` (ChatGPT's), else its place among the events: a source is
    written by appending, so a place keeps naming the same record."""
    conversation.fingerprint = f"{tool}:source:{source_id}"
    conversation.keys = SourceKeys(tool, source_id).of(conversation.events)


class Events:
    """Events being built, with source records waiting for the next event to carry them."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []  # those not taken yet
        self.pending: list[Any] = []
        self.count = 0  # events added, those taken included
        self.first_ts: str | None = None  # the first event's time

    def add(self, event: dict[str, Any]) -> dict[str, Any]:
        """Append ``event``, carrying the records kept since the last one."""
        if self.pending:
            event.setdefault("x_source", {})["records"] = self.pending
            self.pending = []
        if not self.count:
            self.first_ts = event.get("ts")
        self.events.append(event)
        self.count += 1
        return event

    def take(self, hold: int) -> list[dict[str, Any]]:
        """The events but the last ``hold`` (which a later record may still change)."""
        if len(self.events) <= hold:
            return []
        done, self.events = self.events[:-hold], self.events[-hold:]
        return done

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
