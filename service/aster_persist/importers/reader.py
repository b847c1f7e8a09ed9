"""What a format module registers, and what its reader gives back or raises.

A format is a ``Format``: its name (the one spelling of it: the API, the CLI and the
docs read it from the registry), a short description, a test on the start of a file
(``Head``), and a reader that turns the whole file into ``Conversation``s or raises
``ImportProblem`` saying why not. A reader never writes anything.

A conversation's fingerprint (its source: the tool and the source's own session id, or
else the format and the bytes it came from) is what the journal remembers of an import,
so importing the same source again finds its session instead of copying it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from ulid import ULID

from ..errors import Invalid
from .times import moment


class ImportProblem(Invalid):
    code = "import_failed"
    title = "The file cannot be imported"


@dataclass
class Conversation:
    """One conversation of a foreign file, converted to events and checked, ready to
    be written whole as a session."""

    fingerprint: str
    events: list[dict[str, Any]]
    created_at: str | None = None
    cwd: str | None = None
    model: str | None = None
    title: str | None = None
    session_id: str | None = None  # native exports keep theirs
    source: dict[str, Any] = field(default_factory=dict)
    # each event's idempotency key: a native export's own, or the source record's
    keys: list[str | None] | None = None
    runs: list[int] | None = None  # the appends the events were, as lengths (an export's)
    # the events it shares with a stored session (``services/sessions/shared.py``), when
    # it refers to them instead of holding them
    shared: Any = None

    def id(self) -> str:
        """The session id this conversation becomes (the first time: after that, the
        journal remembers which session its source became)."""
        if self.session_id:
            return self.session_id
        digest = hashlib.sha256(self.fingerprint.encode()).digest()
        # the time it began, or its file's (an id must be the same each time it is
        # worked out: with no time at all, a fixed one, which no event ever shows)
        start = moment(self.created_at) or datetime(2000, 1, 1, tzinfo=UTC)
        if start.timestamp() < 0:  # before 1970: a ULID cannot say so
            start = datetime(1970, 1, 1, tzinfo=UTC)
        return str(ULID.from_bytes(ULID.from_datetime(start).bytes[:6] + digest[:10]))


@dataclass(frozen=True)
class Head:
    """The start of a file, as detection sees it."""

    first: dict[str, Any]  # line 1 as a JSON object ({} when the file is one document)
    document: bool = False  # one JSON document: it opens with '[', or line 1 is not JSON
    # a one-document file's object, or its array's first item if that is an object ({}
    # otherwise): what tells a .traj or a conversations.json from a chat file
    top: dict[str, Any] = field(default_factory=dict)


class Made(Protocol):
    """The events a reader made (``records.Events``), as the driver takes them."""

    @property
    def events(self) -> list[dict[str, Any]]: ...

    def take(self, hold: int) -> list[dict[str, Any]]: ...

    def done(self) -> list[dict[str, Any]]: ...


class LineReader(Protocol):
    """A reader of a JSON Lines format, fed one record at a time, so that a file of any
    size is read with the memory of a few records (``importers.lines`` drives it)."""

    @property
    def out(self) -> Made:
        """The events made so far (those a later record may still change last)."""

    def feed(self, record: dict[str, Any]) -> None:
        """Take in the next record (raise ImportProblem if it cannot be one)."""

    def settle(self, events: list[dict[str, Any]]) -> None:
        """Give events that no later record can change their last touches."""

    def keys(self, events: list[dict[str, Any]]) -> list[str | None] | None:
        """The events' own idempotency keys (a native export's), or None."""

    def runs(self, events: list[dict[str, Any]]) -> list[int] | None:
        """The appends the events were written in, as lengths (a native export's), or
        None (any grouping will do)."""

    def conversation(self) -> tuple[Conversation, str | None]:
        """What the records said of the whole conversation (no events), and the
        source's own session id when it names one (it is then keyed by its source)."""


@dataclass(frozen=True)
class Format:
    """One format this service reads, as the registry lists it: a reader of a whole
    file (``read``: a document such as a JSON array), or of JSON Lines one record at a
    time (``lines``: a new ``LineReader`` for each file)."""

    name: str
    description: str
    detects: Callable[[Head], bool]
    read: Callable[[bytes], list[Conversation]] | None = None
    lines: Callable[[], LineReader] | None = None
