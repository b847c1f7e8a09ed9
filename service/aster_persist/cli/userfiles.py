"""The files the command line writes for the user, outside the data home: Claude Code's
settings, Codex's ``config.toml``, ``AGENTS.md``, exports, service units. They are the
user's, so each write keeps what is theirs, the same way for every one of them:

- a link is neither followed nor replaced: it is refused with a sentence naming the file
  it leads to, which the user can name instead (a settings file kept in a dotfiles
  folder is changed there only when asked for there, and the link keeps working);
- the file keeps its mode (a ``0600`` or ``0400`` file holding a key stays so) and its
  owner; a new one gets the mode asked for (``0600`` for what may hold secrets);
- the bytes are replaced all at once (a temporary file beside the target, synced, then
  renamed over it, the folder synced), so a crash leaves the old file or the new one,
  never half of either;
- what cannot be done so is refused with a sentence, the file left as it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

PRIVATE = 0o600  # a new file that may hold secrets (settings, exports)
SHARED = 0o644  # a new file that holds none (a service unit, AGENTS.md), less the umask


class UserFileError(Exception):
    """A user's file that could not be read or written as it must be; said in words."""


@dataclass(frozen=True)
class UserFile:
    """A file of the user's, named as they named it (``path``, maybe a link)."""

    path: Path

    @property
    def target(self) -> Path:
        """The file itself; a link is refused (the file it leads to may be shared by
        other projects or machines: the user names it if that is where they want it)."""
        path = Path(os.path.abspath(self.path.expanduser()))
        if path.is_symlink():
            try:
                leads = os.readlink(path)
            except OSError:
                leads = "?"
            raise UserFileError(
                f"{self.path} is a symbolic link (to {leads}); it is not written through: "
                "name the file it leads to, to change that one; it was left as it is"
            )
        return path

    def read(self) -> bytes | None:
        """The file's bytes, None if there is none; a link, a folder, a pipe or a device
        is refused, never opened for reading (a pipe could block)."""
        target = self.target
        try:
            fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise UserFileError(f"{self.path} cannot be read ({exc.strerror})") from None
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise UserFileError(f"{self.path} is not a regular file; it was left as it is")
            try:
                return handle.read()
            except OSError as exc:
                raise UserFileError(f"{self.path} cannot be read ({exc.strerror})") from None

    def write(self, data: bytes, *, new_mode: int = PRIVATE) -> Path:
        """Replace the file's bytes at once, keeping its mode and owner (a new file:
        ``new_mode``, less the umask when it is ``SHARED``); the file written."""
        target = self.target
        folder = target.parent
        if not folder.is_dir():
            raise UserFileError(f"cannot write {self.path}: there is no folder {folder}")
        try:
            info: os.stat_result | None = os.stat(target, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        except OSError as exc:
            raise UserFileError(f"cannot write {self.path} ({exc.strerror})") from None
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise UserFileError(f"{self.path} is not a regular file; it was left as it is")
        mode = stat.S_IMODE(info.st_mode) if info is not None else _new(new_mode)
        temporary = folder / f".{target.name}.aster-{os.getpid()}-{secrets.token_hex(4)}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(temporary, flags, 0o600)
        except OSError as exc:
            raise UserFileError(f"cannot write {self.path} ({exc.strerror})") from None
        try:
            try:
                _write_all(fd, data)
                if info is not None and (info.st_uid, info.st_gid) != _own(fd):
                    os.fchown(fd, info.st_uid, info.st_gid)  # theirs, as it was
                os.fchmod(fd, mode)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                temporary.unlink()
            why = "its owner cannot be kept" if exc.errno == errno.EPERM else exc.strerror
            raise UserFileError(f"cannot write {self.path} ({why}); it was left as it is") from None
        _sync_folder(folder)
        return target


def _new(mode: int) -> int:
    if mode != SHARED:
        return mode
    umask = os.umask(0)
    os.umask(umask)
    return mode & ~umask


def _own(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_uid, info.st_gid


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # some file systems refuse to open a folder so
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
