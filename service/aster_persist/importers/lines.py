"""JSON Lines formats read one record at a time, so that a file of any size imports with
the memory of a batch of events and the largest record.

A format's ``LineReader`` is fed records; the events it made that no later record can
change (all but the last ``HOLD``) are taken from it in batches. A file is read twice:

- ``scan`` reads it all and checks every event against this store's schema, writing
  nothing: a file that is not a transcript of its format is refused whole, naming the
  line or the event. It learns what the conversation says of itself (its source, its
  times, its title), the digest of its bytes, and a hash of each event's key, so that
  the import can see where a session already holding the source's start leaves off;
- ``batches`` reads it again, the events now with their times and their keys, for the
  import to write a batch at a time.

A whole file in memory (``read_whole``) goes through the same steps, so both ways give
the same events.
"""

from __future__ import annotations

import hashlib
import io
import os
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from ..errors import Invalid
from .reader import Conversation, Format, ImportProblem, LineReader
from .records import SourceKeys, by_source, fingerprint, numbered_records

HOLD = 64  # events a later record may still change: a turn's calls, a result's exit code
BATCH = 512  # events handed on at once
CHUNK = 1 << 20  # bytes read from a file at once
KEEP = 8 << 20  # a file this small keeps its events from the first read to the second


def key_hash(key: str | None) -> int:
    """A key's 64 bits, the same in every process (``hash`` of a string is not: a file
    scanned on a reading process is matched here against the keys a session holds); 0
    for an event with none."""
    if key is None:
        return 0
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def converted(
    reader: LineReader, records: Iterable[tuple[int, dict[str, Any]]]
) -> Iterator[list[dict[str, Any]]]:
    """The events of ``records`` in batches, each settled (no later record changes it)."""
    out = reader.out
    for _number, record in records:
        reader.feed(record)
        if len(out.events) >= HOLD + BATCH:
            done = out.take(HOLD)
            reader.settle(done)
            yield done
    done = out.done()
    reader.settle(done)
    if done:
        yield done


def read_whole(form: Format, data: bytes) -> list[Conversation]:
    """The one conversation of a JSON Lines file held in memory."""
    assert form.lines is not None
    reader = form.lines()
    events: list[dict[str, Any]] = []
    own: list[str | None] = []
    runs: list[int] = []
    for batch in converted(reader, numbered_records(data.splitlines())):
        own += reader.keys(batch) or []
        runs += reader.runs(batch) or []
        events += batch
    conversation, source_id = reader.conversation()
    conversation.events = events
    conversation.runs = runs if reader.runs([]) is not None else None
    if source_id:
        by_source(conversation, form.name, source_id)
    elif reader.keys([]) is not None:  # a format with keys of its own
        conversation.keys = own
    conversation.fingerprint = conversation.fingerprint or fingerprint(form.name, data)
    return [conversation]


def file_lines(handle: BinaryIO, limit: int | None, digest: Any = None) -> Iterator[bytes]:
    """An open file's lines from its start, read a chunk at a time up to ``limit`` bytes
    (what it held when it was looked at: a file an agent is writing may be longer by
    now); the bytes read go into ``digest`` too."""
    handle.seek(0)
    left = limit if limit is not None else -1
    rest: list[bytes] = []  # a line's start, in pieces until its end comes
    while left:
        chunk = handle.read(CHUNK if left < 0 else min(CHUNK, left))
        if not chunk:
            break
        left -= len(chunk) if left > 0 else 0
        if digest is not None:
            digest.update(chunk)
        if b"\n" not in chunk:
            rest.append(chunk)  # a long line: joined once, when it ends
            continue
        lines = chunk.split(b"\n")
        lines[0] = b"".join([*rest, lines[0]])
        rest = [lines.pop()]
        yield from lines
    if rest and rest != [b""]:
        yield b"".join(rest)


@dataclass
class Batch:
    """Events of a file, ready to write: checked, with their times and keys, and the
    appends they were (an export's, as lengths; None: any grouping will do)."""

    events: list[dict[str, Any]]
    keys: list[str | None]
    runs: list[int] | None


@dataclass
class Scan:
    """What reading a whole file once told, before anything is written."""

    name: str  # the format's
    conversation: Conversation  # its header's fields and its fingerprint (no events)
    source_id: str | None  # the source's own id: the conversation is keyed by its source
    digest: str  # of the bytes read
    events: int = 0
    first_ts: str | None = None  # the first time any event has
    # the key_hash of each event's key (the part after its source's prefix), in order
    keys: array[int] = field(default_factory=lambda: array("q"))
    first_record: str | None = None  # the first source record known by its own id
    # a small file's events as checked (``batches`` then reads it no more), else None
    kept: list[Batch] | None = None
    # the redactions the index will ask of its events' documents, worked out by the
    # reading process that scanned it (``redact.PRESCANNED``), else None
    redactions: dict[bytes, tuple[str | None, int, int]] | None = None

    def after(self, known: Iterable[str]) -> int | None:
        """Where the events after the last one keyed as in ``known`` start (None: no
        event is): a source grows at its end, so what is new follows it."""
        held = {key_hash(key.removeprefix(self.prefix)) for key in known}
        for n in range(len(self.keys) - 1, -1, -1):
            if self.keys[n] in held:
                return n + 1
        return None

    @property
    def prefix(self) -> str:
        return SourceKeys(self.name, self.source_id or "").prefix


def scan(form: Format, handle: BinaryIO, limit: int | None) -> Scan:
    """Read a file once, checking every event; raise ImportProblem saying why not. A
    file of ``KEEP`` bytes or less keeps its events, and is not read again."""
    assert form.lines is not None
    reader = form.lines()
    digest = hashlib.sha256()
    suffixes = SourceKeys("", "")
    keys = array("q")
    events = 0
    first_ts = first_record = None
    size = read_size(handle, limit)
    kept: list[Batch] | None = [] if size <= KEEP else None
    for batch in converted(reader, numbered_records(file_lines(handle, limit, digest))):
        own = reader.keys(batch)  # a native export's own keys, taken off as the import will
        runs = reader.runs(batch)
        for key in suffixes.of(batch):
            if first_record is None and key and not key.startswith("#"):
                first_record = key  # the first record known by its own id, not a place
            keys.append(key_hash(key))
        for event in batch:
            first_ts = first_ts or event.get("ts")
        checked = _checked(form, batch, events)
        if kept is not None:
            kept.append(Batch(checked, own or [None] * len(checked), runs))
        events += len(batch)
    conversation, source_id = reader.conversation()
    if source_id:
        conversation.fingerprint = f"{form.name}:source:{source_id}"
    elif not conversation.fingerprint:
        conversation.fingerprint = f"{form.name}:{digest.hexdigest()}"
    if source_id is None:
        keys, first_record = array("q"), None  # not keyed by its source: none looked for
    return Scan(
        form.name,
        conversation,
        source_id,
        digest.hexdigest(),
        events,
        first_ts,
        keys,
        first_record,
        kept,
    )


def read_size(handle: BinaryIO, limit: int | None) -> int:
    """How many bytes of an open file an import reads."""
    size = os.fstat(handle.fileno()).st_size if _has_fd(handle) else _seek_size(handle)
    return size if limit is None else min(size, limit)


def _has_fd(handle: BinaryIO) -> bool:
    try:
        handle.fileno()
    except (OSError, AttributeError, io.UnsupportedOperation):
        return False
    return True


def _seek_size(handle: BinaryIO) -> int:
    at = handle.tell()
    size = handle.seek(0, io.SEEK_END)
    handle.seek(at)
    return size


def batches(
    form: Format, handle: BinaryIO, limit: int | None, scanned: Scan, modified_at: str | None
) -> Iterator[Batch]:
    """The file's events again, a batch at a time, with their times and their keys
    (a small file's, as ``scan`` kept them)."""
    assert form.lines is not None
    keys = SourceKeys(form.name, scanned.source_id) if scanned.source_id else None
    # a record with no time takes the one before it (the first known, at the start);
    # a file with no times at all, its own time
    previous = scanned.first_ts or scanned.conversation.created_at or modified_at
    if scanned.kept is not None:
        yield from _kept(form, scanned.kept, keys, previous)
        return
    reader = form.lines()
    done = 0
    for batch in converted(reader, numbered_records(file_lines(handle, limit))):
        own = reader.keys(batch)
        runs = reader.runs(batch)
        for event in batch:
            if event.get("ts"):
                previous = event["ts"]
            elif previous:
                event["ts"] = previous
        checked = _checked(form, batch, done)
        done += len(batch)
        found = keys.of(batch) if keys is not None else own or [None] * len(batch)
        yield Batch(checked, found, runs)


def _kept(
    form: Format, kept: list[Batch], keys: SourceKeys | None, previous: str | None
) -> Iterator[Batch]:
    """The batches ``scan`` kept, with their times and keys as ``batches`` gives them: an
    event that had no time takes the one before it, and is checked again with it."""
    done = 0
    for batch in kept:
        for n, event in enumerate(batch.events):
            if event.get("ts"):
                previous = event["ts"]
            elif previous:
                [batch.events[n]] = _checked(form, [{**event, "ts": previous}], done + n)
        if keys is not None:
            batch.keys = keys.of(batch.events)
        done += len(batch.events)
        yield batch


def _checked(form: Format, events: list[dict[str, Any]], before: int) -> list[dict[str, Any]]:
    """Events as this store takes them, or ImportProblem naming the one refused."""
    from ..schemas.validation import validate_events

    try:
        return list(validate_events(events))
    except Invalid as exc:
        detail = _renumbered(exc.detail, before)
        raise ImportProblem(
            f"the {form.name} file gives an event this store refuses: {detail}"
        ) from None


def _renumbered(detail: str, before: int) -> str:
    """A problem naming ``events[n]`` of a batch, as the n-th event of the file."""
    if before and detail.startswith("events["):
        number, _, rest = detail[7:].partition("]")
        if number.isdigit():
            return f"events[{int(number) + before}]{rest}"
    return detail
