"""What memory's files tell a team they are shared with, and the one version of a file
the team and this machine agree on.

``MemoryFiles`` asks its ``Sharing`` before every write, removal and move of a live
file (``writing``): a shared file's new version is set in the team first, at the
revision this machine last agreed on, so of two machines writing one version exactly one
wins and the other is refused (412) with nothing written; a file that is not shared, or
a team that cannot be reached, writes here alone (what the team has not seen is sent
once it can be). A change the store did not make (a hand edit, a revert) is told with
``changed``. Alone, nothing is shared (``UNSHARED``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from .names import etag_of

LIVE = "live"
ARCHIVED = "archived"


@dataclass(frozen=True)
class Version:
    """A memory file as the team knows it: live, archived, or none (``state`` empty)."""

    state: str = ""
    data: bytes | None = None

    @property
    def token(self) -> str:
        """The same on every machine for the same version; empty for none."""
        return f"{self.state}:{etag_of(self.data or b'')}" if self.state else ""


NONE = Version()


class Sharing(Protocol):
    def scope_of(self, repo_root: str) -> str | None:
        """The scope of a shared project's memory, or None (not shared)."""
        ...

    def writing(
        self, scope: str, name: str, before: Version, after: Version
    ) -> contextlib.AbstractContextManager[None]:
        """Around a change of a file from ``before`` to ``after`` made here."""
        ...

    def changed(self, scope: str, name: str) -> None:
        """A file changed without ``writing`` (by hand, a revert)."""
        ...


class Unshared:
    """Alone: every file is this machine's only."""

    def scope_of(self, repo_root: str) -> str | None:
        return None

    @contextlib.contextmanager
    def writing(self, scope: str, name: str, before: Version, after: Version) -> Iterator[None]:
        yield

    def changed(self, scope: str, name: str) -> None:
        return None


UNSHARED = Unshared()
