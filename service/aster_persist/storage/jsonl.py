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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .home import FILE_MODE, ensure_dir, fsync_dir

TEMP_MARK = ".aster-tmp-"
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


def read_bytes(path: Path, start: int = 0, end: int | None = None) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        if end is None:
            end = os.fstat(fd).st_size
        chunks = []
        pos = start
        while pos < end:
            chunk = os.pread(fd, min(end - pos, 1 << 22), pos)
            if not chunk:
                break
            chunks.append(chunk)
            pos += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_new(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Create ``path`` with ``data``; fail if it exists. Durable when ``sync``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    try:
        _write_all(fd, data)
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise
    os.close(fd)
    if sync:
        fsync_dir(path.parent)


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
                    fds.append(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
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
            Path(temps.pop()).unlink(missing_ok=True)  # gone already if renamed
        if sync and placed:
            for folder in folders:
                fsync_dir(folder)
            fsync_dir(root)
    except BaseException:
        for path in placed:
            path.unlink(missing_ok=True)
        for tmp in temps:
            Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        if pool is not None:
            pool.shutdown()
    return done


def _place(tmp: str, path: Path) -> None:
    """Give ``tmp`` its final name ``path``; FileExistsError if something has it."""
    try:
        os.link(tmp, path)
    except OSError as exc:
        if exc.errno not in _NO_LINKS:  # FileExistsError among them: raised as it is
            raise
        # A filesystem without hard links: rename, once nothing has the name.
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, "File exists", str(path)) from None
        os.rename(tmp, path)


def atomic_write(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Replace ``path`` whole: unique temp file beside it, fsync, rename, fsync the folder."""
    fd, tmp = _temp_beside(path)
    try:
        _write_all(fd, data)
        if sync:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        raise
    if sync:
        fsync_dir(path.parent)


def _temp_beside(path: Path) -> tuple[int, str]:
    for _ in range(16):
        tmp = str(path.parent / f"{TEMP_MARK}{path.name}.{secrets.token_hex(6)}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def remove_leftover_temps(folder: Path) -> int:
    """Delete temporary files an interrupted rewrite left behind; return how many."""
    removed = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            if name.startswith(TEMP_MARK):
                os.unlink(os.path.join(dirpath, name))
                removed += 1
    return removed


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
