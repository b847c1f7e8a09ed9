"""What the sessions service tells its listeners: one ``Appended`` per durable append
(the daemon's own, an import's, or one another program made), in the order they were
acknowledged, on the event loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Appended:
    """Events ``first_seq``..``last_seq`` of a session are durable.

    ``events`` are the events themselves when this daemon appended them (None when
    another program did); ``learn`` is whether learning may queue what they complete
    (an import of old history does not); ``source``, what an import brought them from. ``kinds``, the event types among them, is
    worked out only when a listener asks.
    """

    __slots__ = (
        "_kinds",
        "events",
        "first_seq",
        "last_seq",
        "learn",
        "scope",
        "session_id",
        "source",
    )

    def __init__(
        self,
        session_id: str,
        scope: str,
        first_seq: int,
        last_seq: int,
        *,
        events: list[dict[str, Any]] | None = None,
        kinds: list[str] | None = None,
        learn: bool = False,
        source: str | None = None,
    ) -> None:
        self.session_id = session_id
        self.scope = scope
        self.first_seq = first_seq
        self.last_seq = last_seq
        self.events = events
        self.learn = learn
        self.source = source
        self._kinds = kinds

    @property
    def kinds(self) -> list[str]:
        if self._kinds is None:
            self._kinds = sorted({str(e.get("type")) for e in self.events or ()})
        return self._kinds

    def wire(self) -> dict[str, Any]:
        """The notice as the change feed sends it (``session.appended``)."""
        return {
            "session_id": self.session_id,
            "scope": self.scope,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "kinds": self.kinds,
            **({"source": self.source} if self.source else {}),
        }


Listener = Callable[[Appended], None]
