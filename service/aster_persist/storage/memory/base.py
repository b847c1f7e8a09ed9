"""The memory store's shared state, its scopes and paths, and what its parts call of
each other.

``StoreBase`` holds what every part of ``MemoryStore`` reads and changes: the block
index (a ``BlockMeta`` per block), the bytes of every live file as the store last wrote
or saw them, recall counts, and the version that expires cached orderings. It maps a
scope to its folder and a block to its file, and says what the journal keeps of a
file: its bytes as text, or base64 when they are not UTF-8, or only its path, hash and
findings when they hold a secret. I/O errors become 507 (a full disk) or 500, saying
what could not be done. The methods one part calls of another are declared here for
the type checker only; each is defined in exactly one part.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import InsufficientStorage, InvalidName, StorageFailed
from .. import fs
from ..home import Home, check_slug, normalize_repo_root, project_slug
from ..journal import Journal
from ..secrets import withheld
from ..transcripts import Clock
from .meta import BlockMeta
from .names import ARCHIVE, check_name

if TYPE_CHECKING:
    from .. import frontmatter


class StoreBase:
    """The state every part of the store shares (mutations run on the writer thread)."""

    def __init__(self, home: Home, journal: Journal, *, clock: Clock) -> None:
        self.home = home
        self.root = home.root / "memory"
        self.journal = journal
        self.clock = clock
        self.blocks: dict[tuple[str, str], BlockMeta] = {}
        self.recalls: dict[tuple[str, str], tuple[int, str]] = {}  # derived from the journal
        self.version = 0  # bumped on every change, so cached context orderings expire
        self._ordered: dict[str | None, tuple[int, list[BlockMeta]]] = {}
        self._by_norm: dict[tuple[str, str], str] = {}  # normalized body -> block name
        # The bytes of every live memory file as this store last wrote or saw them, so a
        # change on disk that did not come from here (a hand edit) can be told apart and
        # journaled with the content it replaced.
        self._known: dict[str, bytes] = {}

    # -- scopes and paths --------------------------------------------------------

    def scope_for(self, repo_root: str | None) -> str:
        if repo_root is None:
            return "global"
        return "project:" + project_slug(normalize_repo_root(repo_root))

    def folder(self, scope: str) -> Path:
        if scope == "global":
            return self.root
        if scope.startswith("project:"):
            return self.root / "projects" / check_slug(scope[8:])
        raise InvalidName(f"not a memory scope: {scope[:80]!r}")

    def path(self, scope: str, name: str, *, archived: bool = False) -> Path:
        folder = self.folder(scope)
        if archived:
            folder = folder / ARCHIVE
        return folder / f"{check_name(name)}.md"

    def _rel(self, path: Path) -> str:
        return str(path.relative_to(self.home.root))

    # -- what the journal keeps of a file -------------------------------------------

    def _state(self, path: Path) -> dict[str, Any] | None:
        data = fs.read_or_none(path)
        return None if data is None else self._content_state(path, data)

    def _content_state(self, path: Path, data: bytes) -> dict[str, Any]:
        """A file's path and bytes as the journal keeps them: text when they are UTF-8,
        base64 when they are not (a file saved in another encoding), so a revert can
        write them back exactly either way. Content that holds a secret is withheld."""
        hidden = withheld(self._rel(path), data)
        if hidden is not None:
            return hidden
        try:
            return {"path": self._rel(path), "content": data.decode("utf-8")}
        except UnicodeDecodeError:
            return {"path": self._rel(path), "content_base64": base64.b64encode(data).decode()}

    def _after(self, path: Path, data: bytes) -> dict[str, Any]:
        return {
            "path": self._rel(path),
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
        }

    # -- what one part calls of another ------------------------------------------------

    if TYPE_CHECKING:  # for the type checker only: each is defined in the part named

        def _index(  # index.py
            self,
            scope: str,
            name: str,
            archived: bool,
            data: bytes,
            doc: frontmatter.Document | None = None,
        ) -> BlockMeta: ...

        def read_core(self, scope: str, *, strict: bool = True) -> tuple[str, str]: ...

        def read_block(
            self, scope: str, name: str, *, archived: bool = False
        ) -> tuple[str, BlockMeta]: ...

        def list_blocks(
            self,
            scope: str,
            *,
            tags: list[str] | None = None,
            type: str | None = None,
            include_archived: bool = False,
        ) -> list[BlockMeta]: ...

        def usage(self, block: BlockMeta) -> dict[str, Any]: ...

        def _settle(self, path: Path) -> None: ...  # writes.py

        def _write(self, path: Path, data: bytes) -> None: ...

        def _unlink(self, path: Path) -> None: ...

        def _replace_file(
            self,
            path: Path,
            data: bytes,
            op: str,
            *,
            scope: str,
            name: str,
            actor: str,
            session: str | None,
            detail: dict[str, Any] | None = None,
        ) -> None: ...

        def move(self, scope: str, name: str, **options: Any) -> BlockMeta: ...

        def write_block(  # content.py
            self, scope: str, name: str, **options: Any
        ) -> tuple[BlockMeta, bool]: ...

        def patch_block(
            self, scope: str, name: str, changes: dict[str, Any], **options: Any
        ) -> BlockMeta: ...

        def relate(  # hygiene.py
            self, scope: str, name: str, meta: dict[str, Any], *, actor: str, session: str | None
        ) -> None: ...

        def check_relations(self, scope: str, name: str, meta: dict[str, Any]) -> None: ...


@contextlib.contextmanager
def _disk(what: str) -> Iterator[None]:
    """A full disk as 507 and any other I/O error as 500, saying what could not be done."""
    try:
        yield
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise InsufficientStorage(f"{what}: the disk is full") from exc
        raise StorageFailed(f"{what}: {exc.strerror or exc}") from exc
