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
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from ulid import ULID

from .. import __version__
from ..errors import (
    AsterError,
    InsufficientStorage,
    InvalidEvent,
    PayloadTooLarge,
    PreconditionFailed,
    SessionDamaged,
    SessionExists,
    SessionNotFound,
    SessionReadOnly,
    StorageFailed,
    UnsafePath,
)
from ..schemas.events import RESERVED_HEADER_KEYS
from . import fs
from .events import FORMAT_VERSION, validate_header
from .home import (
    TRASH,
    Home,
    check_session_id,
    ensure_dir,
    fsync_dir,
    normalize_repo_root,
    project_slug,
)
from .jsonl import Parsed, parse, read_bytes, write_new, write_whole
from .summary import SessionInfo, canonical_ts, first_text

log = logging.getLogger("aster_persist")

Clock = Callable[[], datetime]
KEYS_KEPT = 10_000
PLACED_KEPT = 10_000
_NL = orjson.OPT_APPEND_NEWLINE


def utc_now() -> datetime:
    return datetime.now(UTC)


def format_ts(moment: datetime) -> str:
    """RFC 3339 UTC with millisecond precision: 2026-01-02T03:04:05.678Z."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class AppendRequest:
    session_id: str
    events: list[dict[str, Any]]
    key: str | None = None
    if_match: int | None = None


@dataclass(frozen=True)
class AppendResult:
    first_seq: int
    last_seq: int
    count: int
    replayed: bool = False

    def body(self) -> dict[str, int]:
        return {"first_seq": self.first_seq, "last_seq": self.last_seq, "count": self.count}

    def body_bytes(self) -> bytes:
        return b'{"first_seq":%d,"last_seq":%d,"count":%d}' % (
            self.first_seq,
            self.last_seq,
            self.count,
        )

    @property
    def status(self) -> int:
        """201 for a new write, 200 for a replay of an idempotency key."""
        return 200 if self.replayed else 201

    def headers(self) -> dict[str, str]:
        out = {"ETag": f'"{self.last_seq}"'}
        if self.replayed:
            out["Idempotent-Replayed"] = "true"
        return out


@dataclass
class Location:
    slug: str
    trashed: bool = False


@dataclass
class _Writer:
    """An open session file and what appending to it needs to know."""

    path: Path
    fd: int
    size: int
    info: SessionInfo
    keys: OrderedDict[str, AppendResult] = field(default_factory=OrderedDict)
    key_ends: dict[str, int] = field(default_factory=dict)  # file size after each keyed write
    acked_size: int = 0
    acked_info: SessionInfo | None = None


@dataclass
class _Lines:
    """Events made into stored lines, and what a session's summary learns from them."""

    chunks: list[bytes]
    first: int
    last: int
    latest: str  # the newest ts among them (or now)
    title: str | None
    first_user: str | None


def _fold(info: SessionInfo, lines: _Lines) -> None:
    """Take lines just written into a session's summary (its offsets are the caller's)."""
    count = lines.last + 1 - lines.first
    info.events += count
    info.lines += count
    info.last_seq = lines.last
    if lines.latest > info.updated_at:
        info.updated_at = lines.latest
    if lines.title is not None:
        info.title_event = lines.title
    info.first_user = lines.first_user


@dataclass
class SyncPass:
    """One round of syncs: a duplicate descriptor and the size covered per session."""

    fds: dict[str, int] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    infos: dict[str, SessionInfo] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)


class TranscriptStore:
    """All session files of one data home.

    Threads: appends and sync bookkeeping run on the event loop (they only copy to the
    page cache); loading a session, creating, moving and deleting files run on the single
    writer thread; ``sync_fds`` runs on the syncer thread; reads run anywhere.
    """

    def __init__(
        self,
        home: Home,
        *,
        durability: str = "fsync",
        clock: Clock = utc_now,
        max_event_bytes: int = 4 * 1024 * 1024,
        open_files: int = 256,
        on_change: Callable[[SessionInfo], None] | None = None,
        on_remove: Callable[[str], None] | None = None,
    ) -> None:
        self.home = home
        self.durability = durability
        self.clock = clock
        self.max_event_bytes = max_event_bytes
        self.open_files = open_files
        self.on_change = on_change or (lambda info: None)
        self.on_remove = on_remove or (lambda session_id: None)
        self.locations: dict[str, Location] = {}
        self._writers: OrderedDict[str, _Writer] = OrderedDict()
        self._read_only: set[str] = set()
        self._unsynced: set[str] = set()  # written since the last sync pass began
        self._inflight: Counter[str] = Counter()  # in sync passes now running
        # the size and mtime of files lately written whole, so the watcher knows them
        self.placed: OrderedDict[str, tuple[int, int]] = OrderedDict()

    # -- discovery ---------------------------------------------------------------

    def scan(self) -> list[tuple[str, str, Path, os.stat_result]]:
        """List every live transcript and remember where every session (or its trash) is."""
        found: list[tuple[str, str, Path, os.stat_result]] = []
        self.locations.clear()
        root = self.home.sessions
        ensure_dir(root)
        for slug in fs.names(root, folders=True):
            if slug.startswith("."):
                continue
            folder = root / slug
            for name in _jsonl_names(folder):
                stat = fs.lstat(folder / name)
                if stat is None:
                    continue
                found.append((name[:-6], slug, folder / name, stat))
                self.locations[name[:-6]] = Location(slug)
            for name in _jsonl_names(folder / TRASH):
                self.locations.setdefault(name[:-6], Location(slug, trashed=True))
        return found

    def _live_path(self, session_id: str) -> Path:
        check_session_id(session_id)
        where = self.locations.get(session_id)
        if where is None or where.trashed:
            raise SessionNotFound(f"no session {session_id}")
        return self.home.session_path(where.slug, session_id)

    # -- creation ----------------------------------------------------------------

    def _new_header(
        self,
        *,
        repo_root: str,
        session_id: str | None = None,
        cwd: str | None = None,
        model: str | None = None,
        aster_version: str | None = None,
        title: str | None = None,
        created_at: str | None = None,
        extra: dict[str, Any] | None = None,
        roots: dict[str, tuple[str, str]] | None = None,
    ) -> tuple[dict[str, Any], bytes, str]:
        """A new session's header, its line and its project slug; checked, nothing written.
        ``roots`` keeps each repo root's normal form and slug across calls (an import)."""
        known = roots.get(repo_root) if roots is not None else None
        if known is None:
            normal = normalize_repo_root(repo_root)
            known = (normal, project_slug(normal))
            if roots is not None:
                roots[repo_root] = known
        root, slug = known
        sid = check_session_id(session_id) if session_id else str(ULID())
        if sid in self.locations:
            where = "in the trash" if self.locations[sid].trashed else "already"
            raise SessionExists(f"session {sid} exists {where}")
        header: dict[str, Any] = {
            "type": "session",
            "seq": 0,
            "id": sid,
            "v": FORMAT_VERSION,
            "created_at": created_at or format_ts(self.clock()),
            "cwd": cwd if cwd is not None else repo_root,
            "repo_root": root,
            "model": model,
            "aster_version": aster_version or __version__,
            "title": title,
        }
        for key, value in (extra or {}).items():
            if key in RESERVED_HEADER_KEYS:
                raise InvalidEvent(
                    f"header.{key}: set by the server; leave it out",
                    errors=[{"loc": f"header.{key}", "msg": "set by the server; leave it out"}],
                )
            header.setdefault(key, value)
        validate_header(header)
        try:
            data = orjson.dumps(header, option=_NL)
        except orjson.JSONEncodeError as exc:
            raise InvalidEvent(f"header: {exc}") from None
        return header, data, slug

    def create(self, **fields: Any) -> tuple[dict[str, Any], _Writer]:
        """Write a new session file holding only its header, durable before return.
        Returns the header and the session's writer, ready to ``install`` (writer thread),
        so the first append need not read back the file just written."""
        header, data, slug = self._new_header(**fields)
        sid = header["id"]
        folder = self.home.project_dir(slug)
        sync = self.durability != "none"
        ensure_dir(folder)  # a new folder is synced in its parent
        path = folder / f"{sid}.jsonl"
        try:
            write_new(path, data, sync=sync)
        except FileExistsError:
            raise SessionExists(f"session {sid} exists") from None
        except OSError as exc:
            raise _storage_error(exc, f"could not create session {sid}") from exc
        self.locations[sid] = Location(slug)
        info = SessionInfo(id=sid, slug=slug)
        info.absorb([header], [])
        info.offset = info.file_size = len(data)
        info.lines = 1
        fd = fs.open_file(path, os.O_RDWR | os.O_APPEND)
        info.file_mtime_ns = os.fstat(fd).st_mtime_ns
        self.on_change(replace(info))
        writer = _Writer(path=path, fd=fd, size=len(data), info=info)
        writer.acked_size = writer.size
        writer.acked_info = replace(info)
        return header, writer

    def create_whole(
        self, sessions: list[tuple[dict[str, Any], list[tuple[list[dict[str, Any]], str | None]]]]
    ) -> list[tuple[dict[str, Any], SessionInfo] | None]:
        """Write whole sessions at once, each with all its events (an import; writer
        thread). Each given as the fields ``create`` takes and runs of events, a run being
        what one append with its idempotency key would have written. Every file is built
        and checked first, written under a temporary name beside its place and synced;
        only then is each linked into place and each folder synced once, so a session
        appears whole or not at all. A session whose id is already here is skipped
        (None). All or nothing: on any failure nothing stays."""
        built: list[tuple[dict[str, Any], SessionInfo, Path, bytes] | None] = []
        ids: set[str] = set()
        roots: dict[str, tuple[str, str]] = {}
        for fields, runs in sessions:
            sid = fields.get("session_id")
            if sid in self.locations or sid in ids:
                built.append(None)
                continue
            header, head, slug = self._new_header(**fields, roots=roots)
            ids.add(header["id"])
            info = SessionInfo(id=header["id"], slug=slug)
            info.absorb([header], [])
            info.lines = 1
            chunks = [head]
            for events, key in runs:
                lines = self._lines(events, info.last_seq + 1, key, info.first_user)
                chunks.extend(lines.chunks)
                _fold(info, lines)
            data = b"".join(chunks)
            info.offset = info.file_size = len(data)
            path = self.home.project_dir(slug) / f"{header['id']}.jsonl"
            built.append((header, info, path, data))
        todo = [b for b in built if b is not None]

        def known(mtimes: list[int]) -> None:
            # Known before they have their names, so the watcher never takes them for
            # another program's files.
            for (header, info, _path, _data), mtime in zip(todo, mtimes, strict=True):
                info.file_mtime_ns = mtime
                self.locations[header["id"]] = Location(info.slug)
                self.placed[header["id"]] = (info.file_size, mtime)

        try:
            done = write_whole(
                [(path, data) for _h, _i, path, data in todo],
                self.home.sessions,
                sync=self.durability != "none",
                before_placing=known,
            )
        except BaseException as exc:
            for header, _info, _path, _data in todo:
                self.locations.pop(header["id"], None)
                self.placed.pop(header["id"], None)
            if isinstance(exc, OSError):
                raise _storage_error(exc, "could not write the imported sessions") from exc
            raise
        while len(self.placed) > PLACED_KEPT:
            self.placed.popitem(last=False)
        out: list[tuple[dict[str, Any], SessionInfo] | None] = []
        placed = iter(zip(todo, done, strict=True))
        for item in built:
            if item is None:
                out.append(None)
                continue
            (header, info, _path, _data), ok = next(placed)
            if not ok:  # another program's file has its name: leave that file alone
                self.locations.pop(header["id"], None)
                self.placed.pop(header["id"], None)
                out.append(None)
                continue
            self.on_change(replace(info))
            out.append((header, info))
        return out

    # -- writers: loaded on the writer thread, used on the event loop -------------------

    def load_writer(self, session_id: str) -> _Writer:
        """Open a session for appending: read it, quarantine a torn tail (writer thread)."""
        path = self._live_path(session_id)
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
            info = SessionInfo(id=session_id, slug=self.locations[session_id].slug)
            info.absorb(parsed.lines, parsed.bad)
            if not parsed.lines or parsed.lines[0].get("type") != "session":
                info.state = "damaged"
            info.offset = parsed.good_end
            info.lines = parsed.line_count
            stat = os.fstat(fd)
            info.file_size, info.file_mtime_ns = stat.st_size, stat.st_mtime_ns
            writer = _Writer(path=path, fd=fd, size=parsed.good_end, info=info)
            writer.acked_size = writer.size
            writer.acked_info = replace(info)
            _load_keys(writer.keys, parsed.lines)
        except BaseException:
            os.close(fd)
            raise
        return writer

    def install(self, session_id: str, writer: _Writer) -> _Writer:
        """Make a loaded writer the session's one writer (event loop)."""
        current = self._writers.get(session_id)
        where = self.locations.get(session_id)
        if current is not None or where is None or where.trashed:
            os.close(writer.fd)  # lost a race with another load, or with a delete
            if current is None:
                raise SessionNotFound(f"no session {session_id}")
            return current
        self._writers[session_id] = writer
        if len(self._writers) > self.open_files:
            busy = self._unsynced | self._inflight.keys()
            for old_id in list(self._writers)[: len(self._writers) - self.open_files]:
                if old_id not in busy:
                    self._release(self._writers.pop(old_id))
        return writer

    def _release(self, writer: _Writer) -> None:
        """Close a writer, leaving the catalog the file's final size and mtime."""
        try:
            stat = os.fstat(writer.fd)
            if writer.acked_info is not None and writer.acked_size == stat.st_size:
                self.on_change(
                    replace(
                        writer.acked_info, file_size=stat.st_size, file_mtime_ns=stat.st_mtime_ns
                    )
                )
        finally:
            os.close(writer.fd)

    def writer(self, session_id: str) -> _Writer | None:
        writer = self._writers.get(session_id)
        if writer is not None:
            self._writers.move_to_end(session_id)
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

    # -- appends (event loop) -----------------------------------------------------------

    def append(self, request: AppendRequest) -> tuple[AppendResult, int]:
        """Write one request whole, or raise and leave the file as it was.

        Returns the result and the file size that must be durable before it may be
        acknowledged. The write is one ``os.write`` of the request's lines to the page
        cache; syncing is ``begin_sync``/``sync_fds``/``end_sync``'s job. In ``interval``
        and ``none`` modes the write is acknowledged at once.
        """
        sid = request.session_id
        writer = self._writers[sid]
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
        if info.state == "damaged":
            bad = ", ".join(str(n) for n in info.bad_lines[:5]) or "1 (header)"
            raise SessionDamaged(
                f"session {sid} has unreadable lines ({bad}); appends are refused until "
                "`aster-persist doctor --repair` quarantines them"
            )
        if request.if_match is not None and request.if_match != info.last_seq:
            raise PreconditionFailed(
                f"If-Match expected last seq {request.if_match}, but session {sid} is at "
                f"{info.last_seq}",
                headers={"ETag": f'"{info.last_seq}"'},
            )
        lines = self._lines(request.events, info.last_seq + 1, key, info.first_user)
        data = b"".join(lines.chunks)
        self._write_all(writer, data, sid)
        writer.size += len(data)
        _fold(info, lines)
        info.offset = info.file_size = writer.size
        result = AppendResult(lines.first, lines.last, lines.last + 1 - lines.first)
        if key is not None:
            writer.keys[key] = result
            writer.key_ends[key] = writer.size
            if len(writer.keys) > KEYS_KEPT:
                writer.key_ends.pop(writer.keys.popitem(last=False)[0], None)
        if self.durability != "none":
            self._unsynced.add(sid)
        if self.durability != "fsync":
            self._acknowledge(writer, writer.size)
        return result, writer.size

    def _lines(
        self, events: list[dict[str, Any]], first: int, key: str | None, first_user: str | None
    ) -> _Lines:
        """The stored lines of ``events`` numbered from ``first`` (``seq``, ``ts`` and the
        idempotency key added), and what a listing learns from them, in one pass."""
        now = format_ts(self.clock())
        dumps = orjson.dumps
        chunks = []
        batch = len(events)
        seq = first
        latest = now
        title = None
        for event in events:
            line = {"type": event["type"], "seq": seq, **event}
            line["seq"] = seq  # validation refuses a client seq; this keeps it so regardless
            ts = line.get("ts")
            if ts is None:
                line["ts"] = now
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
            if key is not None:
                line["idempotency_key"] = key
            if seq == first and batch > 1:
                # The first line of a batch says how long it is, so a batch that a power
                # loss cut short is recognised and moved aside like a torn line.
                line["batch_size"] = batch
            chunks.append(dumps(line, option=_NL))
            seq += 1
            # what a listing needs, folded in the same pass
            kind = line["type"]
            if kind == "title":
                title = line["title"]
            elif first_user is None and kind == "message" and line["role"] == "user":
                first_user = first_text(line.get("content"))
        biggest = max(map(len, chunks))
        if biggest > self.max_event_bytes:
            n = [len(c) for c in chunks].index(biggest)
            raise PayloadTooLarge(
                f"events[{n}] is {biggest} bytes stored; the limit is {self.max_event_bytes}"
            )
        return _Lines(chunks, first, seq - 1, latest, title, first_user)

    def _write_all(self, writer: _Writer, data: bytes, sid: str) -> None:
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
            raise _storage_error(exc, f"could not append to session {sid}") from exc

    def _acknowledge(self, writer: _Writer, size: int, info: SessionInfo | None = None) -> None:
        """Everything up to ``size`` is durable; ``info`` is the summary at that size."""
        if size > writer.acked_size:
            writer.acked_size = size
            writer.acked_info = info or replace(writer.info, bad_lines=list(writer.info.bad_lines))
            self.on_change(writer.acked_info)

    def acked(self, session_id: str, size: int) -> bool | None:
        """True once ``size`` bytes are durable, None when they never will be."""
        writer = self._writers.get(session_id)
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
            writer = self._writers.get(sid)
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
            writer = self._writers.get(sid)
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
                if writer.acked_info is not None:
                    writer.info = replace(writer.acked_info)
            writer.info.state = "read_only"
            self.on_change(replace(writer.info))

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

    # -- lifecycle: detach on the event loop, then move files on the writer thread -------

    def busy(self, session_id: str) -> bool:
        """True while the session has writes waiting for, or in, a sync."""
        return session_id in self._unsynced or self._inflight[session_id] > 0

    def release(self, session_id: str) -> None:
        """Close the session's writer (event loop, when not busy); the next append opens
        the file again and reads what another program added to it."""
        writer = self._writers.pop(session_id, None)
        if writer is not None:
            os.close(writer.fd)

    def detach(self, session_id: str) -> Location:
        """Close the session's writer and hide it from appends (event loop, when not busy)."""
        check_session_id(session_id)
        where = self.locations.get(session_id)
        if where is None:
            raise SessionNotFound(f"no session {session_id}")
        writer = self._writers.pop(session_id, None)
        if writer is not None:
            os.close(writer.fd)
        self.locations[session_id] = Location(where.slug, trashed=True)
        return where

    def trash(self, session_id: str, where: Location, reason: str = "deleted") -> None:
        """Move a detached session to its project's trash (writer thread)."""
        if where.trashed:
            raise SessionNotFound(f"no session {session_id}")
        try:
            path = self.home.session_path(where.slug, session_id)
            target = self.home.trash_path(where.slug, session_id)
            if not fs.exists(path):  # (a link there is refused before anything is made)
                raise SessionNotFound(f"session {session_id} is gone from disk")
            ensure_dir(target.parent)
            if fs.exists(target):
                raise SessionExists(f"a trashed copy of {session_id} is in the way")
            fs.rename(path, target)
        except BaseException:
            self.locations[session_id] = where  # refused: the session stays where it was
            raise
        self.on_remove(session_id)  # it has left the listing, whatever happens next
        stamp = orjson.dumps({"trashed_at": self.clock().timestamp(), "reason": reason})
        fs.atomic_write(_marker(target), stamp, sync=False)
        fsync_dir(path.parent)
        fsync_dir(target.parent)

    def restore(self, session_id: str) -> None:
        """Bring a session back from the trash (writer thread)."""
        check_session_id(session_id)
        where = self.locations.get(session_id)
        if where is None:
            raise SessionNotFound(f"no session {session_id}")
        if not where.trashed:
            raise SessionExists(f"session {session_id} is not in the trash")
        source = self.home.trash_path(where.slug, session_id)
        target = self.home.session_path(where.slug, session_id)
        if fs.exists(target):
            raise SessionExists(f"session {session_id} exists outside the trash")
        fs.rename(source, target)
        fs.unlink(_marker(source))
        fsync_dir(source.parent)
        fsync_dir(target.parent)
        self.locations[session_id] = Location(where.slug)
        self.on_change(self.summarize(session_id))

    def purge(self, session_id: str, where: Location, *, only_trashed: bool = False) -> bool:
        """Delete a detached session for good, live or trashed (writer thread).

        With ``only_trashed`` (prune), a session restored in the meantime is left alone;
        returns whether anything was deleted.
        """
        if only_trashed:
            now = self.locations.get(session_id)
            if now is None or not now.trashed or not where.trashed:
                return False
        path = (
            self.home.trash_path(where.slug, session_id)
            if where.trashed
            else self.home.session_path(where.slug, session_id)
        )
        fs.unlink(path)
        fs.unlink(_marker(path))
        fsync_dir(path.parent)
        self.locations.pop(session_id, None)
        self._read_only.discard(session_id)
        self.on_remove(session_id)
        return True

    def summarize(self, session_id: str) -> SessionInfo:
        _parsed, info = self.read(session_id)
        stat = fs.lstat(self._live_path(session_id))
        if stat is None:
            raise SessionNotFound(f"session {session_id} is gone from disk")
        info.file_size, info.file_mtime_ns = stat.st_size, stat.st_mtime_ns
        return info

    def trashed_before(self, cutoff: float) -> list[str]:
        """Trashed sessions moved to the trash at or before ``cutoff`` (epoch seconds)."""
        old = []
        for sid, where in list(self.locations.items()):
            if where.trashed:
                path = self.home.trash_path(where.slug, sid)
                try:
                    when = float(orjson.loads(fs.read_bytes(_marker(path)))["trashed_at"])
                except (OSError, ValueError, KeyError, TypeError, UnsafePath):
                    stat = fs.lstat(path)
                    if stat is None:
                        continue
                    when = stat.st_ctime
                if when <= cutoff:
                    old.append(sid)
        return sorted(old)

    def close(self) -> None:
        """Close every writer (event loop, after the last sync)."""
        while self._writers:
            _, writer = self._writers.popitem()
            self._release(writer)


def _jsonl_names(folder: Path) -> list[str]:
    """The session files (``<ULID>.jsonl``, regular files only) of a folder."""
    return [n for n in fs.names(folder, suffix=".jsonl") if len(n) == 32]


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


def _marker(trashed: Path) -> Path:
    """The file beside a trashed transcript that says when and why it went there."""
    return trashed.with_name(trashed.name + ".trashed")


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


def _storage_error(exc: OSError, what: str) -> AsterError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return InsufficientStorage(f"{what}: {exc.strerror}; the file is unchanged")
    return StorageFailed(f"{what}: {exc.strerror or 'I/O error'}; the file is unchanged")
