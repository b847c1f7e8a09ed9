"""What the data home takes on disk, by kind and by session: one walk of its folders,
reading only names and sizes (no file is opened, no link followed)."""

from __future__ import annotations

import contextlib
import os
import stat as st
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .home import PACKED, TRASH

KINDS = (
    "plain",  # live transcripts, <ulid>.jsonl
    "compressed",  # live transcripts kept compressed, <ulid>.jsonl.zst
    "trash",  # sessions in a project's trash, with their markers
    "catalog",  # index/catalog.sqlite3 and its write-ahead log
    "vectors",  # index/vectors.bin (search by meaning)
    "blobs",  # large contents, stored once by their hash
    "journal",  # journal.jsonl
    "memory",  # memory files, live and archived
    "other",  # torn tails set aside, the learning queue, the lock, the token...
)


@dataclass
class Space:
    """Bytes by kind, and each live session's transcript bytes (either form)."""

    kinds: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    sessions: dict[str, int] = field(default_factory=dict)
    compressed: set[str] = field(default_factory=set)  # the ids kept compressed
    trashed: int = 0  # sessions in the trash

    @property
    def total(self) -> int:
        return sum(self.kinds.values())


def measure(root: Path) -> Space:
    """Walk the home below ``root``: each folder opened from the one above it without
    following a link (a link is counted as nothing and never entered)."""
    space = Space()
    try:
        top = os.open(root, _FOLDER)
    except OSError:
        return space
    try:
        for name, mode, size in _entries(top):
            if st.S_ISDIR(mode) and name == "sessions":
                with _folder(top, name) as fd:
                    _sessions(fd, space)
            elif st.S_ISDIR(mode):
                kind = {"index": "catalog", "blobs": "blobs", "memory": "memory"}.get(name, "other")
                with _folder(top, name) as fd:
                    for sub, sub_size in _files(fd):
                        vectors = name == "index" and sub.startswith("vectors")
                        space.kinds["vectors" if vectors else kind] += sub_size
            elif st.S_ISREG(mode):
                space.kinds["journal" if name == "journal.jsonl" else "other"] += size
    finally:
        os.close(top)
    return space


def _sessions(folder: int, space: Space) -> None:
    for slug, mode, _size in _entries(folder):
        if not st.S_ISDIR(mode):
            continue
        with _folder(folder, slug) as project:
            for name, file_mode, size in _entries(project):
                if name == TRASH and st.S_ISDIR(file_mode):
                    with _folder(project, TRASH) as trash:
                        for trashed, trashed_size in _files(trash):
                            space.kinds["trash"] += trashed_size
                            space.trashed += trashed.endswith((".jsonl", ".jsonl" + PACKED))
                elif not st.S_ISREG(file_mode):
                    continue
                elif len(name) == 32 and name.endswith(".jsonl"):
                    space.kinds["plain"] += size
                    space.sessions[name[:26]] = size
                elif len(name) == 36 and name.endswith(".jsonl" + PACKED):
                    space.kinds["compressed"] += size
                    space.sessions[name[:26]] = size
                    space.compressed.add(name[:26])
                else:
                    space.kinds["other"] += size


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@contextlib.contextmanager
def _folder(parent: int, name: str) -> Iterator[int]:
    """A folder opened from its parent's descriptor, never through a link (a folder that
    went away, or became a link, reads as empty)."""
    try:
        fd = os.open(name, _FOLDER, dir_fd=parent)
    except OSError:
        fd = -1
    try:
        yield fd
    finally:
        if fd >= 0:
            os.close(fd)


def _entries(folder: int) -> list[tuple[str, int, int]]:
    """Each entry of an open folder: name, mode (of the entry itself) and size."""
    if folder < 0:
        return []
    out = []
    try:
        with os.scandir(folder) as found:
            for entry in found:
                try:
                    info = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                out.append((entry.name, info.st_mode, info.st_size))
    except OSError:
        return out
    return out


def _files(folder: int) -> list[tuple[str, int]]:
    """Every regular file below an open folder (its name) and its size."""
    out = []
    for name, mode, size in _entries(folder):
        if st.S_ISDIR(mode):
            with _folder(folder, name) as sub:
                out.extend(_files(sub))
        elif st.S_ISREG(mode):
            out.append((name, size))
    return out
