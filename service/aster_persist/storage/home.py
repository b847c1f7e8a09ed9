"""The data home: where it is, its layout, its lock, and the names allowed inside it.

Every path built from a request goes through this module: names are checked against
strict patterns and joined under the home, so nothing a client sends can reach outside
it. Folders are created 0700 and files 0600.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import HomeInUse, HomeUnavailable, InvalidName
from ..paths import resolve_home
from ..schemas.names import (
    REPO_ROOT_RE,
    check_session_id,
    check_slug,
)
from . import fs

log = logging.getLogger("aster_persist")

DIR_MODE = fs.DIR_MODE
FILE_MODE = fs.FILE_MODE
TRASH = ".trash"
PACKED = ".zst"  # after ``.jsonl``: a transcript kept compressed (``storage/packed.py``)


def main_worktree_root(root: str) -> str:
    """Resolve a linked git worktree to its main repository root, when visible.

    A linked worktree has a `.git` *file* reading ``gitdir: <main>/.git/worktrees/<name>``.
    """
    dot_git = os.path.join(root, ".git")
    try:
        if not os.path.isfile(dot_git) or os.path.islink(dot_git):
            return root
        with open(dot_git, encoding="utf-8") as handle:
            first = handle.readline(4096).strip()
    except OSError:
        return root
    if not first.startswith("gitdir:"):
        return root
    gitdir = first[len("gitdir:") :].strip()
    if not os.path.isabs(gitdir):
        gitdir = os.path.normpath(os.path.join(root, gitdir))
    parts = Path(gitdir).parts
    if len(parts) >= 3 and parts[-2] == "worktrees" and parts[-3] == ".git":
        main = str(Path(*parts[:-3]))
        if os.path.isdir(os.path.join(main, ".git")):
            return main
    return root


def normalize_repo_root(repo_root: str) -> str:
    """An absolute, normalized repository root; worktrees resolve to their main root."""
    if not isinstance(repo_root, str) or not repo_root or "\x00" in repo_root:
        raise InvalidName("repo_root must be a non-empty absolute path")
    if not is_utf8(repo_root):
        raise InvalidName("repo_root must be valid UTF-8 text")
    if len(repo_root) > 4096:
        raise InvalidName("repo_root is longer than 4096 characters")
    if not REPO_ROOT_RE.fullmatch(repo_root):
        raise InvalidName(f"repo_root must be an absolute path, got {repo_root[:100]!r}")
    root = os.path.normpath(repo_root)
    if root.startswith("//"):
        root = "/" + root.lstrip("/")
    return main_worktree_root(root)


def is_utf8(text: str) -> bool:
    """False for strings holding lone surrogates, which no file or JSON can carry."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


ensure_dir = fs.ensure_dir
fsync_dir = fs.fsync_dir


@dataclass
class Home:
    """An opened, locked data home."""

    root: Path
    degraded: str | None = None
    _lock_fd: int | None = field(default=None, repr=False)
    _cleanup: bool = field(default=False, repr=False)

    @property
    def sessions(self) -> Path:
        return self.root / "sessions"

    @property
    def index(self) -> Path:
        return self.root / "index"

    def project_dir(self, slug: str) -> Path:
        folder = self.sessions / check_slug(slug)
        fs.check(folder)
        return folder

    def session_path(self, slug: str, session_id: str, *, packed: bool = False) -> Path:
        """A live session's transcript: ``<ulid>.jsonl``, or ``.jsonl.zst`` when packed."""
        name = f"{check_session_id(session_id)}.jsonl{PACKED if packed else ''}"
        return self.project_dir(slug) / name

    def trash_path(self, slug: str, session_id: str, *, packed: bool = False) -> Path:
        trash = self.project_dir(slug) / TRASH
        fs.check(trash)
        return trash / f"{check_session_id(session_id)}.jsonl{PACKED if packed else ''}"

    @classmethod
    def open(cls, explicit: Path | None, *, fallback: str = "none") -> Home:
        """Resolve, create, check and lock the data home, or say why it cannot be used."""
        os.umask(0o077)  # every file the daemon makes, SQLite's included, is private
        root = resolve_home(explicit)
        if explicit is None:
            migrate_legacy(root)
        try:
            prepare(root)
        except OSError as exc:
            reason = f"data home {root} is not usable: {exc.strerror or exc}"
            if fallback != "memory":
                raise HomeUnavailable(reason) from exc
            return cls._fallback(reason)
        home = cls(root=root)
        home._lock()
        fs.confine(root)
        return home

    def check_layout(self) -> None:
        """Refuse to serve a home whose top folders or files are links (``doctor``
        reports them)."""
        try:
            for sub in (*LAYOUT, *TOP_FILES):
                fs.check(self.root / sub)
        except Exception as exc:
            raise HomeUnavailable(f"data home {self.root} is not usable: {exc}") from exc

    @classmethod
    def _fallback(cls, reason: str) -> Home:
        base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        root = Path(tempfile.mkdtemp(prefix="aster-fallback-", dir=base))
        prepare(root)
        message = f"{reason}; serving from a temporary in-memory store at {root} (nothing is kept)"
        log.warning("DEGRADED: %s", message)
        home = cls(root=root, degraded=message, _cleanup=True)
        home._lock()
        fs.confine(root)
        return home

    def _lock(self) -> None:
        path = self.root / ".lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise HomeInUse(
                    f"data home {self.root} is in use by another aster-persist daemon (pid {holder})"
                ) from exc
            raise HomeUnavailable(f"cannot lock {path}: {exc.strerror}") from exc
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd

    def close(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
            fs.release(self.root)
        if self._cleanup:
            shutil.rmtree(self.root, ignore_errors=True)


LAYOUT = ("sessions", "memory", "index", "blobs")
TOP_FILES = ("journal.jsonl", "queue", "token", "config.toml", "team.json")


def prepare(root: Path) -> None:
    """Create the layout and prove the home is writable (raises OSError)."""
    root.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    for sub in LAYOUT:
        if not os.path.lexists(root / sub):
            (root / sub).mkdir(mode=DIR_MODE, exist_ok=True)
    probe = root / f".probe-{os.getpid()}-{secrets.token_hex(8)}"
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    try:
        os.write(fd, b"ok")
        os.fsync(fd)
    finally:
        os.close(fd)
        probe.unlink(missing_ok=True)


def _has_data(root: Path) -> bool:
    for sub in ("sessions", "memory", "journal.jsonl", "blobs"):
        path = root / sub
        if path.is_file():
            return True
        if path.is_dir() and any(path.iterdir()):
            return True
    return False


def migrate_legacy(root: Path) -> None:
    """Move ~/.aster into a new, empty home once; nothing is deleted (SPEC §2)."""
    legacy = Path(os.environ.get("HOME", str(Path.home()))) / ".aster"
    try:
        if not legacy.is_dir() or legacy.resolve() == root.resolve():
            return
        if (legacy / "MOVED.txt").exists() or _has_data(root):
            return
        entries = [entry for entry in legacy.iterdir() if entry.name != "MOVED.txt"]
        if not entries:
            return
        ensure_dir(root)
        for entry in entries:
            target = root / entry.name
            if target.exists() and target.is_dir() and not any(target.iterdir()):
                target.rmdir()
            if target.exists():
                continue
            shutil.move(str(entry), str(target))
        (legacy / "MOVED.txt").write_text(
            f"The contents of this folder were moved to {root} by aster-persist.\n"
            "Nothing was deleted. The new location is the data home from now on.\n",
            encoding="utf-8",
        )
        log.warning("moved the legacy data home %s to %s", legacy, root)
    except OSError as exc:
        log.error("could not move the legacy data home %s: %s", legacy, exc)
