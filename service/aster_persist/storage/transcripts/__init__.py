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

``TranscriptStore`` (store.py) holds ``Places`` (places.py: where each session is),
``Writers`` (writers.py: the open files, appends and sync bookkeeping) and ``Trash``
(lifecycle.py: detach, trash, restore, purge); ``clock`` formats time and ``records``
holds the values and limits they share.
"""

from __future__ import annotations

from ...schemas.clock import Clock, format_ts, utc_now
from ..jsonl import parse
from .places import Found
from .records import (
    KEYS_KEPT,
    PLACED_KEPT,
    AppendRequest,
    AppendResult,
    Location,
    SyncPass,
    incomplete_batch,
)
from .store import TranscriptStore

__all__ = [
    "KEYS_KEPT",
    "PLACED_KEPT",
    "AppendRequest",
    "AppendResult",
    "Clock",
    "Found",
    "Location",
    "SyncPass",
    "TranscriptStore",
    "format_ts",
    "incomplete_batch",
    "parse",
    "utc_now",
]
