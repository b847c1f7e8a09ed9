"""Copies stored once: a session whose leading events are another stored session's
refers to them instead of holding them a second time.

Its header names them, ``"base": {"session": "<ulid>", "through_seq": K}``, and its own
lines go on from seq K + 1. What it shows (its events, its summary, its export) is the
base's events 1..K, read from the base's file in whatever form and place that is now
(plain or compressed, live or in the trash), then its own. A base is always a session of
the same project, found in the same folder. Before a base is deleted for good, each
session referring to it is made whole (``Copies.make_whole``): the events it referred to
are written into it, the file replaced in one rename, so removing the original never
loses what a copy showed.

Reading is pure (``expanded``, ``base_part``: the catalog's reading processes use them
too); ``Copies`` does the writes, on the writer thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from ...errors import BaseMissing, StorageFailed, UnsafePath
from ...schemas.names import ULID_RE
from .. import fs
from ..home import PACKED, TRASH, fsync_dir
from ..jsonl import Parsed, parse, read_bytes, stream_lines
from ..summary import SessionInfo
from .places import Places
from .records import NL

BASE = "base"  # the header field naming the events a copy refers to
BATCH = "batch_size"  # on the first line of an append of several events: how many
DEPTH = 16  # how many references deep (a copy of a copy of …) are followed


@dataclass(frozen=True)
class Ref:
    """The events 1..``through_seq`` of session ``session``."""

    session: str
    through_seq: int

    def field(self) -> dict[str, Any]:
        return {"session": self.session, "through_seq": self.through_seq}


def ref_of(header: dict[str, Any] | None) -> Ref | None:
    """The reference a header makes, or None (not a header, or one that refers to none)."""
    if not header or header.get("type") != "session":
        return None
    value = header.get(BASE)
    if not isinstance(value, dict):
        return None
    session, through = value.get("session"), value.get("through_seq")
    if not isinstance(session, str) or not ULID_RE.fullmatch(session):
        return None
    if not isinstance(through, int) or isinstance(through, bool) or through < 1:
        return None
    return Ref(session, through)


def base_paths(folder: Path, session_id: str) -> list[Path]:
    """Where the base of a copy in ``folder`` (its project's folder, or that folder's
    trash) may be, in the order looked at: live plain, live compressed, then trashed."""
    project = folder.parent if folder.name == TRASH else folder
    names = [f"{session_id}.jsonl", f"{session_id}.jsonl{PACKED}"]
    return [project / name for name in names] + [project / TRASH / name for name in names]


def base_part(folder: Path, ref: Ref, depth: int = 0) -> Parsed:
    """The lines (and their bytes) of seq 1..``ref.through_seq`` of the base ``ref``
    names, itself expanded if it is a copy; raise BaseMissing when they are not all
    there."""
    if depth >= DEPTH:
        raise BaseMissing(f"the references go more than {DEPTH} sessions deep")
    for path in base_paths(folder, ref.session):
        try:
            data = read_bytes(path)
        except FileNotFoundError:
            continue
        except UnsafePath:
            raise BaseMissing(f"the session {ref.session} it refers to is a link") from None
        whole = expanded(parse(data), folder, depth + 1)
        break
    else:
        raise BaseMissing(f"the session {ref.session} it refers to is gone")
    part = Parsed()
    for line, raw in zip(whole.lines[1:], whole.raw[1:], strict=True):
        seq = line.get("seq")
        if not isinstance(seq, int) or seq > ref.through_seq:
            break
        part.lines.append(line)
        part.raw.append(raw)
    if [line.get("seq") for line in part.lines] != list(range(1, ref.through_seq + 1)):
        raise BaseMissing(
            f"the session {ref.session} it refers to does not hold its events 1 to "
            f"{ref.through_seq} whole"
        )
    return part


def expanded(parsed: Parsed, folder: Path, depth: int = 0) -> Parsed:
    """``parsed`` (a transcript's lines from its start) with the lines its header refers
    to put after the header; ``parsed`` itself when it refers to none. The lines taken
    from the base have no place in this file (their start is -1)."""
    ref = ref_of(parsed.lines[0]) if parsed.lines else None
    if ref is None:
        return parsed
    part = base_part(folder, ref, depth)
    return replace(
        parsed,
        lines=[parsed.lines[0], *part.lines, *parsed.lines[1:]],
        raw=[parsed.raw[0], *part.raw, *parsed.raw[1:]],
        starts=[parsed.starts[0], *([-1] * len(part.lines)), *parsed.starts[1:]],
    )


def expanded_or_own(parsed: Parsed, folder: Path) -> tuple[Parsed, bool]:
    """``expanded``, or ``parsed`` as it is and True when what it refers to is missing
    (the session is then damaged: its own lines are still served)."""
    try:
        return expanded(parsed, folder), False
    except BaseMissing:
        return parsed, True


def shared_of(path: Path) -> list[Ref]:
    """What the transcript at ``path`` refers to, nearest first, each base's events up
    to the seq the whole chain shows of it ([] for a transcript that holds all its own)."""
    found: list[Ref] = []
    for header in headers_along(path)[:-1]:
        ref = ref_of(header)
        assert ref is not None
        through = min(ref.through_seq, found[-1].through_seq) if found else ref.through_seq
        found.append(Ref(ref.session, through))
    return found


def headers_along(path: Path) -> list[dict[str, Any] | None]:
    """The header of the transcript at ``path``, then of each base it refers to, nearest
    first (the last one None when a base is not there)."""
    header = header_at(path)
    found = [header]
    while (ref := ref_of(header)) is not None and len(found) <= DEPTH:
        places = base_paths(path.parent, ref.session)
        header = next((h for h in map(header_at, places) if h is not None), None)
        found.append(header)
    return found


def shown_events(path: Path, depth: int = 0) -> Iterator[dict[str, Any]]:
    """The events the transcript at ``path`` shows, in order, read as they are needed (a
    line at a time, never the whole file): those it refers to first, then its own. Ends
    at the first line that is not a JSON object, or where what it refers to runs out."""
    lines = stream_lines(path)
    header = _loads(next(lines, b""))
    ref = ref_of(header)
    if ref is not None and depth < DEPTH:
        place = next((p for p in base_paths(path.parent, ref.session) if fs.exists(p)), None)
        if place is None:
            return
        seq = 0
        for event in shown_events(place, depth + 1):
            seq = event.get("seq", 0)
            if not isinstance(seq, int) or seq > ref.through_seq:
                break
            yield event
        if seq < ref.through_seq:
            return
    for line in lines:
        if line.strip():
            own = _loads(line)
            if own is None:
                return
            yield own


def base_events(folder: Path, ref: Ref) -> Iterator[dict[str, Any]]:
    """The events 1..``ref.through_seq`` of the base ``ref`` names, read as they are
    needed (``shown_events``); BaseMissing once they run out before the last."""
    place = next((p for p in base_paths(folder, ref.session) if fs.exists(p)), None)
    seq = 0
    if place is not None:
        for event in shown_events(place):
            seq = event.get("seq", 0)
            if not isinstance(seq, int) or seq > ref.through_seq:
                break
            yield event
    if seq < ref.through_seq:
        raise BaseMissing(
            f"the session {ref.session} it refers to does not hold its events 1 to "
            f"{ref.through_seq} whole"
        )


def header_at(path: Path) -> dict[str, Any] | None:
    """The first line of a transcript, as an object (None: gone, a link, or not one)."""
    try:
        head = read_bytes(path, 0, 1 << 16)
    except (OSError, UnsafePath, StorageFailed):
        return None
    return _loads(head.split(b"\n", 1)[0])


def absorb_shown(info: SessionInfo, parsed: Parsed, folder: Path) -> bool:
    """Fold what a transcript shows into ``info``: its header, the events it refers to
    (read as they are needed, a thousand at a time, never the whole base), then its own
    lines; True when what it refers to is missing (the session is then damaged)."""
    lines = parsed.lines
    info.absorb(lines[:1], [])
    ref = ref_of(lines[0]) if lines else None
    missing = False
    if ref is not None:
        held: list[dict[str, Any]] = []
        try:
            for event in base_events(folder, ref):
                held.append(event)
                if len(held) == 1024:
                    info.absorb(held, [])
                    held = []
        except BaseMissing:
            missing = True
        info.absorb(held, [])
    info.absorb(lines[1:], parsed.bad)
    return missing


def whole_bytes(data: bytes, folder: Path) -> bytes:
    """A transcript's bytes as a file holding every event itself: a copy's header without
    its reference, the events it refers to, then its own bytes as they are; any other
    transcript's as they are."""
    end = data.find(b"\n") + 1
    try:
        header = orjson.loads(data[:end]) if end else None
    except orjson.JSONDecodeError:
        return data
    ref = ref_of(header if isinstance(header, dict) else None)
    if ref is None:
        return data
    assert isinstance(header, dict)
    part = base_part(folder, ref)
    head = orjson.dumps({k: v for k, v in header.items() if k != BASE}, option=NL)
    shared = [
        raw + b"\n" if BATCH not in line else orjson.dumps(_unmarked(line), option=NL)
        for line, raw in zip(part.lines, part.raw, strict=True)
    ]
    return b"".join([head, *shared, data[end:]])


def _unmarked(line: dict[str, Any]) -> dict[str, Any]:
    """A line without the mark saying how long the append that wrote it was: the copy
    may hold only the start of that append, and such a mark at the end of what a file
    holds would read as an append a crash cut short."""
    return {k: v for k, v in line.items() if k != BATCH}


# Told of each copy made whole, once it is durable: the copy, its project's slug, and
# what it referred to (the journal's ``session.made_whole``).
OnWhole = Callable[[str, str, dict[str, Any]], None]


class Copies:
    """Finding the copies that refer to a session, and making them whole (writer thread)."""

    def __init__(self, places: Places, *, sync: bool, on_whole: OnWhole) -> None:
        self._places = places
        self._sync = sync
        self._on_whole = on_whole

    def trashed_referring_to(self, session_id: str) -> list[str]:
        """The sessions in its project's trash whose header refers to ``session_id`` (the
        catalog knows the live ones): each one's first line is read, as the file says."""
        where = self._places.locations.get(session_id)
        if where is None:
            return []
        found = []
        for other in self._places.trashed_in(where.slug):
            place = self._places.locations.get(other)
            if other == session_id or place is None or not place.trashed:
                continue
            ref = ref_of(header_at(self._places.path(other, place)))
            if ref is not None and ref.session == session_id:
                found.append(other)
        return found

    def make_whole(self, session_id: str) -> bool:
        """Write the events a copy refers to into it (writer thread; no writer holds it):
        its whole content under a temporary name, synced, renamed over the plain file
        (a compressed one is then removed: plain is the form a crash in between keeps),
        journaled. False when it refers to nothing (or is gone)."""
        where = self._places.locations.get(session_id)
        if where is None:
            return False
        path = self._places.path(session_id, where)
        try:
            data = read_bytes(path)
        except FileNotFoundError:
            return False
        end = data.find(b"\n") + 1
        ref = ref_of(_loads(data[:end]))
        if ref is None:
            return False
        whole = whole_bytes(data, path.parent)
        plain = replace(where, packed=False)
        target = self._places.path(session_id, plain)
        fs.atomic_write(target, whole, sync=self._sync)
        stat = fs.lstat(target)
        if stat is not None and not where.trashed:  # the watcher knows it as our own
            self._places.placed[session_id] = (stat.st_size, stat.st_mtime_ns)
            self._places.trim()
        self._places.locations[session_id] = plain
        self._on_whole(
            session_id,
            where.slug,
            {"base": ref.session, "through_seq": ref.through_seq, "bytes": len(whole)},
        )
        if where.packed:
            fs.unlink(path)
            if self._sync:
                fsync_dir(path.parent)
        return True


def _loads(line: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(line) if line else None
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
