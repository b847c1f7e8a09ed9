"""Reading a followed stream (``text/event-stream``): the lines of the stream become
journal entries (``event: journal``) and plain dicts (notices, session events), and the
id of the last item read is kept, so a reconnection resumes with ``Last-Event-ID`` right
after it: nothing missed, nothing repeated."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import httpx
import orjson

from ..schemas.journal import JournalEntry


class Feed:
    """The state of one followed stream: where to resume, and the event being read."""

    def __init__(self, path: str, after: str | None, filters: dict[str, Any]) -> None:
        self.path = path
        self.last = after if after not in (None, "0") else None
        self.filters = {k: v for k, v in filters.items() if v}
        self.fields: dict[str, str] = {}

    def request(self) -> dict[str, Any]:
        self.fields = {}
        headers = {"Last-Event-ID": self.last} if self.last else {}
        return {
            "method": "GET",
            "url": self.path,
            "params": self.filters,
            "headers": headers,
            "timeout": httpx.Timeout(10, read=None),
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
