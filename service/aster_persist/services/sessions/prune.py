"""Pruning: old sessions to the trash (by activity, or beyond the newest N of each
project), old trash purged; a dry run says what would go."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ...storage.summary import SessionInfo

if TYPE_CHECKING:
    from .parts import Parts


async def choose(
    sessions: Parts,
    *,
    older_than_days: float | None,
    keep_latest: int | None,
    purge_trash_older_than_days: float | None,
    now: float | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The sessions to trash (oldest activity first, each with its reason) and the
    trashed ones to purge."""
    await sessions.ready.wait()
    infos: list[SessionInfo] = await asyncio.wrap_future(sessions.catalog.submit(lambda c: c.all()))
    moment = sessions.store.clock().timestamp() if now is None else now
    chosen: dict[str, dict[str, Any]] = {}
    if older_than_days is not None:
        cutoff = (datetime.fromtimestamp(moment, UTC) - timedelta(days=older_than_days)).isoformat()
        cutoff = cutoff.replace("+00:00", "Z")
        for info in infos:
            if info.updated_at < cutoff:
                chosen[info.id] = _pruned(info, f"no activity since {info.updated_at}")
    if keep_latest is not None:
        by_project: dict[str, list[SessionInfo]] = {}
        for info in infos:
            by_project.setdefault(info.slug, []).append(info)
        for group in by_project.values():
            group.sort(key=lambda i: (i.updated_at, i.id), reverse=True)
            for info in group[keep_latest:]:
                chosen.setdefault(info.id, _pruned(info, f"beyond the newest {keep_latest}"))
    purge: list[str] = []
    if purge_trash_older_than_days is not None:
        cutoff_s = moment - purge_trash_older_than_days * 86400
        purge = await sessions.committer.call(sessions.store.trashed_before, cutoff_s)
    return sorted(chosen.values(), key=lambda item: item["updated_at"]), purge


def _pruned(info: SessionInfo, reason: str) -> dict[str, Any]:
    return {
        "id": info.id,
        "repo_root": info.repo_root,
        "title": info.title,
        "updated_at": info.updated_at,
        "reason": reason,
    }
