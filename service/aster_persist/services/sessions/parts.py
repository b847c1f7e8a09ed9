"""The parts a sessions service is made of, and what every one of its operations does
with them: journal a change, name a session's scope, announce a durable append."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ...index.catalog import CatalogWorker
from ...storage.blobs import BlobStore
from ...storage.commit import GroupCommitter
from ...storage.home import Home
from ...storage.journal import Journal
from ...storage.transcripts import TranscriptStore
from . import tails
from .aliases import Aliases
from .notices import Appended, Listener

log = logging.getLogger("aster_persist")


class Parts:
    """What the sessions service is built from (by ``app.py``): the transcript ``store``,
    the ``committer`` that is its single writer thread, the ``catalog`` worker that
    indexes it, the ``blobs`` large contents go to, and the ``journal`` lifecycle changes
    are recorded in; and the ``listeners`` told of every durable append."""

    def __init__(
        self,
        home: Home,
        *,
        store: TranscriptStore,
        committer: GroupCommitter,
        catalog: CatalogWorker,
        blobs: BlobStore,
        journal: Journal | None = None,
    ) -> None:
        self.home = home
        self.store = store
        self.committer = committer
        self.catalog = catalog
        self.blobs = blobs
        self.journal = journal
        self.listeners: list[Listener] = []
        self.tails = tails.TailReads(home, store, blobs)
        self.ready = asyncio.Event()
        self.aliases = Aliases(store, catalog)  # checked and taken on the writer thread
        self.progress = {"done": 0, "total": 0}
        self.catch_up_stats: dict[str, Any] = {}
        self._catch_up: asyncio.Task[None] | None = None

    async def record(
        self,
        op: str,
        session_id: str,
        detail: dict[str, Any],
        *,
        slug: str | None = None,
        actor: str = "api",
        before: Any = None,
    ) -> None:
        """Journal a lifecycle change (durably, on the writer thread) once it is done."""
        if self.journal is None:
            return
        if slug is None:
            where = self.store.locations.get(session_id)
            slug = where.slug if where is not None else "unknown"
        await self.committer.call(
            self.journal.record,
            op,
            scope=f"project:{slug}",
            actor=actor,
            session=session_id,
            detail=detail,
            before=before,
        )

    def scope_of(self, session_id: str) -> str:
        """``project:<slug>`` of the session's project."""
        where = self.store.locations.get(session_id)
        return f"project:{where.slug if where is not None else 'unknown'}"

    def announce(self, notice: Appended) -> None:
        """Tell every listener that a session's events are durable."""
        for listener in self.listeners:
            try:
                listener(notice)
            except Exception:
                log.exception("a listener of appends failed on %s", notice.session_id)
