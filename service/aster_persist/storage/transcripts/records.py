"""What the parts of the transcript store hand each other: requests, results, open
writers, lines to write, sync passes, and the limits and rules they share.

Plain values and pure functions: nothing here touches a file.
"""

from __future__ import annotations

import errno
import itertools
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from ...errors import AsterError, InsufficientStorage, StorageFailed
from ...schemas.conditions import SeqCondition
from ..jsonl import Parsed
from ..summary import Naming, SessionInfo, Stats

KEYS_KEPT = 10_000
PLACED_KEPT = 10_000
NL = orjson.OPT_APPEND_NEWLINE


@dataclass
class AppendRequest:
    """One append as the writer thread takes it."""

    session_id: str
    events: list[dict[str, Any]]
    key: str | None = None
    if_match: SeqCondition = None
    # a key of its own for each event (an import's, by the record it came from) instead
    # of one for the request; the caller has left out the events already written
    keys: list[str | None] | None = None
    # the appends the events were (an export's, as lengths): each is marked as a batch
    runs: list[int] | None = None
    # the team's machine whose lines these are: a copy takes only its owner's, and a
    # session of this machine only its own (None)
    machine: str | None = None


@dataclass(frozen=True)
class AppendResult:
    """What an append did: the seqs it was given, or that it was a replay."""

    first_seq: int
    last_seq: int
    count: int
    replayed: bool = False


@dataclass(frozen=True)
class Written:
    """What one append put in a session's file: bytes ``start``..``end``, which hold
    ``records`` (the stored lines, as written)."""

    start: int
    end: int
    records: list[dict[str, Any]]
    sizes: list[int]  # the bytes of each record's line, in order


def written_lines(
    held: list[Written] | None, start: int, end: int
) -> tuple[list[dict[str, Any]], list[int], list[int]]:
    """The lines of bytes ``start``..``end``, with each one's offset and size, when
    ``held`` (an unbroken run of writes, as the worker keeps them) is exactly them; none
    when it is not (the file is read)."""
    if not held or held[0].start != start or held[-1].end != end:
        return [], [], []
    lines = [line for written in held for line in written.records]
    sizes = [size for written in held for size in written.sizes]
    starts = list(itertools.accumulate(sizes[:-1], initial=start))
    return lines, starts, sizes


def run_starts(runs: list[int]) -> dict[int, int]:
    """Where each batch of ``runs`` (lengths) starts, and its length."""
    out = {}
    n = 0
    for size in runs:
        out[n] = size
        n += size
    return out


def key_runs(keys: list[str | None], first: int) -> list[tuple[str | None, int, int]]:
    """Runs of equal keys, each with the first and last seq it covers."""
    runs: list[tuple[str | None, int, int]] = []
    for seq, key in enumerate(keys, first):
        if runs and runs[-1][0] == key:
            runs[-1] = (key, runs[-1][1], seq)
        else:
            runs.append((key, seq, seq))
    return runs


class OnChange(Protocol):
    """Told of a session's new summary (any thread), with what was written since the
    one before when that is known (so an index need not read it back)."""

    def __call__(self, info: SessionInfo, written: Sequence[Written] = (), /) -> None: ...


@dataclass(frozen=True)
class Location:
    """A session's project folder, whether it is in the trash, and whether its transcript
    is kept compressed (``<ulid>.jsonl.zst``)."""

    slug: str
    trashed: bool = False
    packed: bool = False


@dataclass
class Writer:
    """An open session file and what appending to it needs to know."""

    path: Path
    fd: int
    size: int
    info: SessionInfo
    keys: OrderedDict[str, AppendResult] = field(default_factory=OrderedDict)
    key_ends: dict[str, int] = field(default_factory=dict)  # file size after each keyed write
    acked_size: int = 0
    acked_info: SessionInfo | None = None
    written: list[Written] = field(default_factory=list)  # appends past ``acked_size``


@dataclass
class Lines:
    """Events made into stored lines, and what a session's summary learns from them."""

    chunks: list[bytes]
    records: list[dict[str, Any]]  # the lines the chunks encode
    first: int
    last: int
    latest: str  # the newest ts among them (or now)
    naming: Naming
    stats: Stats


def fold(info: SessionInfo, lines: Lines) -> None:
    """Take lines just written into a session's summary (its offsets are the caller's)."""
    count = lines.last + 1 - lines.first
    info.events += count
    info.lines += count
    info.last_seq = lines.last
    if lines.latest > info.updated_at:
        info.updated_at = lines.latest
    info.naming = lines.naming
    info.stats = info.stats.plus(lines.stats)


@dataclass
class SyncPass:
    """One round of syncs: a duplicate descriptor and the size covered per session."""

    fds: dict[str, int] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    infos: dict[str, SessionInfo] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)


def incomplete_batch(parsed: Parsed) -> int | None:
    """The offset of a last batch that was cut short (fewer lines than it announced)."""
    lines = parsed.lines
    if not lines:
        return None
    last = lines[-1].get("seq")
    if not isinstance(last, int):
        return None
    for i in range(len(lines) - 1, 0, -1):
        size = lines[i].get("batch_size")
        if isinstance(size, int) and size > 1:
            first = lines[i].get("seq")
            if isinstance(first, int) and last < first + size - 1:
                return parsed.starts[i]
            return None
    return None


def storage_error(exc: OSError, what: str) -> AsterError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return InsufficientStorage(f"{what}: {exc.strerror}; the file is unchanged")
    return StorageFailed(f"{what}: {exc.strerror or 'I/O error'}; the file is unchanged")
