"""One live session per alias, whoever asks: a create, an import (of an export, or of a
followed source), a restore from the trash, a revert of a delete. Each path checks and
takes the alias on the writer thread, in the same step that writes the header or moves
the file back, so no two of them can both find it free.

The catalog says which session held an alias when it last caught up; what was taken
since is kept here, the latest taker of each alias. A session in the trash (or purged)
holds no alias.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import AliasTaken

if TYPE_CHECKING:
    from ...index.catalog import CatalogWorker
    from ...storage.transcripts import TranscriptStore


class Aliases:
    """Who holds each alias (writer thread only)."""

    def __init__(self, store: TranscriptStore, catalog: CatalogWorker) -> None:
        self.store = store
        self.catalog = catalog
        self.taken: dict[str, str] = {}  # alias → the session that took it last

    def holder(self, alias: str) -> str | None:
        """The live session holding ``alias``, if any."""
        sid = self.taken.get(alias)
        if sid is None:
            found = self.catalog.run(lambda c: c.by_alias(alias))
            sid = found.id if found is not None else None
        return sid if sid is not None and self._live(sid) else None

    def check(self, alias: str, session_id: str | None) -> None:
        """Refuse ``alias`` while another live session holds it (the session itself,
        a create retried by its id, is not another)."""
        held = self.holder(alias)
        if held is not None and held != session_id:
            raise AliasTaken(
                f"the alias {alias!r} names session {held}; use that session, or move it "
                "to the trash first to start (or bring back) another under the same alias"
            )

    def free(self, alias: str) -> bool:
        return self.holder(alias) is None

    def take(self, alias: str, session_id: str) -> None:
        """``session_id`` holds ``alias`` from now on (its header was just written)."""
        self.taken[alias] = session_id

    def _live(self, session_id: str) -> bool:
        where = self.store.locations.get(session_id)
        return where is not None and not where.trashed
