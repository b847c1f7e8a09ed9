"""Reading a followed stream (``text/event-stream``): the lines of the stream become
journal entries (``event: journal``) and plain dicts (notices, session events), and the
id of the last item read is kept, so a reconnection resumes with ``Last-Event-ID`` right
after it: nothing missed, nothing repeated. While nothing answers, it tries again with
a growing pause, and gives up (``DaemonUnavailable``) once the daemon has been out of
reach for ``give_up_after`` seconds in a row."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

import httpx
import orjson

from ..schemas.journal import JournalEntry
from .errors import DaemonUnavailable

MAX_PAUSE = 10.0  # seconds between two tries at most
READ_WAIT = 45.0  # seconds of silence that mean a dead stream (the daemon pings every 15)
BUSY = 503  # too many followers or requests at once: tried again, like a drop


class Feed:
    """The state of one followed stream: where to resume, and the event being read."""

    def __init__(
        self,
        path: str,
        after: str | None,
        filters: dict[str, Any],
        *,
        retry: float = 0.5,
        give_up_after: float | None = 60.0,
    ) -> None:
        self.path = path
        self.last = after if after not in (None, "0") else None
        self.filters = {k: v for k, v in filters.items() if v}
        self.fields: dict[str, str] = {}
        self.retry, self.give_up_after = retry, give_up_after
        self.pause = retry
        self.out_since: float | None = None  # when the daemon stopped answering

    def connected(self) -> None:
        """The daemon answered: the next drop starts the pauses over."""
        self.pause, self.out_since = self.retry, None

    def dropped(self, base: httpx.URL, exc: Exception | None) -> float:
        """How long to wait before trying again, the pause doubling up to ``MAX_PAUSE``;
        ``DaemonUnavailable`` once nothing has answered for ``give_up_after`` seconds."""
        now = time.monotonic()
        if exc is None:  # the stream ended after a connection: try again at once
            self.connected()
            return self.retry
        if self.out_since is None:
            self.out_since = now
        waited = now - self.out_since
        if self.give_up_after is not None and waited >= self.give_up_after:
            raise DaemonUnavailable(
                f"the daemon at {base} has not answered for {waited:.0f} s ({exc}); "
                "start it with `aster-persist serve`"
            )
        pause, self.pause = self.pause, min(self.pause * 2, MAX_PAUSE)
        if self.give_up_after is not None:
            pause = min(pause, self.out_since + self.give_up_after - now)
        return max(pause, 0.0)

    def request(self) -> dict[str, Any]:
        self.fields = {}
        headers = {"Last-Event-ID": self.last} if self.last else {}
        return {
            "method": "GET",
            "url": self.path,
            "params": self.filters,
            "headers": headers,
            "timeout": httpx.Timeout(10, read=READ_WAIT),
        }

    def take(self, lines: Iterable[str]) -> Iterator[JournalEntry | dict[str, Any]]:
        """The items completed by these lines of the stream."""
        for line in lines:
            if line:
                if not line.startswith(":"):
                    key, _, value = line.partition(":")
                    self.fields[key] = value[1:] if value.startswith(" ") else value
                continue
            fields, self.fields = self.fields, {}
            if "data" not in fields:
                continue
            data = orjson.loads(fields["data"])
            if fields.get("id"):
                self.last = fields["id"]
            if fields.get("event") == "journal":
                yield JournalEntry.model_validate(data)
            else:
                yield data
