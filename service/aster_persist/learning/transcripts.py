"""What learning needs of the sessions: the one narrow interface the learner reads and
titles sessions through (``services.sessions.Sessions`` is the one in use)."""

from __future__ import annotations

from typing import Any, Protocol

from ..index.text import Query
from ..storage.summary import SessionInfo


class Transcripts(Protocol):
    """The sessions as learning reads and titles them."""

    def open_summary(self, session_id: str) -> tuple[int, SessionInfo] | None:
        """The bytes acknowledged and the summary of a session open for appends."""
        ...

    def read_span(self, session_id: str, start: int, end: int) -> tuple[list[dict[str, Any]], int]:
        """Acknowledged lines between two byte offsets (a worker thread)."""
        ...

    async def read(
        self, session_id: str, *, inline: bool = True
    ) -> tuple[list[dict[str, Any]], list[bytes], SessionInfo]:
        """A session's acknowledged lines, their bytes and its summary."""
        ...

    async def append(self, session_id: str, events: list[dict[str, Any]]) -> Any:
        """Append durably (a title the learner found)."""
        ...

    async def search_memory(
        self, query: Query, *, scopes: list[str], kinds: tuple[str, ...], k: int
    ) -> list[dict[str, Any]]:
        """Memory hits for ``query`` in ``scopes``."""
        ...
