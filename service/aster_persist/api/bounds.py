"""Time bounds in query strings (`since`, `until`): a date or an RFC 3339 time, turned
into the server's own time text so that stored times compare with them as text."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Annotated

from fastapi import Query

from ..errors import Invalid
from ..schemas.clock import format_ts

FIRST = "0001-01-01T00:00:00.000Z"
LAST = "9999-12-31T23:59:59.999Z"
# A query parameter holding one: a date (whole days) or an RFC 3339 time.
TimeBound = Annotated[
    str | None,
    Query(
        max_length=40,
        json_schema_extra={"format": "date-time"},  # a date is taken too
        description="A date (2026-12-01: whole days) or an RFC 3339 time.",
    ),
]


def time_bound(value: str | None, name: str, *, end: bool = False) -> str | None:
    """``value`` as a stored time: a date is its first moment, or, as an ``end``
    (exclusive), the first moment of the day after, so ``until=2026-12-01`` takes that
    whole day in. A time beyond what can be written is the first or last there is;
    anything else (an empty value too) is a 422 naming ``name``."""
    if value is None:
        return None
    text = value.strip().upper()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            if end:
                if day == date.max:
                    return LAST
                day += timedelta(days=1)
            return f"{day.isoformat()}T00:00:00.000Z"
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise Invalid(
            f"{name} must be a date (2026-12-01) or an RFC 3339 time, not {value[:40]!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return format_ts(moment.astimezone(UTC))
    except OverflowError:  # a valid time whose UTC is before year 1 or after 9999
        return FIRST if moment.year == 1 else LAST


# A query parameter holding a day (UTC): stats count whole days.
DayBound = Annotated[
    str | None,
    Query(max_length=10, json_schema_extra={"format": "date"}, description="A day: 2026-12-01."),
]


def day_bound(value: str | None, name: str) -> date | None:
    """``value`` as a day; anything but ``YYYY-MM-DD`` is a 422 naming ``name``."""
    if value is None:
        return None
    try:
        if len(value) != 10:
            raise ValueError(value)
        return date.fromisoformat(value)
    except ValueError:
        raise Invalid(f"{name} must be a day (2026-12-01), not {value[:40]!r}") from None
