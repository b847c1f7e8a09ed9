"""Times as other tools write them, read into this store's form.

A source time is whatever ISO 8601 the tool wrote (``Z`` or an offset, with or without
fractions, naive taken as UTC). What comes out is RFC 3339 UTC with milliseconds, or
nothing: a time that cannot be read, or that falls outside the years 1000 to 2999 in
UTC (the years an event's time may name), is no time at all rather than a wrong one.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def moment(value: Any) -> datetime | None:
    """The instant a source time names, or None if it names none."""
    if not isinstance(value, str):
        return None
    try:
        found = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    found = found if found.tzinfo else found.replace(tzinfo=UTC)
    try:
        found.astimezone(UTC)
    except OverflowError:
        return None
    return found


def timestamp(value: Any) -> str | None:
    """An RFC 3339 UTC timestamp with milliseconds, from whatever the source wrote."""
    found = moment(value)
    if found is None:
        return None
    try:
        found = found.astimezone(UTC)
    except OverflowError:  # before year 1 or after 9999 in UTC: not a time to keep
        return None
    if not 1000 <= found.year <= 2999:
        return None
    return found.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def fill_times(events: list[dict[str, Any]], fallback: str | None = None) -> None:
    """A record without a time (a summary line) takes its neighbour's, so the session
    keeps its own dates instead of the moment of the import; a file with no times at
    all takes ``fallback`` (its modification time), when given."""
    known = [e.get("ts") for e in events]
    if not any(known):
        for event in events if fallback else ():
            event["ts"] = fallback
        return
    previous = next(t for t in known if t)
    for event in events:
        if event.get("ts"):
            previous = event["ts"]
        else:
            event["ts"] = previous
