"""Writers: each open session file, loaded on the writer thread and used on the loop.

Appends copy a request's lines to the page cache with one ``os.write`` (cut back on
failure, so the file is as it was); sync passes dup each written descriptor for the
syncer thread and acknowledge only what was synced, in order. After a failed sync the
session is read-only and cut back to its last acknowledged byte.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from ...errors import (
    InvalidEvent,
    PayloadTooLarge,
    PreconditionFailed,
    SessionDamaged,
    SessionNotFound,
    SessionOwnedElsewhere,
    SessionReadOnly,
)
from ...schemas.clock import Clock, format_ts
from ...schemas.conditions import holds, named
from .. import fs
from ..jsonl import Parsed, parse, read_bytes, write_new
from ..summary import NAMING, Naming, SessionInfo, Stats, canonical_ts
from .copies import absorb_shown
from .places import Places
from .records import (
    KEYS_KEPT,
    NL,
    AppendRequest,
    AppendResult,
    Lines,
    OnChange,
    SyncPass,
    Writer,
    Written,
    fold,
    incomplete_batch,
    key_runs,
    run_starts,
    storage_error,
)

log = logging.getLogger("aster_persist")


class Writers:
    """The open session files: loaded on the writer thread, appended to on the event
    loop, synced by passes whose descriptors the syncer thread fsyncs."""

    def __init__(
        self,
        places: Places,
        *,
        durability: str,
        clock: Clock,
        max_event_bytes: int,
        open_files: int,
        on_change: OnChange,
        unpack: Callable[[str, dict[str, Any]], None],
    ) -> None:
        self._places = places
        self._unpack = unpack  # a compressed session made plain (``Forms.unpack``)
        self.durability = durability
        self.clock = clock
        self.max_event_bytes = max_event_bytes
        self.open_files = open_files
        self._on_change = on_change
        self._open: OrderedDict[str, Writer] = OrderedDict()
        self._read_only: set[str] = set()
        self._unsynced: set[str] = set()  # written since the last sync pass began
        self._inflight: Counter[str] = Counter()  # in sync passes now running

    # -- writers: loaded on the writer thread, used on the event loop -------------------

    def load_writer(self, session_id: str) -> Writer:
        """Open a session for appending: read it, quarantine a torn tail (writer thread);
        a compressed one is made plain first."""
        where = self._places.locations.get(session_id)
        if where is not None and where.packed:
            self._unpack(session_id, {"by": "an append to a compressed session"})
        path = self._places.live_path(session_id)
        fd = fs.open_file(path, os.O_RDWR | os.O_APPEND)
        try:
            data = read_bytes(path)
            parsed = parse(data)
            cut = incomplete_batch(parsed)
            if cut is not None:  # a cut-short batch goes aside with any torn bytes after it
                parsed = parse(data[:cut])
                parsed.torn = (cut, len(data))
            if parsed.torn is not None:
                self._quarantine(path, fd, data, parsed)
            info = SessionInfo(id=session_id, slug=self._places.locations[session_id].slug)
            missing = absorb_shown(info, parsed, path.parent)  # a copy: what it refers to
            if missing or not parsed.lines or parsed.lines[0].get("type") != "session":
                info.state = "damaged"
            info.offset = parsed.good_end
            info.lines = parsed.line_count
            stat = os.fstat(fd)
            info.file_size, info.file_mtime_ns = stat.st_size, stat.st_mtime_ns
            writer = Writer(path=path, fd=fd, size=parsed.good_end, info=info)
            writer.acked_size = writer.size
            writer.acked_info = replace(info)
            _load_keys(writer.keys, parsed.lines)
        except BaseException:
            os.close(fd)
            raise
        return writer

    def install(self, session_id: str, writer: Writer) -> Writer:
        """Make a loaded writer the session's one writer (event loop)."""
        current = self._open.get(session_id)
        where = self._places.locations.get(session_id)
        if current is not None or where is None or where.trashed:
            os.close(writer.fd)  # lost a race with another load, or with a delete
            if current is None:
                raise SessionNotFound(f"no session {session_id}")
            return current
        self._open[session_id] = writer
        if len(self._open) > self.open_files:
            busy = self._unsynced | self._inflight.keys()
            for old_id in list(self._open)[: len(self._open) - self.open_files]:
                if old_id not in busy:
                    self._close(self._open.pop(old_id))
        return writer

    def _close(self, writer: Writer) -> None:
        """Close a writer, leaving the catalog the file's final size and mtime."""
        try:
            stat = os.fstat(writer.fd)
            if writer.acked_info is not None and writer.acked_size == stat.st_size:
                self._on_change(
                    replace(
                        writer.acked_info, file_size=stat.st_size, file_mtime_ns=stat.st_mtime_ns
                    )
                )
        finally:
            os.close(writer.fd)

    @property
    def open_count(self) -> int:
        """How many transcripts are held open for appends."""
        return len(self._open)

    def writer(self, session_id: str) -> Writer | None:
        writer = self._open.get(session_id)
        if writer is not None:
            self._open.move_to_end(session_id)
        return writer

    def _quarantine(self, path: Path, fd: int, data: bytes, parsed: Parsed) -> None:
        """Move a torn tail aside, then cut the file back to its last whole line."""
        assert parsed.torn is not None
        start, end = parsed.torn
        stamp = format_ts(self.clock()).replace(":", "").replace("-", "")
        aside = path.with_name(f"{path.name}.torn-{stamp}")
        n = 0
        while fs.exists(aside):
            n += 1
            aside = path.with_name(f"{path.name}.torn-{stamp}-{n}")
        write_new(aside, data[start:end])
        os.ftruncate(fd, start)
        os.fsync(fd)
        log.warning("moved a torn tail of %d bytes from %s to %s", end - start, path, aside.name)

    def busy(self, session_id: str) -> bool:
        """True while the session has writes waiting for, or in, a sync."""
        return session_id in self._unsynced or self._inflight[session_id] > 0

    def release(self, session_id: str) -> None:
        """Close the session's writer (event loop, when not busy); the next append opens
        the file again and reads what another program added to it."""
        writer = self._open.pop(session_id, None)
        if writer is not None:
            os.close(writer.fd)

    def acked_size(self, session_id: str) -> int | None:
        """How much of an open session's file is acknowledged (None: not open)."""
        writer = self._open.get(session_id)
        return writer.acked_size if writer is not None else None

    def read_only(self, session_id: str) -> bool:
        """Whether a failed sync left the session read-only until restart."""
        return session_id in self._read_only

    def forget(self, session_id: str) -> None:
        """A purged session: nothing of it is kept."""
        self._read_only.discard(session_id)

    def close(self) -> None:
        """Close every writer (event loop, after the last sync)."""
        while self._open:
            _, writer = self._open.popitem()
            self._close(writer)

    # -- appends (event loop) -----------------------------------------------------------

    def append(self, request: AppendRequest) -> tuple[AppendResult, int]:
        """Write one request whole, or raise and leave the file as it was.

        Returns the result and the file size that must be durable before it may be
        acknowledged. The write is one ``os.write`` of the request's lines to the page
        cache; syncing is ``begin_sync``/``sync_fds``/``end_sync``'s job. In ``interval``
        and ``none`` modes the write is acknowledged at once.
        """
        sid = request.session_id
        writer = self._open[sid]
        key = request.key
        if key is not None and key in writer.keys:
            # A replay waits for the sync that covers the original write, no longer: what
            # was written since (and whether its sync failed) is not its business.
            end = writer.key_ends.get(key, 0)  # 0: read back from the file, so on disk
            if end <= writer.acked_size or sid not in self._read_only:
                if end > writer.acked_size and self.durability == "fsync":
                    self._unsynced.add(sid)
                return replace(writer.keys[key], replayed=True), end
        if sid in self._read_only:
            raise SessionReadOnly(
                f"session {sid} is read-only after a failed sync; restart the daemon to retry"
            )
        info = writer.info
        if info.machine != request.machine:
            raise SessionOwnedElsewhere(
                f"session {sid} belongs to machine {info.machine!r}: this is its read-only "
                "copy; append on that machine"
                if info.machine is not None
                else f"session {sid} is this machine's own: lines of {request.machine!r} "
                "are not appended to it"
            )
        if info.state == "damaged":
            bad = ", ".join(str(n) for n in info.bad_lines[:5]) or "1 (header)"
            raise SessionDamaged(
                f"session {sid} has unreadable lines ({bad}); appends are refused until "
                "`aster-persist doctor --repair` quarantines them"
            )
        if request.if_match is not None and not holds(request.if_match, info.last_seq):
            raise PreconditionFailed(
                f"If-Match expected last seq {named(request.if_match)}, but session {sid} "
                f"is at {info.last_seq}",
                current=f'"{info.last_seq}"',
            )
        lines = self.lines(
            request.events,
            info.last_seq + 1,
            key,
            info.naming,
            keys=request.keys,
            runs=request.runs,
        )
        data = b"".join(lines.chunks)
        self._write_all(writer, data, sid)
        sizes = [len(chunk) for chunk in lines.chunks]
        writer.written.append(Written(writer.size, writer.size + len(data), lines.records, sizes))
        writer.size += len(data)
        fold(info, lines)
        info.offset = info.file_size = writer.size
        result = AppendResult(lines.first, lines.last, lines.last + 1 - lines.first)
        if key is not None:
            self._remember(writer, key, result)
        for own, first, last in key_runs(request.keys or [], lines.first):
            if own is not None:  # the events of one key are the append it stands for
                self._remember(writer, own, AppendResult(first, last, last + 1 - first))
        if self.durability != "none":
            self._unsynced.add(sid)
        if self.durability != "fsync":
            self._acknowledge(writer, writer.size)
        return result, writer.size

    def _remember(self, writer: Writer, key: str, result: AppendResult) -> None:
        """Know ``key`` as written (the latest ``KEYS_KEPT`` keys are kept)."""
        writer.keys[key] = result
        writer.key_ends[key] = writer.size
        if len(writer.keys) > KEYS_KEPT:
            writer.key_ends.pop(writer.keys.popitem(last=False)[0], None)

    def lines(
        self,
        events: list[dict[str, Any]],
        first: int,
        key: str | None,
        naming: Naming,
        *,
        keys: list[str | None] | None = None,
        runs: list[int] | None = None,
    ) -> Lines:
        """The stored lines of ``events`` numbered from ``first`` (``seq``, ``ts`` and the
        idempotency key added: ``key``, or each event's of ``keys``), and what a listing
        learns from them, in one pass. The first line of a batch of several events says
        how many (``runs``: several batches, as lengths)."""
        now = format_ts(self.clock())
        dumps = orjson.dumps
        chunks = []
        records = []
        batch = len(events)
        seq = first
        latest = ""  # the newest time among the lines, as a summary of the file reads it
        stats = Stats()
        starts = run_starts(runs if runs is not None else [batch])
        for event in events:
            line = {"type": event["type"], "seq": seq, **event}
            line["seq"] = seq  # validation refuses a client seq; this keeps it so regardless
            if line["type"] == "retraction" and line["target_seq"] >= seq:
                where = f"events[{seq - first}].target_seq"
                raise InvalidEvent(
                    f"{where}: a retraction takes back an earlier event; this one would be "
                    f"seq {seq}, so target_seq must be below it",
                    errors=[{"loc": where, "msg": "not an earlier event", "type": "value_error"}],
                )
            ts = line.get("ts")
            if ts is None:
                line["ts"] = now
                if now > latest:
                    latest = now
            else:
                ts = canonical_ts(ts)
                if len(ts) != len(now):
                    where = f"events[{seq - first}].ts"
                    raise InvalidEvent(
                        f"{where}: {ts[:40]!r} is not a time that can be written in UTC",
                        errors=[{"loc": where, "msg": "not a time in UTC", "type": "value_error"}],
                    )
                line["ts"] = ts  # stored as UTC with milliseconds, like the server's own
                if ts > latest:
                    latest = ts
            own = key if keys is None else keys[seq - first]
            if own is not None:
                line["idempotency_key"] = own
            size = starts.get(seq - first, 1)
            if size > 1:
                # The first line of a batch says how long it is, so a batch that a power
                # loss cut short is recognised and moved aside like a torn line.
                line["batch_size"] = size
            chunks.append(dumps(line, option=NL))
            records.append(line)
            seq += 1
            # what a listing needs, folded in the same pass
            kind = line["type"]
            if kind in NAMING or (kind == "message" and naming.first_user is None):
                naming = naming.after(line, seq - 1)
            stats.count(line, line["ts"])
        biggest = max(map(len, chunks))
        if biggest > self.max_event_bytes:
            n = [len(c) for c in chunks].index(biggest)
            raise PayloadTooLarge(
                f"events[{n}] is {biggest} bytes stored; the limit is {self.max_event_bytes}"
            )
        return Lines(chunks, records, first, seq - 1, latest, naming, stats)

    def _write_all(self, writer: Writer, data: bytes, sid: str) -> None:
        view = memoryview(data)
        done = 0
        try:
            while done < len(data):
                done += os.write(writer.fd, view[done:])
        except OSError as exc:
            try:
                os.ftruncate(writer.fd, writer.size)
            except OSError:
                self._read_only.add(sid)
                writer.info.state = "read_only"
            raise storage_error(exc, f"could not append to session {sid}") from exc

    def _acknowledge(self, writer: Writer, size: int, info: SessionInfo | None = None) -> None:
        """Everything up to ``size`` is durable; ``info`` is the summary at that size."""
        if size > writer.acked_size:
            writer.acked_size = size
            writer.acked_info = info or replace(writer.info, bad_lines=list(writer.info.bad_lines))
            n = next((i for i, w in enumerate(writer.written) if w.start >= size), None)
            if n is None:  # all of them (the usual case)
                written, writer.written = writer.written, []
            else:
                written, writer.written = writer.written[:n], writer.written[n:]
            self._on_change(writer.acked_info, written)

    def acked(self, session_id: str, size: int) -> bool | None:
        """True once ``size`` bytes are durable, None when they never will be."""
        writer = self._open.get(session_id)
        if writer is None:
            return None
        if writer.acked_size >= size:
            return True
        return None if session_id in self._read_only else False

    # -- syncing: begin and end on the event loop, the syncs on the syncer thread --------

    def pending_sync(self) -> bool:
        return bool(self._unsynced)

    def begin_sync(self) -> SyncPass:
        """Take every session written since the last pass; hand out descriptors to sync.

        A session already in a running pass waits for the next one: two fdatasyncs of one
        open file at once could let one of them miss a writeback error the other consumed.
        """
        sync = SyncPass()
        waiting = set()
        for sid in self._unsynced:
            writer = self._open.get(sid)
            if writer is None or sid in self._read_only:
                continue
            if self._inflight[sid] > 0:
                waiting.add(sid)
                continue
            try:
                sync.fds[sid] = os.dup(writer.fd)
            except OSError:
                for fd in sync.fds.values():  # nothing taken: the sessions stay unsynced
                    os.close(fd)
                raise
            sync.sizes[sid] = writer.size
            sync.infos[sid] = replace(writer.info, bad_lines=list(writer.info.bad_lines))
        self._inflight.update(sync.fds.keys())
        self._unsynced = waiting
        return sync

    @staticmethod
    def sync_fds(sync: SyncPass) -> None:
        """fdatasync each descriptor once, then close it (syncer thread)."""
        for sid, fd in sync.fds.items():
            try:
                os.fdatasync(fd)
            except OSError as exc:
                sync.failed[sid] = exc.strerror or "I/O error"
            finally:
                os.close(fd)

    def end_sync(self, sync: SyncPass) -> None:
        """Acknowledge what was synced; cut back and close to writes what was not.

        Passes must end in the order they began: a success is only believed once every
        earlier pass has succeeded too (a later fsync may not report an earlier failure).
        """
        self._inflight.subtract(sync.fds.keys())
        self._inflight = +self._inflight  # drop the zeros
        for sid, size in sync.sizes.items():
            writer = self._open.get(sid)
            if writer is None:
                continue
            if sid not in sync.failed:
                if self.durability == "fsync":
                    self._acknowledge(writer, size, sync.infos[sid])
                continue
            log.error(
                "fsync of %s failed (%s); the session is read-only until restart",
                writer.path,
                sync.failed[sid],
            )
            self._read_only.add(sid)
            if writer.acked_info is not None:  # what the listing keeps when the file closes
                writer.acked_info.state = "read_only"
            if self.durability == "fsync":
                # Nothing past the last acknowledged byte was promised: cut it away.
                with contextlib.suppress(OSError):
                    os.ftruncate(writer.fd, writer.acked_size)
                writer.size = writer.acked_size
                writer.written.clear()
                if writer.acked_info is not None:
                    writer.info = replace(writer.acked_info)
            writer.info.state = "read_only"
            self._on_change(replace(writer.info))


def _load_keys(keys: OrderedDict[str, AppendResult], lines: list[dict[str, Any]]) -> None:
    """Rebuild idempotency results from the keys stored on the lines themselves.

    A key counts only for the contiguous run of event lines that carry it (the header
    and anything else are ignored), so no client-chosen field can fake an applied append.
    """
    spans: dict[str, list[int]] = {}
    previous: tuple[str, int] | None = None
    for line in lines:
        key = line.get("idempotency_key")
        seq = line.get("seq")
        if line.get("type") == "session" or not isinstance(key, str) or not isinstance(seq, int):
            previous = None
            continue
        span = spans.get(key)
        if span is not None and previous == (key, seq - 1):
            span[1] = seq
            span[2] += 1
        else:
            spans.pop(key, None)  # a later run replaces an earlier one
            spans[key] = [seq, seq, 1]
        previous = (key, seq)
    for key, (first, last, count) in list(spans.items())[-KEYS_KEPT:]:
        keys[key] = AppendResult(first, last, count)
