"""Creating sessions: one new file holding its header, or whole files at once (an import).

A new session's file is durable before it is reported; an import links every file into
place only once all are written and synced, so each session appears whole or not at all.
Both run on the writer thread.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
from ulid import ULID

from ... import __version__
from ...errors import InvalidEvent, SessionExists
from ...schemas.events import RESERVED_HEADER_KEYS
from .. import fs
from ..events import FORMAT_VERSION, validate_header
from ..home import check_session_id, ensure_dir, normalize_repo_root, project_slug
from ..jsonl import write_new, write_whole
from ..summary import SessionInfo
from .base import _Store
from .clock import format_ts
from .records import _NL, PLACED_KEPT, Location, _fold, _storage_error, _Writer


class _Creation(_Store):
    """The creation part of ``TranscriptStore``."""

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
                lines = self._lines(events, info.last_seq + 1, key, info.naming)
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
