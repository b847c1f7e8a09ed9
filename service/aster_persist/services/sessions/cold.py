"""Cold sessions kept compressed: a session whose last event is older than
``compress_after_days`` is kept as ``<ulid>.jsonl.zst`` (``storage/packed.py``), swept
after the catalog has caught up at start and every few hours, or on request.

Each is compressed on a worker thread beside its plain file (synced and verified), then
put in its place on the writer thread, journaled (``session.compressed``), only while
nothing writes it; an append makes it plain again (``session.decompressed``).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any

from ...errors import AsterError, SessionNotFound
from ...schemas.clock import format_ts
from ...schemas.journal import REQUEST_ACTOR
from ...storage import fs, packed
from .parts import Parts

log = logging.getLogger("aster_persist")

SWEEP_HOURS = 6.0  # between sweeps of a daemon that runs for long


class Cold:
    """Which sessions are cold, and keeping them compressed."""

    def __init__(self, parts: Parts, *, after_days: float) -> None:
        self._parts = parts
        self.after_days = after_days

    async def candidates(self, older_than_days: float) -> list[tuple[str, str, int]]:
        """Live plain sessions idle longer than ``older_than_days``: id, slug, bytes."""
        before = format_ts(self._parts.store.clock() - timedelta(days=older_than_days))
        idle = await asyncio.wrap_future(
            self._parts.catalog.submit(lambda catalog: catalog.idle_since(before))
        )
        out = []
        for sid, slug, size in idle:
            where = self._parts.store.locations.get(sid)
            if where is not None and not where.trashed and not where.packed:
                out.append((sid, slug, size))
        return out

    async def sweep(
        self, *, older_than_days: float | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """Compress every cold session (or, with ``dry_run``, say what that would free):
        what was compressed, bytes before and after, and what was left plain and why."""
        days = self.after_days if older_than_days is None else older_than_days
        found = await self.candidates(days)
        done: list[dict[str, Any]] = []
        skipped: list[dict[str, Any]] = []
        before = after = 0
        for sid, _slug, _size in found:
            try:
                if dry_run:
                    plain = self._parts.store.live_path(sid)
                    size, small = await asyncio.to_thread(packed.measure, plain)
                else:
                    packed_size = await self._compress(sid, days)
                    if packed_size is None:
                        skipped.append({"id": sid, "reason": "written to meanwhile"})
                        continue
                    size, small = packed_size
            except SessionNotFound:
                continue  # deleted meanwhile
            except (AsterError, OSError) as exc:
                log.warning("could not compress session %s: %s", sid, exc)
                skipped.append({"id": sid, "reason": str(exc)})
                continue
            done.append({"id": sid, "bytes": size, "compressed_bytes": small})
            before += size
            after += small
        return {
            "dry_run": dry_run,
            "older_than_days": days,
            "compressed": done,
            "skipped": skipped,
            "bytes": before,
            "compressed_bytes": after,
            "freed_bytes": before - after,
        }

    async def _compress(self, session_id: str, days: float) -> tuple[int, int] | None:
        """Compress one session and put it in place: its bytes before and after, or None
        when it was written to (or is being) meanwhile."""
        made = await asyncio.to_thread(self._parts.store.compress, session_id)
        try:
            detail = {"by": f"no event for {days:g} days or more"}
            placed = await self._parts.committer.pack(session_id, made, detail)
        finally:
            fs.unlink(made.temp)  # placed by a link, or not placed: the temporary name goes
        return (made.size, made.packed_size) if placed else None

    async def run(self) -> None:
        """Sweep once the catalog has caught up, then every ``SWEEP_HOURS`` (until
        cancelled)."""
        if self.after_days <= 0:
            return
        await self._parts.ready.wait()
        while True:
            token = REQUEST_ACTOR.set("consolidator")
            try:
                result = await self.sweep()
                if result["compressed"]:
                    log.info(
                        "compressed %d cold sessions: %d bytes to %d",
                        len(result["compressed"]),
                        result["bytes"],
                        result["compressed_bytes"],
                    )
            except Exception:
                log.exception("the sweep of cold sessions failed")
            finally:
                REQUEST_ACTOR.reset(token)
            await asyncio.sleep(SWEEP_HOURS * 3600)
