"""Reading a folder of the user's (a followed folder, a tree to import) as the home is
read: nothing below the folder named is reached through a link. The folder itself is
the user's choice (it may be a link they made); below it, every name is opened one at
a time from the folder above with ``O_NOFOLLOW``, so a link anywhere on the way (a
folder or the file) is refused at the moment it is met, not only when it was looked
at, and a pipe or a device is never opened for reading (it could block)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class Refused(OSError):
    """A path below the folder named that is reached through a link, or is no file."""


def files(root: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """Every regular file below ``root`` whose name ends with one of ``suffixes``,
    sorted; no link followed, to a folder or to a file."""
    try:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        return sorted(root.joinpath(*parts) for parts in _walk(top, suffixes))
    finally:
        os.close(top)


def _walk(folder: int, suffixes: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                try:
                    inner = os.open(entry.name, DIRECTORY, dir_fd=folder)
                except OSError:  # replaced by a link (or gone) since it was listed
                    continue
                try:
                    for parts in _walk(inner, suffixes):
                        yield (entry.name, *parts)
                finally:
                    os.close(inner)
            elif entry.name.endswith(suffixes) and entry.is_file(follow_symlinks=False):
                yield (entry.name,)


def open_file(root: Path, path: Path) -> BinaryIO:
    """``path``, a regular file below ``root``, open for reading; ``Refused`` when a
    name on the way from ``root`` is a link, or the file is not a regular one."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        raise Refused(errno.EXDEV, "not below the folder followed", str(path)) from None
    if not parts or ".." in parts:
        raise Refused(errno.EXDEV, "not below the folder followed", str(path))
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in parts[:-1]:
            inner = _step(name, DIRECTORY, folder, path)
            os.close(folder)
            folder = inner
        fd = _step(parts[-1], FILE, folder, path)
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Refused(errno.EINVAL, "not a regular file", str(path))
    return os.fdopen(fd, "rb")


def _step(name: str, flags: int, folder: int, path: Path) -> int:
    try:
        return os.open(name, flags, dir_fd=folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(name, folder):
            raise Refused(errno.ELOOP, "reached through a link", str(path)) from None
        raise


def _is_link(name: str, folder: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=folder).st_mode)
    except OSError:
        return False
