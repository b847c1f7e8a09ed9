"""The parts a sessions service is made of, and the operations every user of them
shares: journal a change, name a session's scope, append durably and announce it (one
``Appended`` per durable append: the daemon's own, an import's, or one another program
made, in the order they were acknowledged, on the event loop), the latest idempotency
keys, delete (to the trash, or for good).

``Sessions`` and the import pipeline (``Importer``) each hold the one ``Parts``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Container
from typing import Any

from ...index.catalog import CatalogWorker
from ...schemas.conditions import SeqCondition
from ...storage.blobs import BlobStore
from ...storage.commit import GroupCommitter
from ...storage.home import Home
from ...storage.journal import Journal
from ...storage.transcripts import AppendRequest, AppendResult, TranscriptStore
from . import tails
from .aliases import Aliases

log = logging.getLogger("aster_persist")


class Appended:
    """Events ``first_seq``..``last_seq`` of a session are durable.

    ``events`` are the events themselves when this daemon appended them (None when
    another program did); ``learn`` is whether learning may queue what they complete
    (an import of old history does not); ``source``, what an import brought them from. ``kinds``, the event types among them, is
    worked out only when a listener asks.
    """

    __slots__ = (
        "_kinds",
        "events",
        "first_seq",
        "last_seq",
        "learn",
        "machine",
        "scope",
        "session_id",
        "source",
    )

    def __init__(
        self,
        session_id: str,
        scope: str,
        first_seq: int,
        last_seq: int,
        *,
        events: list[dict[str, Any]] | None = None,
        kinds: list[str] | None = None,
        learn: bool = False,
        source: str | None = None,
        machine: str | None = None,
    ) -> None:
        self.session_id = session_id
        self.scope = scope
        self.first_seq = first_seq
        self.last_seq = last_seq
        self.events = events
        self.learn = learn
        self.source = source
        self.machine = machine  # the team's machine whose lines these are (a copy's)
        self._kinds = kinds

    @property
    def kinds(self) -> list[str]:
        if self._kinds is None:
            self._kinds = sorted({str(e.get("type")) for e in self.events or ()})
        return self._kinds

    def wire(self) -> dict[str, Any]:
        """The notice as the change feed sends it (``session.appended``)."""
        return {
            "session_id": self.session_id,
            "scope": self.scope,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "kinds": self.kinds,
            **({"source": self.source} if self.source else {}),
            **({"machine": self.machine} if self.machine else {}),
        }


Listener = Callable[[Appended], None]


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
        self.ready = asyncio.Event()  # set once the catalog has caught up at start
        self.aliases = Aliases(store, catalog)  # checked and taken on the writer thread

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

    async def append(
        self,
        session_id: str,
        events: list[dict[str, Any]],
        *,
        key: str | None = None,
        if_match: SeqCondition = None,
        learn: bool = True,
        keys: list[str | None] | None = None,
        runs: list[int] | None = None,
        source: str | None = None,
        machine: str | None = None,
    ) -> AppendResult:
        """Append durably; ``learn`` lets a completed turn queue an extraction (imports of
        old history do not: ``POST /v1/sessions/{id}/extract`` does that on demand).
        An import gives each event its own key (``keys``), the appends they were
        (``runs``, an export's) and names its ``source``; the team's copy of another
        machine's session takes only appends of that ``machine``'s lines."""
        if self.blobs.needed(events):  # large contents go to blobs first, synced
            events = await asyncio.to_thread(self.blobs.extract, events)
        request = AppendRequest(
            session_id, events, key, if_match, keys=keys, runs=runs, machine=machine
        )
        result = await self.committer.append(request)
        if not result.replayed and self.listeners:
            self.announce(
                Appended(
                    session_id,
                    self.scope_of(session_id),
                    result.first_seq,
                    result.last_seq,
                    events=events,
                    learn=learn,
                    source=source,
                    machine=machine,
                )
            )
        return result

    async def last_seq(self, session_id: str) -> int | None:
        """The seq of a session's last acknowledged event; None when there is none such."""
        if session_id not in self.store.locations:
            return None
        await self.committer.open(session_id)
        writer = self.store.writer(session_id)
        return writer.info.last_seq if writer is not None else None

    async def recent_keys(self, session_id: str) -> Container[str]:
        """The idempotency keys of the session's latest appends (``KEYS_KEPT`` of them)."""
        await self.committer.open(session_id)
        writer = self.store.writer(session_id)
        return writer.keys if writer is not None else ()

    async def _give_copies_their_events(self, session_id: str) -> None:
        """Make whole each session that refers to events of ``session_id`` (the live ones
        the catalog knows, and those in the trash), before it leaves."""
        live = await asyncio.wrap_future(self.catalog.referring_to(session_id))
        trashed = await self.committer.call(self.store.trashed_referring_to, session_id)
        for copy in dict.fromkeys([*live, *trashed]):
            await self.committer.rewrite(copy, self.store.make_whole, copy)

    async def delete(
        self,
        session_id: str,
        *,
        purge: bool = False,
        reason: str = "deleted",
        op: str = "",
        only_trashed: bool = False,
        detail: dict[str, Any] | None = None,
        if_match: SeqCondition = None,
    ) -> None:
        """Move to the trash, or delete for good; appends waiting for a sync finish first.
        With ``if_match``, only while the session's last seq is that (else 412)."""
        trashed = self.store.locations.get(session_id)
        if only_trashed and (trashed is None or not trashed.trashed):
            return
        # a copy that refers to its events is given them first, nothing it shows lost; a
        # refusal on the way (a link for a trash) leaves the session as it was
        await self._give_copies_their_events(session_id)
        if only_trashed and trashed is not None:
            where = trashed
        else:
            where = await self.committer.detach(session_id, if_match=if_match)
        if purge:
            deleted = await self.committer.call(
                self.store.purge, session_id, where, only_trashed=only_trashed
            )
            if not deleted:
                return
            await self.record(
                op or "session.purged",
                session_id,
                {"reason": reason, **(detail or {})},
                slug=where.slug,
            )
        else:
            await self.committer.call(self.store.trash, session_id, where, reason)
            await self.record(
                op or "session.deleted",
                session_id,
                {"reason": reason, **(detail or {})},
                slug=where.slug,
            )
