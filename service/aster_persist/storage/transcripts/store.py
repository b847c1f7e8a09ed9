"""``TranscriptStore``: all session files of one data home, over four objects it holds.

``Places`` knows where every session is and in which form; ``Writers`` holds the open
files, appends to them and keeps the sync bookkeeping; ``Trash`` detaches, trashes,
restores and purges; ``Forms`` keeps cold sessions compressed and makes them plain
again before they are written; ``Copies`` makes whole a copy that refers to another
session's events, before that session goes for good.
The store makes new sessions (one header line, or whole files for an import, each
appearing whole or not at all) and reads what was acknowledged.

Threads: appends and sync bookkeeping run on the event loop (they only copy to the
page cache); loading a session, creating, moving and deleting files run on the single
writer thread; ``sync_fds`` runs on the syncer thread; reads run anywhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
from ulid import ULID

from ... import __version__
from ...errors import BaseMissing, InvalidEvent, SessionExists, SessionNotFound
from ...schemas.clock import Clock, format_ts, utc_now
from ...schemas.events import RESERVED_HEADER_KEYS
from ...schemas.names import check_session_id, project_slug
from ...schemas.validation import FORMAT_VERSION, validate_header
from .. import fs
from ..home import Home, ensure_dir, normalize_repo_root
from ..jsonl import Parsed, parse, read_bytes, write_new, write_whole
from ..packed import Compressed
from ..summary import SessionInfo
from . import copies
from .copies import Copies, Ref
from .forms import Forms, OnForm
from .lifecycle import Trash
from .places import Found, Places
from .records import (
    NL,
    Location,
    OnChange,
    Writer,
    Written,
    fold,
    incomplete_batch,
    storage_error,
)
from .writers import Writers


class TranscriptStore:
    """All session files of one data home."""

    def __init__(
        self,
        home: Home,
        *,
        durability: str = "fsync",
        clock: Clock = utc_now,
        max_event_bytes: int = 4 * 1024 * 1024,
        open_files: int = 256,
        on_change: OnChange | None = None,
        on_remove: Callable[[str], None] | None = None,
        on_form: OnForm | None = None,
    ) -> None:
        self.home = home
        self.durability = durability
        self.clock = clock
        self.on_change: OnChange = on_change or (lambda info, written=(): None)
        self._places = Places(home)
        self._forms = Forms(
            self._places,
            sync=durability != "none",
            on_form=on_form or (lambda sid, op, slug, detail: None),
        )
        self._writers = Writers(
            self._places,
            durability=durability,
            clock=clock,
            max_event_bytes=max_event_bytes,
            open_files=open_files,
            on_change=self.on_change,
            unpack=self._forms.unpack,
        )
        self._trash = Trash(
            self._places, self._writers, clock=clock, on_remove=on_remove or (lambda sid: None)
        )
        told = on_form or (lambda sid, op, slug, detail: None)
        self._copies = Copies(
            self._places,
            sync=durability != "none",
            on_whole=lambda sid, slug, detail: told(sid, "session.made_whole", slug, detail),
        )
        # what the objects it holds answer for it
        self.locations = self._places.locations  # each session's folder, live or trashed
        self.placed = self._places.placed  # files lately written whole: (size, mtime)
        self.live_path = self._places.live_path  # a live session's file (404 otherwise)
        self.load_writer = self._writers.load_writer  # (a compressed session made plain)
        self.path_of = self._places.path_of  # a session's file in the form it is in now
        self.content_size = self._places.content_size
        self.settle = self._forms.settle  # at start: one form of each session found in two
        self.compress = self._forms.compress
        self.install = self._writers.install
        self.writer = self._writers.writer
        self.append = self._writers.append
        self.acked = self._writers.acked
        self.busy = self._writers.busy
        self.release = self._writers.release
        self.pending_sync = self._writers.pending_sync
        self.begin_sync = self._writers.begin_sync
        self.sync_fds = self._writers.sync_fds
        self.end_sync = self._writers.end_sync
        self.close = self._writers.close
        self.detach = self._trash.detach
        self.trash = self._trash.trash
        self.trashed_header = self._trash.trashed_header
        self.purge = self._trash.purge
        self.trashed_before = self._trash.trashed_before
        self.trashed_referring_to = self._copies.trashed_referring_to  # (the catalog: live)

    def scan(self) -> list[Found]:
        """Every live transcript on disk, each session's place and form remembered."""
        return self._places.scan()

    def pack(self, session_id: str, made: Compressed, detail: dict[str, Any]) -> bool:
        """Put a session's compressed copy in place of its plain file (writer thread; see
        ``Forms.pack``), and tell the index of the file it is now."""
        if self._writers.writer(session_id) is not None:  # appended to since: not cold
            fs.unlink(made.temp)
            return False
        if not self._forms.pack(session_id, made, detail):
            return False
        self.on_change(self.summarize(session_id))
        return True

    def make_whole(self, session_id: str) -> bool:
        """Write the events a copy refers to into it (writer thread; see
        ``Copies.make_whole``: the caller has closed its writer), and tell the index of
        the file it is now."""
        if not self._copies.make_whole(session_id):
            return False
        where = self._places.locations.get(session_id)
        if where is not None and not where.trashed:
            self.on_change(self.summarize(session_id))
        return True

    @property
    def open_count(self) -> int:
        """How many transcripts are held open for appends."""
        return self._writers.open_count

    @property
    def max_event_bytes(self) -> int:
        return self._writers.max_event_bytes

    def restore(self, session_id: str) -> None:
        """Bring a session back from the trash (writer thread)."""
        self._trash.restore(session_id)
        self.on_change(self.summarize(session_id))

    def summarize(self, session_id: str) -> SessionInfo:
        _parsed, info = self.read(session_id)
        size = self._places.content_size(session_id)
        if size is None:
            raise SessionNotFound(f"session {session_id} is gone from disk")
        info.file_size, info.file_mtime_ns = size
        return info

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
        base: Ref | None = None,
        machine: str | None = None,
        project_key: str | None = None,
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
        sid = check_session_id(session_id) if session_id is not None else str(ULID())
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
        if base is not None:  # a copy: the events it refers to instead of holding them
            header[copies.BASE] = base.field()
        if machine is not None:  # the team's copy of another machine's session
            header["machine"] = machine
        if project_key is not None:  # ... and its project, whatever its path here
            header["project_key"] = project_key
        validate_header(header)
        try:
            data = orjson.dumps(header, option=NL)
        except orjson.JSONEncodeError as exc:
            raise InvalidEvent(f"header: {exc}") from None
        return header, data, slug

    def create(self, **fields: Any) -> tuple[dict[str, Any], Writer]:
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
            raise storage_error(exc, f"could not create session {sid}") from exc
        self.locations[sid] = Location(slug)
        info = SessionInfo(id=sid, slug=slug)
        info.absorb([header], [])
        info.offset = info.file_size = len(data)
        info.lines = 1
        fd = fs.open_file(path, os.O_RDWR | os.O_APPEND)
        info.file_mtime_ns = os.fstat(fd).st_mtime_ns
        self.on_change(replace(info), [Written(0, len(data), [header], [len(data)])])
        writer = Writer(path=path, fd=fd, size=len(data), info=info)
        writer.acked_size = writer.size
        writer.acked_info = replace(info)
        return header, writer

    def set_aside_unborn(self, session_id: str) -> str | None:
        """Move aside a session file that holds no whole line (its header never written
        whole: a create cut short, never acknowledged) as ``<id>.jsonl.torn-<ts>``, so a
        retry of the create with the same id finds the name free; the new name, or None
        when the file is gone or holds a whole line now (writer thread)."""
        where = self.locations.get(session_id)
        if where is None or where.trashed:
            return None
        path = self.home.session_path(where.slug, session_id)
        data = fs.read_or_none(path)
        if data is None or b"\n" in data:
            return None
        stamp = format_ts(self.clock()).replace(":", "").replace("-", "")
        aside = path.with_name(f"{path.name}.torn-{stamp}")
        fs.link(path, aside)
        fs.unlink(path)
        fs.fsync_dir(path.parent)
        del self.locations[session_id]
        return aside.name

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
        records: dict[str, list[dict[str, Any]]] = {}  # each file's lines, for the index
        sizes: dict[str, list[int]] = {}  # and the bytes of each
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
            base = copies.ref_of(header)
            if base is not None:  # its own events go on after those it refers to
                for event in copies.base_events(self.home.project_dir(slug), base):
                    info.absorb([event], [])
            info.lines = 1
            chunks = [head]
            records[header["id"]] = kept = [header]
            events = [event for run, _key in runs for event in run]
            if events:  # every run in one pass, each event with its run's key
                lines = self._writers.lines(
                    events,
                    info.last_seq + 1,
                    None,
                    info.naming,
                    keys=[key for run, key in runs for _event in run],
                    runs=[len(run) for run, _key in runs],
                )
                chunks.extend(lines.chunks)
                kept.extend(lines.records)
                fold(info, lines)
            sizes[header["id"]] = [len(chunk) for chunk in chunks]
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
                raise storage_error(exc, "could not write the imported sessions") from exc
            raise
        self._places.trim()
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
            sid = header["id"]
            self.on_change(replace(info), [Written(0, info.offset, records[sid], sizes[sid])])
            out.append((header, info))
        return out

    # -- reads (any thread) ---------------------------------------------------------------

    def _bytes(self, session_id: str, start: int, end: int | None) -> tuple[Path, bytes]:
        """Acknowledged bytes ``start``..``end`` of a live session (to its acknowledged end
        when None), and the file they came from; read again from the other form when the
        session changed form while they were read."""
        path = self._places.live_path(session_id)
        while True:
            acked = self._writers.acked_size(session_id)
            stop = end if acked is None else acked if end is None else min(end, acked)
            try:
                return path, read_bytes(path, start, stop)
            except FileNotFoundError:
                now = self._places.live_path(session_id)
                if now == path:
                    raise SessionNotFound(f"no session {session_id}") from None
                path = now

    def read(self, session_id: str) -> tuple[Parsed, SessionInfo]:
        """The readable lines of a session (what was acknowledged), and its summary."""
        path, data = self._bytes(session_id, 0, None)
        slug = path.parent.name  # not looked up again: a purge may drop it while we read
        parsed = parse(data)
        cut = incomplete_batch(parsed)
        if cut is not None:
            parsed = parse(data[:cut])
        parsed, missing = copies.expanded_or_own(parsed, path.parent)
        info = SessionInfo(id=session_id, slug=slug)
        info.absorb(parsed.lines, parsed.bad)
        if missing or not parsed.lines or parsed.lines[0].get("type") != "session":
            info.state = "damaged"
        if self._writers.read_only(session_id):
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
        _path, data = self._bytes(session_id, offset, until)
        parsed = parse(data, base=offset)
        cut = incomplete_batch(parsed)
        if cut is not None:  # a batch a crash cut short is not there (as ``read`` says)
            parsed = parse(data[: cut - offset], base=offset)
        return parsed.lines, parsed.good_end if parsed.line_count else offset

    def shared_of(self, session_id: str) -> list[tuple[str, int]]:
        """The sessions whose leading events a live session refers to, and through which
        seq of each (``copies.shared_of``)."""
        return [(r.session, r.through_seq) for r in copies.shared_of(self.live_path(session_id))]

    def export_bytes(self, session_id: str) -> bytes:
        """The session's transcript as one file holding all it shows (a copy's with the
        events it refers to in it)."""
        path, data = self._bytes(session_id, 0, None)
        try:
            return copies.whole_bytes(data, path.parent)
        except BaseMissing:
            return data  # what is left of it: its own lines (reading it says it is damaged)
