"""One live session per alias, whoever asks: a create, an import (of an export, or of a
followed source), a restore from the trash, a revert of a delete. Each path checks and
takes the alias on the writer thread, in the same step that writes the header or moves
the file back, so no two of them can both find it free.

The catalog says which session held an alias when it last caught up; what was taken
since is kept here, the latest taker of each alias. A session in the trash (or purged)
holds no alias.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

    def create(self, fields: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """Write a new session's header with its alias checked and taken in the same
        step (no other create, import or restore comes in between)."""
        alias = (fields.get("extra") or {}).get("alias")
        if isinstance(alias, str):
            self.check(alias, fields.get("session_id"))
        header, writer = self.store.create(**fields)
        if isinstance(alias, str):
            self.take(alias, header["id"])
        return header, writer

    def restore(self, session_id: str) -> None:
        """Bring a session back from the trash, its alias checked and taken in the same
        step."""
        alias = self.store.trashed_header(session_id).get("alias")
        if isinstance(alias, str):
            self.check(alias, session_id)
        self.store.restore(session_id)
        if isinstance(alias, str):
            self.take(alias, session_id)

    def keep_free(self, extra: dict[str, Any], taking: set[str]) -> None:
        """An imported session's alias comes back with it, unless a live session holds
        it now (or another session of the same import takes it, ``taking``): then it is
        kept as ``x_alias``, held by none."""
        alias = extra.get("alias")
        if isinstance(alias, str):
            if alias in taking or not self.free(alias):
                extra["x_alias"] = extra.pop("alias")
            else:
                taking.add(alias)

    def create_whole(self, whole: list[Any]) -> list[Any]:
        """Write an import's new sessions whole (``TranscriptStore.create_whole``), each
        alias they kept taken in the same step."""
        written = self.store.create_whole(whole)
        for done in written:
            if done is not None and isinstance(done[0].get("alias"), str):
                self.take(done[0]["alias"], done[0]["id"])
        return written

    def _live(self, session_id: str) -> bool:
        where = self.store.locations.get(session_id)
        return where is not None and not where.trashed
