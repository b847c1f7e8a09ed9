"""Which sessions are being written now: a session is running while appends of the
present come to it, and for ``window`` after the last one. An append is of the present
when it was written here (through the API, or by another program into the home), or
when its events carry a time within the window (a followed tool's file being written, a
team's copy); an import of old history, or of lines with no time, is not. Kept in
memory only: after a restart, a session is running again at its next append."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from ...storage.summary import moment_of
from .parts import Appended

FORGET_PAST = 1024  # sessions remembered before those past their window are forgotten


class Activity:
    """Told of every durable append (a listener of the sessions service); says which
    sessions had one within the window, and when."""

    def __init__(self, window_seconds: float, clock: Callable[[], datetime]) -> None:
        self.window = timedelta(seconds=window_seconds)
        self._clock = clock
        self._last: dict[str, datetime] = {}

    def appended(self, notice: Appended) -> None:
        now = self._clock()
        if (notice.source is None and notice.machine is None) or self._of_now(notice.events, now):
            self._last[notice.session_id] = now
            if len(self._last) > FORGET_PAST:  # never asked: what ran before goes
                self._forget(now)

    def running(self) -> dict[str, datetime]:
        """Each running session's last append, the latest first; the others forgotten."""
        self._forget(self._clock())
        return dict(sorted(self._last.items(), key=lambda item: item[1], reverse=True))

    def __len__(self) -> int:
        """How many sessions it remembers (running, or not yet forgotten)."""
        return len(self._last)

    def _forget(self, now: datetime) -> None:
        since = now - self.window
        for sid in [sid for sid, at in self._last.items() if at < since]:
            del self._last[sid]

    def _of_now(self, events: list[dict[str, Any]] | None, now: datetime) -> bool:
        # the latest as text (the importers write UTC with milliseconds): one parse, not
        # one per event of a large import
        latest = moment_of(max((str(e["ts"]) for e in events or () if e.get("ts")), default=""))
        return latest is not None and abs(now - latest) <= self.window
