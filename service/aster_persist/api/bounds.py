"""Time bounds in query strings (`since`, `until`): a date or an RFC 3339 time, turned
into the server's own time text so that stored times compare with them as text."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from ..errors import Invalid
from ..storage.transcripts import format_ts


def time_bound(value: str | None, name: str, *, end: bool = False) -> str | None:
    """``value`` as a stored time: a date is its first moment, or, as an ``end``
    (exclusive), the first moment of the day after, so ``until=2026-12-01`` takes that
    whole day in. Anything else is a 422 naming ``name``."""
    if value is None:
        return None
    text = value.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text) + timedelta(days=1 if end else 0)
            return f"{day.isoformat()}T00:00:00.000Z"
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except (ValueError, OverflowError):
        raise Invalid(
            f"{name} must be a date (2026-12-01) or an RFC 3339 time, not {value[:40]!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return format_ts(moment.astimezone(UTC))
