"""Reading JSONL that a crash may have torn, and whole-file atomic writes.

What reading promises (SPEC §3.3):

- the last line, when it has no final newline or is not a JSON object, is *torn*: it is
  left out and its byte range reported so the writer can quarantine it;
- any other line that is not a JSON object is *bad*: it is left out, reported, and the
  file counts as damaged; nothing is ever truncated away because of it;
- blank lines are ignored.
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from . import fs, packed
from .home import FILE_MODE, PACKED, ensure_dir, fsync_dir

TEMP_MARK = fs.TEMP_MARK
SYNC_THREADS = 4  # files synced at once by write_whole: the disk queues them together
WINDOW = 64  # files write_whole holds open at once, far below any descriptor limit
# link() errors of filesystems that have no hard links (vfat, exFAT, some network mounts)
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EMLINK, errno.EXDEV}


@dataclass
class Parsed:
    """The readable lines of a byte range, and what was wrong with the rest."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)  # file offset of each readable line
    good_end: int = 0  # offset just past the last complete, readable or bad, line
    torn: tuple[int, int] | None = None  # byte range of a torn tail
    bad: list[int] = field(default_factory=list)  # 1-based line numbers of bad lines
    line_count: int = 0  # complete lines seen, readable or not


def parse(data: bytes, *, base: int = 0, first_line: int = 1) -> Parsed:
    """Split ``data`` (starting at file offset ``base``) into lines and judge each one."""
    out = Parsed(good_end=base)
    if not data:
        return out
    pieces = data.split(b"\n")
    tail = pieces.pop()  # bytes after the last newline: empty when the data ends whole
    offset = base
    last_index = len(pieces) - 1
    for i, piece in enumerate(pieces):
        start = offset
        offset += len(piece) + 1
        number = first_line + i
        if not piece.strip():
            out.good_end = offset
            continue
        try:
            value = orjson.loads(piece)
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            out.lines.append(value)
            out.raw.append(piece)
            out.starts.append(start)
            out.good_end = offset
            out.line_count += 1
        elif i == last_index and not tail:
            out.torn = (start, offset)
        else:
            out.bad.append(number)
            out.good_end = offset
            out.line_count += 1
    if tail:
        start = offset
        end = offset + len(tail)
        if out.torn is None:
            out.torn = (start, end)
        else:
            out.torn = (out.torn[0], end)
    return out


def read_bytes(path: Path | str, start: int = 0, end: int | None = None) -> bytes:
    """Bytes ``start`` to ``end`` of a transcript's content, whichever form it is in
    (plain, or compressed: ``<ulid>.jsonl.zst``)."""
    if os.fspath(path).endswith(PACKED):
        return packed.read_range(path, start, end)
    return fs.read_bytes(path, start, end)


def stream_lines(path: Path | str) -> Iterator[bytes]:
    """A transcript's whole lines from its start, whichever form it is in, read a step at
    a time (a torn last piece, with no newline after it, is not one)."""
    chunks = packed.stream(path) if os.fspath(path).endswith(PACKED) else _plain_chunks(path)
    rest = b""
    for chunk in chunks:
        pieces = (rest + chunk).split(b"\n")
        rest = pieces.pop()
        yield from pieces


def _plain_chunks(path: Path | str) -> Iterator[bytes]:
    fd = fs.open_file(path, os.O_RDONLY)
    try:
        while chunk := os.read(fd, 1 << 20):
            yield chunk
    finally:
        os.close(fd)


write_new = fs.write_new
atomic_write = fs.atomic_write


def write_whole(
    files: list[tuple[Path, bytes]],
    root: Path,
    *,
    sync: bool = True,
    before_placing: Callable[[list[int]], None] | None = None,
) -> list[bool]:
    """Create many new files, each whole or not at all.

    Each is written under a temporary name beside its place and synced (``WINDOW`` open
    at a time, ``SYNC_THREADS`` syncing at once); ``before_placing`` then gets every
    file's mtime (ns); then each is linked into place, never over a file that is there,
    and each folder, and ``root`` above them, is synced once. Returns, per file, whether
    it was placed (False: a file already had its name). On failure nothing is left."""
    token = secrets.token_hex(6)
    temps: list[str] = []
    placed: list[Path] = []
    folders = sorted({path.parent for path, _data in files})
    pool = (
        ThreadPoolExecutor(SYNC_THREADS, thread_name_prefix="aster-import-sync") if sync else None
    )
    try:
        for folder in folders:
            ensure_dir(folder)
        mtimes: list[int] = []
        for start in range(0, len(files), WINDOW):
            fds: list[int] = []
            try:
                for path, data in files[start : start + WINDOW]:
                    tmp = f"{path.parent}/{TEMP_MARK}{path.name}.{token}"
                    fds.append(fs.open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
                    temps.append(tmp)
                    _write_all(fds[-1], data)
                if pool is not None:
                    list(pool.map(os.fsync, fds))
                mtimes.extend(os.fstat(fd).st_mtime_ns for fd in fds)
            finally:
                for fd in fds:
                    os.close(fd)
        if before_placing is not None:
            before_placing(mtimes)
        done = []
        for (path, _data), tmp in zip(files, temps, strict=True):
            try:
                _place(tmp, path)
            except FileExistsError:
                done.append(False)
                continue
            placed.append(path)
            done.append(True)
        while temps:
            fs.unlink(temps.pop())  # gone already if renamed
        if sync and placed:
            for folder in folders:
                fsync_dir(folder)
            fsync_dir(root)
    except BaseException:
        for path in placed:
            fs.unlink(path)
        for tmp in temps:
            fs.unlink(tmp)
        raise
    finally:
        if pool is not None:
            pool.shutdown()
    return done


def _place(tmp: str, path: Path) -> None:
    """Give ``tmp`` its final name ``path``; FileExistsError if something has it."""
    try:
        fs.link(tmp, path)
    except OSError as exc:
        if exc.errno not in _NO_LINKS:  # FileExistsError among them: raised as it is
            raise
        # A filesystem without hard links: rename, once nothing has the name.
        if fs.exists(path):
            raise FileExistsError(errno.EEXIST, "File exists", str(path)) from None
        fs.rename(tmp, path)


def remove_leftover_temps(folder: Path) -> int:
    """Delete temporary files an interrupted rewrite left behind; return how many."""
    removed = 0
    for dirpath, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "lost+found"]  # what doctor kept, it keeps
        for name in files:
            if name.startswith(TEMP_MARK):
                fs.unlink(os.path.join(dirpath, name))
                removed += 1
    return removed


_write_all = fs.write_all
