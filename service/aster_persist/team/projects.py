"""Which project a repository is, the same on every machine whatever its path: its git
remote in one normal form (``git@github.com:a/b.git``, ``ssh://git@github.com/a/b`` and
``https://github.com/a/b`` are all ``github.com/a/b``), or without a remote its first
commit (``commit:<sha>``). Read with ``git`` itself (reading its config, never writing
it); a folder that is not a repository here has no key."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from pathlib import Path

_SCP = re.compile(r"^(?:[\w.-]+@)?(?P<host>[\w.-]+):(?P<path>(?!//).+)$")  # git@host:a/b
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://(?:[^@/]*@)?(?P<host>[^/:]+)(?::\d+)?/(?P<path>.+)$")


def normalize_remote(url: str) -> str | None:
    """A remote's project key: host and path, lower-case host, no user, port, scheme or
    ``.git``; None when it is not a remote's address."""
    text = url.strip()
    m = _URL.match(text) or _SCP.match(text)
    if m is None:
        return None
    path = m.group("path").strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    path = path.strip("/")
    return f"{m.group('host').lower()}/{path}" if path else None


def _git(root: str, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", root, *args],
            capture_output=True,
            text=True,
            timeout=10,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def project_key(repo_root: str) -> str | None:
    """The key of the repository at ``repo_root``, or None (not a repository here)."""
    if not Path(repo_root).is_dir():
        return None
    remote = _git(repo_root, "config", "--get", "remote.origin.url")
    if remote is not None and (key := normalize_remote(remote)) is not None:
        return key
    first = _git(repo_root, "rev-list", "--max-parents=0", "HEAD")
    return f"commit:{sorted(first.split())[0]}" if first else None


class ProjectKeys:
    """Each repository root's key, worked out once (any thread)."""

    def __init__(self) -> None:
        self._keys: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def of(self, repo_root: str) -> str | None:
        with self._lock:
            if repo_root in self._keys:
                return self._keys[repo_root]
        key = project_key(repo_root)
        with self._lock:
            self._keys[repo_root] = key
        return key
