"""Transcripts: one append-only JSONL file per session, and the one writer for all of them.

Guarantees:

- lines are whole and never interleaved: each request is one ``os.write``, and every
  write to a transcript happens on the event loop, one at a time;
- ``seq`` is gapless and assigned here; a batch is all or nothing;
- an append is reported durable only after the durability mode says so; a failed write
  or sync is rolled back to the file's previous length, and after a failed sync the
  session is read-only until restart (a failed fsync is never retried and reported ok);
- a torn tail is moved to ``<ulid>.jsonl.torn-<ts>`` before the next append, never
  deleted; a bad middle line makes the session ``damaged`` and refuses appends.

Nothing here knows about HTTP; ``GroupCommitter`` (commit.py) gives concurrent appends
one shared fdatasync per file (group commit).

The store is assembled from parts, one concept each: ``clock`` (time formatting),
``records`` (the values and limits the parts share), ``base`` (shared state and
discovery), ``creation`` (new sessions and whole-file imports), ``writers`` (loading,
appends and sync bookkeeping), ``lifecycle`` (trash, restore, purge); the reads are here.
"""

from __future__ import annotations

from typing import Any

from ...errors import SessionNotFound
from ..jsonl import Parsed, parse, read_bytes
from ..summary import SessionInfo
from .base import _Store
from .clock import Clock, format_ts, utc_now
from .creation import _Creation
from .lifecycle import _Lifecycle
from .records import (
    KEYS_KEPT,
    PLACED_KEPT,
    AppendRequest,
    AppendResult,
    Location,
    SyncPass,
    incomplete_batch,
)
from .writers import _Writers

__all__ = [
    "KEYS_KEPT",
    "PLACED_KEPT",
    "AppendRequest",
    "AppendResult",
    "Clock",
    "Location",
    "SyncPass",
    "TranscriptStore",
    "format_ts",
    "incomplete_batch",
    "parse",
    "utc_now",
]


class TranscriptStore(_Creation, _Writers, _Lifecycle, _Store):
    """All session files of one data home.

    Threads: appends and sync bookkeeping run on the event loop (they only copy to the
    page cache); loading a session, creating, moving and deleting files run on the single
    writer thread; ``sync_fds`` runs on the syncer thread; reads run anywhere.
    """

    # The reads stay in this module: they call ``parse`` through it, which a test replaces
    # to make a purge land in the middle of a read.

    # -- reads (any thread) ---------------------------------------------------------------

    def read(self, session_id: str) -> tuple[Parsed, SessionInfo]:
        """The readable lines of a session (what was acknowledged), and its summary."""
        path = self._live_path(session_id)
        slug = path.parent.name  # not looked up again: a purge may drop it while we read
        writer = self._writers.get(session_id)
        end = writer.acked_size if writer is not None else None
        try:
            data = read_bytes(path, 0, end)
        except FileNotFoundError:
            raise SessionNotFound(f"no session {session_id}") from None
        parsed = parse(data)
        cut = incomplete_batch(parsed)
        if cut is not None:
            parsed = parse(data[:cut])
        info = SessionInfo(id=session_id, slug=slug)
        info.absorb(parsed.lines, parsed.bad)
        if not parsed.lines or parsed.lines[0].get("type") != "session":
            info.state = "damaged"
        if session_id in self._read_only:
            info.state = "read_only"
        info.offset = parsed.good_end
        info.lines = parsed.line_count
        info.file_size = len(data)
        return parsed, info

    def read_tail(
        self, session_id: str, offset: int, until: int | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        """The acknowledged lines from byte ``offset`` on (to ``until``, if given), and the
        offset after them."""
        path = self._live_path(session_id)
        writer = self._writers.get(session_id)
        end = writer.acked_size if writer is not None else None
        if until is not None:
            end = until if end is None else min(end, until)
        try:
            data = read_bytes(path, offset, end)
        except FileNotFoundError:
            raise SessionNotFound(f"no session {session_id}") from None
        parsed = parse(data, base=offset)
        cut = incomplete_batch(parsed)
        if cut is not None:  # a batch a crash cut short is not there (as ``read`` says)
            parsed = parse(data[: cut - offset], base=offset)
        return parsed.lines, parsed.good_end if parsed.line_count else offset

    def export_bytes(self, session_id: str) -> bytes:
        path = self._live_path(session_id)
        writer = self._writers.get(session_id)
        try:
            return read_bytes(path, 0, writer.acked_size if writer is not None else None)
        except FileNotFoundError:
            raise SessionNotFound(f"no session {session_id}") from None
