"""The compressed form of a transcript: ``<ulid>.jsonl.zst``, one standard zstd frame
holding exactly the bytes of the ``.jsonl`` it replaces, with its content size and a
checksum in the frame, so ``zstdcat``, ``zstdgrep``, ``zstdless`` and ``zstd -t`` read it.

Making one (``compress``) reads the plain file once, writes the frame under a temporary
name beside it, syncs it and reads it back to compare byte for byte; what to do with it
then is the caller's. Reading one (``read_range``) gives the bytes of a range of the
content, as reading the plain file would: a small file is decompressed once and kept in
a cache bounded by bytes (keyed by the file's identity, so a file replaced is never read
stale); a large one is streamed to the range, never held whole.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import zstandard

from ..errors import StorageFailed
from . import fs
from .home import PACKED as SUFFIX

LEVEL = 9  # cold files are written once: ~0.07x of a transcript at ~140 MB/s here
CACHE_BYTES = 64 << 20  # decompressed content kept, all files together
CACHE_ONE = 8 << 20  # a file whose content is larger is streamed, never kept
_HEAD = 18  # the longest zstd frame header: where the content size is
_STEP = 1 << 20

Identity = tuple[int, int, int, int]  # device, inode, size, mtime (ns)


def is_packed(path: Path | str) -> bool:
    return os.fspath(path).endswith(SUFFIX)


def identity(stat: os.stat_result) -> Identity:
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


@dataclass(frozen=True)
class Compressed:
    """A plain file compressed: the synced, verified frame under a temporary name beside
    it, and which plain file it holds (its identity when it was read)."""

    temp: str
    plain: Path
    read_as: Identity
    size: int  # bytes of content
    packed_size: int  # bytes of the frame


def compress(plain: Path, *, sync: bool = True) -> Compressed:
    """Compress ``plain`` into a temporary file beside it, a step at a time (a large file
    is never held whole), synced, then read back and compared with the plain file step
    by step; ``StorageFailed`` (and nothing left) if it reads back differently."""
    fd = fs.open_file(plain, os.O_RDONLY)
    try:
        stat = os.fstat(fd)
        temp = f"{plain.parent}/{fs.TEMP_MARK}{plain.name}{SUFFIX}.{secrets.token_hex(6)}"
        out = fs.open_file(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            with open(out, "wb", closefd=False) as sink:
                compressor = zstandard.ZstdCompressor(
                    level=LEVEL, write_content_size=True, write_checksum=True
                )
                with compressor.stream_writer(sink, size=stat.st_size, closefd=False) as writer:
                    for chunk in _chunks(fd, stat.st_size):
                        writer.write(chunk)
            if sync:
                os.fsync(out)
            packed_size = os.fstat(out).st_size
        finally:
            os.close(out)
        try:
            _same(temp, fd, stat.st_size, plain.name)
        except BaseException:
            fs.unlink(temp)
            raise
    finally:
        os.close(fd)
    return Compressed(temp, plain, identity(stat), stat.st_size, packed_size)


def _chunks(fd: int, size: int) -> Iterator[bytes]:
    pos = 0
    while pos < size:
        chunk = os.pread(fd, min(size - pos, _STEP), pos)
        if not chunk:
            return
        yield chunk
        pos += len(chunk)


def _same(temp: str, plain_fd: int, size: int, name: str) -> None:
    """The compressed file ``temp`` holds exactly the ``size`` bytes of the open plain
    file, and is one whole frame (``StorageFailed`` otherwise)."""
    if _frame_size(fs.read_bytes(temp, 0, _HEAD)) != size:
        raise StorageFailed(f"the compressed copy of {name} did not read back whole")
    fd = fs.open_file(temp, os.O_RDONLY)
    with open(fd, "rb", closefd=True) as file:
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(file, read_size=_STEP)
            pos = 0
            while True:
                got = reader.read(_STEP)
                if not got:
                    break
                if got != os.pread(plain_fd, len(got), pos):
                    raise StorageFailed(f"the compressed copy of {name} did not read back whole")
                pos += len(got)
        except zstandard.ZstdError as exc:
            raise StorageFailed(f"the compressed copy of {name} cannot be read: {exc}") from None
    if pos != size:
        raise StorageFailed(f"the compressed copy of {name} did not read back whole")


def measure(plain: Path) -> tuple[int, int]:
    """The bytes of ``plain`` and what they would take compressed, a step at a time
    (nothing is written, and a large file is never held whole)."""
    fd = fs.open_file(plain, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        compressor = zstandard.ZstdCompressor(
            level=LEVEL, write_content_size=True, write_checksum=True
        ).compressobj(size=size)
        small = sum(len(compressor.compress(chunk)) for chunk in _chunks(fd, size))
        return size, small + len(compressor.flush())
    finally:
        os.close(fd)


def content_size_or_own(path: Path | str) -> int:
    """What a compressed transcript holds; its own size when it is not a zstd frame (it
    is listed all the same, and reading it says it is damaged)."""
    try:
        return content_size(path)
    except StorageFailed:
        return os.lstat(path).st_size


def content_size(path: Path | str) -> int:
    """The bytes of content a compressed file holds, from its frame header."""
    fd = fs.open_file(path, os.O_RDONLY)
    try:
        size = _frame_size(os.pread(fd, _HEAD, 0))
        if size >= 0:
            return size
        return len(_decompress(_read_fd(fd, os.fstat(fd).st_size)))
    finally:
        os.close(fd)


def read_range(path: Path | str, start: int = 0, end: int | None = None) -> bytes:
    """Bytes ``start`` to ``end`` (the content's end when None) of what ``path`` holds."""
    fd = fs.open_file(path, os.O_RDONLY)
    if end is not None and end <= start:
        os.close(fd)  # opened all the same: a missing file or a link is said as for a read
        return b""
    with open(fd, "rb", closefd=True) as file:
        stat = os.fstat(fd)
        key = (os.fspath(path), *identity(stat))
        whole = _CACHE.get(key)
        if whole is not None:
            return whole[start:end]
        head = os.pread(fd, _HEAD, 0)
        size = _frame_size(head)
        if size <= CACHE_ONE:  # (a frame that declares no size is read whole)
            whole = _decompress(_read_fd(fd, stat.st_size))
            _CACHE.put(key, whole)
            return whole[start:end]
        stop = size if end is None else min(end, size)
        want = max(0, stop - start)
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(file, read_size=_STEP)
            reader.seek(start)  # forward: decompressed and let go, a step at a time
            chunks: list[bytes] = []
            while want:
                chunk = reader.read(min(want, _STEP))
                if not chunk:
                    raise StorageFailed("a compressed transcript is cut short")
                chunks.append(chunk)
                want -= len(chunk)
        except zstandard.ZstdError as exc:
            raise StorageFailed(f"a compressed transcript cannot be read: {exc}") from None
        return b"".join(chunks)


def stream(path: Path | str) -> Iterator[bytes]:
    """What ``path`` holds, from its start, a step at a time (decompressed as it is read,
    never whole in memory)."""
    fd = fs.open_file(path, os.O_RDONLY)
    with open(fd, "rb", closefd=True) as file:
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(file, read_size=_STEP)
            while chunk := reader.read(_STEP):
                yield chunk
        except zstandard.ZstdError as exc:
            raise StorageFailed(f"a compressed transcript cannot be read: {exc}") from None


def _frame_size(head: bytes) -> int:
    """The content size a frame header declares; -1 when it declares none."""
    try:
        size = zstandard.frame_content_size(head)
    except zstandard.ZstdError:
        raise StorageFailed("a compressed transcript is not a zstd frame") from None
    return size if size >= 0 else -1


def _decompress(frame: bytes) -> bytes:
    """The content of a whole frame: a frame cut short, or one whose checksum or declared
    size does not match what it holds, is refused (``StorageFailed``), never read in part."""
    try:
        size = _frame_size(frame[:_HEAD])
        reader = zstandard.ZstdDecompressor().decompressobj()
        out: bytes = reader.decompress(frame)
        whole = reader.eof
    except zstandard.ZstdError as exc:
        raise StorageFailed(f"a compressed transcript cannot be read: {exc}") from None
    if not whole or 0 <= size != len(out):
        raise StorageFailed("a compressed transcript is cut short: it cannot be read whole")
    return out


def _read_fd(fd: int, size: int) -> bytes:
    return b"".join(_chunks(fd, size))


class _Cache:
    """Decompressed contents, the least lately read let go first past ``CACHE_BYTES``."""

    def __init__(self) -> None:
        self._items: OrderedDict[tuple[str, int, int, int, int], bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[str, int, int, int, int]) -> bytes | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[str, int, int, int, int], data: bytes) -> None:
        with self._lock:
            if key in self._items:
                return
            self._items[key] = data
            self._bytes += len(data)
            while self._bytes > CACHE_BYTES and self._items:
                _key, old = self._items.popitem(last=False)
                self._bytes -= len(old)


_CACHE = _Cache()
