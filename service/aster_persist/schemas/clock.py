"""The store's clock: what a clock is, and how a moment is written in a transcript.

Times are written in UTC with millisecond precision, so they sort as text.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


def format_ts(moment: datetime) -> str:
    """RFC 3339 UTC with millisecond precision: 2026-01-02T03:04:05.678Z."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
