"""Every file the daemon touches in its data home, reached with no symbolic link followed.

A home is *confined* once it is opened (``confine(root)``). From then on every path below
it is reached from a descriptor of the home, one folder at a time, each opened with
``O_DIRECTORY | O_NOFOLLOW``, and the last component is opened with ``O_NOFOLLOW`` or
used through the ``*at`` call that does not follow it. A link anywhere below the home is
so found at the moment of use, by the call that would have followed it, never by a check
made beforehand that a swap could race. It raises ``UnsafePath`` naming the path inside
the home (409 ``symlink_refused``), before anything is changed; ``on_refused``
listeners (the journal) hear of each such path once.

The home's own path may pass through links (a home on another disk, reached by a link in
``~/.local/share``): it is opened once, when confined. Paths outside every confined home
(the files an import reads from the user's disk, a test's scratch files) are used as
given.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import logging
import os
import secrets
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import NotRegularFile
from .confinement import confine as confine
from .confinement import confined as confined
from .confinement import listen as listen
from .confinement import refuse as refuse
from .confinement import release as release
from .confinement import within as _find

log = logging.getLogger("aster_persist")

DIR_MODE = 0o700
FILE_MODE = 0o600
TEMP_MARK = ".aster-tmp-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return os.path.islink(name) if dir_fd == _AT_FDCWD else _lstat_link(name, dir_fd)
    except OSError:
        return False


def _lstat_link(name: str, dir_fd: int) -> bool:
    return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)


@contextlib.contextmanager
def parent(path: Path | str, *, create: bool = False) -> Iterator[tuple[int, str]]:
    """The folder of ``path`` as an open descriptor, and the last component's name.

    Outside a confined home the descriptor is ``AT_FDCWD`` and the name the whole path.
    With ``create``, missing folders are made (0700) and each new one's parent synced."""
    text = os.fspath(path)
    found = _find(text)
    if found is None:
        if create:
            _make_plain(os.path.dirname(text))
        yield _AT_FDCWD, text
        return
    home, parts = found
    parts = parts or ["."]  # the home itself: its own descriptor, and "."
    fd = os.dup(home.fd)
    try:
        for i, part in enumerate(parts[:-1]):
            child = _descend(fd, part, os.path.join(home.root, *parts[: i + 1]), create)
            os.close(fd)
            fd = child
        yield fd, parts[-1]
    finally:
        os.close(fd)


def _descend(fd: int, part: str, path: str, create: bool) -> int:
    """Open folder ``part`` of ``fd``, refusing a link; with ``create``, make it first."""
    try:
        return os.open(part, _DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
        with contextlib.suppress(FileExistsError):
            os.mkdir(part, DIR_MODE, dir_fd=fd)
            os.fsync(fd)
        return _descend(fd, part, path, False)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(part, fd):
            raise refuse(path) from None
        raise


def _make_plain(folder: str) -> None:
    if folder and not os.path.isdir(folder):
        os.makedirs(folder, DIR_MODE, exist_ok=True)


def relative(path: Path | str) -> str:
    """``path`` as it is named inside its home (the whole path outside every home)."""
    return _rel(path)


def _rel(path: Path | str) -> str:
    text = os.fspath(path)
    found = _find(text)
    return "/".join(found[1]) if found else text


def _leaf_error(exc: OSError, name: str, dir_fd: int, path: Path | str) -> BaseException:
    """A link met at the last name as its refusal; any other error as it is. A link
    there gives ELOOP to an open, ENOTDIR to a folder's, EEXIST to a create or a link."""
    loop = (errno.ELOOP, errno.ENOTDIR, errno.EEXIST)
    if exc.errno in loop and _is_link(name, dir_fd) and confined(path):
        return refuse(path)
    return exc


# -- files -------------------------------------------------------------------------


def open_file(path: Path | str, flags: int, mode: int = FILE_MODE, *, create: bool = False) -> int:
    """``os.open`` of ``path`` with no link followed; ``create`` makes missing folders.
    Anything but a regular file (a pipe, a socket, a device) is refused, never waited
    on: it is opened without blocking, and looked at before it is used."""
    with parent(path, create=create) as (fd, name):
        try:
            opened = os.open(name, flags | _NO_WAIT, mode, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a pipe with no reader, opened to write
                raise not_regular(path) from None
            raise _leaf_error(exc, name, fd, path) from None
    kind = stat.S_IFMT(os.fstat(opened).st_mode)
    if kind != stat.S_IFREG and not (kind == stat.S_IFDIR and flags & os.O_DIRECTORY):
        os.close(opened)
        raise not_regular(path)
    if not flags & os.O_NONBLOCK:
        fcntl.fcntl(opened, fcntl.F_SETFL, fcntl.fcntl(opened, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return opened


_NO_WAIT = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def not_regular(path: Path | str) -> NotRegularFile:
    """The error for a pipe, socket or device at ``path``, logged once per path."""
    found = _find(os.fspath(path))
    rel = "/".join(found[1]) if found else os.fspath(path)
    error = NotRegularFile(
        f"{rel} is not a regular file (a pipe, a socket or a device); the data home never "
        "opens one: remove it"
    )
    with _SAID:
        first = rel not in _NOT_REGULAR
        _NOT_REGULAR.add(rel)
    if first:
        log.warning("%s", error.detail)
    return error


_NOT_REGULAR: set[str] = set()
_SAID = threading.Lock()


def read_bytes(path: Path | str, start: int = 0, end: int | None = None) -> bytes:
    """The bytes of ``path`` from ``start`` to ``end`` (its size when None)."""
    fd = open_file(path, os.O_RDONLY)
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


def read_fd(fd: int) -> bytes:
    """Every byte of an open file, read from its start."""
    size = os.fstat(fd).st_size
    chunks, pos = [], 0
    while pos < size:
        chunk = os.pread(fd, size - pos, pos)
        if not chunk:
            break
        chunks.append(chunk)
        pos += len(chunk)
    return b"".join(chunks)


def read_or_none(path: Path | str) -> bytes | None:
    """The bytes of ``path``, or None when it or a folder above it is missing."""
    try:
        return read_bytes(path)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_temp(path: Path | str, data: bytes, *, sync: bool = True) -> str:
    """A new file beside ``path`` holding ``data`` (synced), made with any missing
    folders; returns its path. The caller renames or removes it."""
    folder = os.path.dirname(os.fspath(path))
    name = os.path.basename(os.fspath(path))
    for _ in range(16):
        tmp = os.path.join(folder, f"{TEMP_MARK}{name}.{secrets.token_hex(6)}")
        try:
            _create(tmp, data, sync=sync, create=True)
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"no free temporary name beside {_rel(path)}")


def _create(path: Path | str, data: bytes, *, sync: bool, create: bool = False) -> None:
    """A new file ``path`` holding ``data`` (synced when ``sync``), whole or not at all;
    FileExistsError if the name is taken."""
    fd = open_file(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, create=create)
    try:
        write_all(fd, data)
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        unlink(path)
        raise
    os.close(fd)


def atomic_write(path: Path | str, data: bytes, *, sync: bool = True) -> None:
    """Replace ``path`` whole: a temp file beside it, fsync, rename, fsync the folder."""
    tmp = write_temp(path, data, sync=sync)
    try:
        replace(tmp, path)
    except BaseException:
        unlink(tmp)
        raise
    if sync:
        fsync_dir(os.path.dirname(os.fspath(path)))


def write_new(path: Path | str, data: bytes, *, sync: bool = True) -> None:
    """Create ``path`` with ``data``, whole or not at all: written (and synced) under a
    temporary name beside it, then linked into place, so a crash at any point leaves the
    name free or the file whole, never a file cut short that takes the name (a session
    header half written). FileExistsError if the name is taken. Durable when ``sync``."""
    tmp = write_temp(path, data, sync=sync)
    try:
        link(tmp, path)
    finally:
        unlink(tmp)
    if sync:
        fsync_dir(os.path.dirname(os.fspath(path)))


# -- names -------------------------------------------------------------------------


def lstat(path: Path | str) -> os.stat_result | None:
    """The status of ``path`` itself (a link is not followed), None when missing;
    a link among the folders above it is refused."""
    try:
        with parent(path) as (fd, name):
            return os.stat(name, dir_fd=fd if fd != _AT_FDCWD else None, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def exists(path: Path | str) -> bool:
    """Whether anything has the name ``path``; a link there is refused."""
    st = lstat(path)
    if st is not None and stat.S_ISLNK(st.st_mode) and confined(path):
        raise refuse(path)
    return st is not None


def same_file(fd: int, path: Path | str) -> bool:
    """Whether the open file ``fd`` is still the file named ``path`` (not moved away,
    not replaced by a link or another file)."""
    st = lstat(path)
    mine = os.fstat(fd)
    return st is not None and (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def is_dir(path: Path | str) -> bool:
    """Whether ``path`` is a real folder; a link at ``path`` is refused."""
    st = lstat(path)
    if st is not None and stat.S_ISLNK(st.st_mode) and confined(path):
        raise refuse(path)
    return st is not None and stat.S_ISDIR(st.st_mode)


def check(path: Path | str) -> None:
    """Refuse ``path`` when it, or a folder above it, is a link (missing is fine)."""
    is_dir(path)


def ensure_dir(path: Path | str) -> None:
    """Make the folder ``path`` and any missing above it (0700), each new one synced in
    its parent; a link on the way is refused."""
    text = os.fspath(path)
    if _find(text) is None:
        _make_plain(text)
        return
    with parent(os.path.join(text, "_"), create=True):  # every folder of text is walked
        pass


def fsync_dir(path: Path | str) -> None:
    """fsync the folder ``path`` (the home itself included)."""
    fd = open_file(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def entries(path: Path | str) -> list[tuple[str, os.stat_result]]:
    """The name and status of each entry of the folder ``path``, by name (links not
    followed); empty when it is missing."""
    try:
        fd = open_file(path, os.O_RDONLY | os.O_DIRECTORY)
    except (FileNotFoundError, NotADirectoryError):
        return []
    try:
        out = []
        for name in os.listdir(fd):
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            out.append((name, st))
        return sorted(out, key=lambda entry: entry[0])
    finally:
        os.close(fd)


def listdir(path: Path | str) -> list[tuple[str, int]]:
    """``(name, st_mode)`` of each entry of the folder ``path`` (links not followed);
    empty when it is missing."""
    return [(name, st.st_mode) for name, st in entries(path)]


def names(path: Path | str, *, suffix: str = "", folders: bool = False) -> list[str]:
    """Names of the regular files (or with ``folders``, real folders) in ``path``; a
    link among them with that ending is reported (``refuse``) and left out, and so is
    a pipe, a socket or a device (``not_regular``)."""
    return list(statuses(path, (suffix,), folders=folders))


def statuses(
    path: Path | str, suffixes: tuple[str, ...], *, folders: bool = False
) -> dict[str, os.stat_result]:
    """``names`` of any of the endings ``suffixes``, each with its status as listed (one
    reading of the folder, however many files it holds)."""
    want = stat.S_ISDIR if folders else stat.S_ISREG
    out = {}
    for name, st in entries(path):
        if not name.endswith(suffixes):
            continue
        mode = st.st_mode
        if stat.S_ISLNK(mode) and confined(path):
            refuse(os.path.join(os.fspath(path), name))
        elif want(mode):
            out[name] = st
        elif not stat.S_ISDIR(mode) and not stat.S_ISREG(mode) and confined(path):
            not_regular(os.path.join(os.fspath(path), name))  # said, and left out
    return out


def unlink(path: Path | str, *, missing_ok: bool = True) -> None:
    """Remove the name ``path`` (a link there is removed, never followed)."""
    try:
        with parent(path) as (fd, name):
            os.unlink(name, dir_fd=fd if fd != _AT_FDCWD else None)
    except (FileNotFoundError, NotADirectoryError):
        if not missing_ok:
            raise


def rmdir(path: Path | str) -> None:
    with parent(path) as (fd, name):
        os.rmdir(name, dir_fd=fd if fd != _AT_FDCWD else None)


def replace(source: Path | str, target: Path | str) -> None:
    """Rename ``source`` to ``target``, replacing a file there; neither is followed."""
    _rename(source, target, os.replace)


def rename(source: Path | str, target: Path | str) -> None:
    """Rename ``source`` to ``target`` (the caller has made sure nothing has that name)."""
    _rename(source, target, os.rename)


def link(source: Path | str, target: Path | str) -> None:
    """Give the file ``source`` a second name ``target``; FileExistsError if taken."""
    with parent(source) as (sfd, sname), parent(target) as (tfd, tname):
        try:
            os.link(sname, tname, src_dir_fd=_fd(sfd), dst_dir_fd=_fd(tfd), follow_symlinks=False)
        except OSError as exc:
            raise _leaf_error(exc, tname, tfd, target) from None


def _rename(source: Path | str, target: Path | str, call: Callable[..., None]) -> None:
    with parent(source) as (sfd, sname), parent(target) as (tfd, tname):
        src = os.stat(sname, dir_fd=_fd(sfd), follow_symlinks=False)
        if stat.S_ISLNK(src.st_mode) and confined(source):
            raise refuse(source)
        if _is_link(tname, tfd) and confined(target):
            raise refuse(target)  # a link is never replaced in silence
        call(sname, tname, src_dir_fd=_fd(sfd), dst_dir_fd=_fd(tfd))


def _fd(fd: int) -> int | None:
    return None if fd == _AT_FDCWD else fd


_libc: ctypes.CDLL | None = None


def exchange(first: Path | str, second: Path | str) -> bool:
    """Swap the files named ``first`` and ``second`` in one step (``renameat2`` with
    ``RENAME_EXCHANGE``); False where the system or filesystem cannot."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(None, use_errno=True)
            _libc.renameat2.argtypes = [
                ctypes.c_int,
                ctypes.c_char_p,
                ctypes.c_int,
                ctypes.c_char_p,
                ctypes.c_uint,
            ]
        except (OSError, AttributeError):
            return False
    try:
        call = _libc.renameat2
    except AttributeError:
        return False
    with parent(first) as (afd, aname), parent(second) as (bfd, bname):
        if call(afd, os.fsencode(aname), bfd, os.fsencode(bname), _RENAME_EXCHANGE) == 0:
            return True
        err = ctypes.get_errno()
        if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EPERM):
            return False
        raise OSError(err, os.strerror(err), _rel(second))
