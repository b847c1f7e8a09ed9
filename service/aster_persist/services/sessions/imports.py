"""Sessions from a file another tool wrote (or an export of this one).

Every conversation is read and checked before anything is written, then all are written
whole at once; one already here (same source, so same id) is reported, not copied.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ... import importers
from ...storage.home import project_slug
from ...storage.summary import SessionInfo
from .notices import Appended

if TYPE_CHECKING:
    from .parts import Parts


async def import_file(
    sessions: Parts, data: bytes, *, format: str = "auto", repo_root: str | None = None
) -> dict[str, Any]:
    """Sessions from a file another tool wrote (or an export of this one). Every
    conversation is read and checked before anything is written, then all are written
    whole at once; one already here (same source, so same id) is reported, not copied.
    """
    found, conversations = await asyncio.to_thread(importers.read, data, format)
    for conversation in conversations:
        if not (repo_root or conversation.source.get("repo_root") or conversation.cwd):
            raise importers.ImportProblem(
                "the file does not say which project it belongs to; pass repo_root"
            )
    written = await sessions.committer.call(
        _write_imported, sessions, found, conversations, repo_root
    )
    results: list[dict[str, Any]] = []
    for conversation, done in zip(conversations, written, strict=True):
        sid = conversation.id()
        if done is None:
            results.append({"id": sid, "status": "already_imported"})
            continue
        _header, info = done
        results.append({"id": sid, "status": "imported", "events": info.events})
        if info.events and sessions.listeners:
            scope = sessions.scope_of(sid)
            events = conversation.events
            sessions.announce(Appended(sid, scope, 1, info.last_seq, events=events))
    return {
        "format": found,
        "imported": sum(r["status"] == "imported" for r in results),
        "already_imported": sum(r["status"] == "already_imported" for r in results),
        "sessions": results,
    }


def _write_imported(
    sessions: Parts,
    found: str,
    conversations: list[importers.Conversation],
    repo_root: str | None,
) -> list[tuple[dict[str, Any], SessionInfo] | None]:
    """Write every new conversation of an import whole, then journal them with one
    sync (writer thread, so a concurrent import of the same file finds them)."""
    whole = []
    for conversation in conversations:
        events = conversation.events
        if sessions.blobs.needed(events):  # large contents go to blobs first, synced
            events = sessions.blobs.extract(events)
        whole.append(
            (
                _header_fields(found, conversation, repo_root),
                _keyed_runs(events, conversation.keys),
            )
        )
    written = sessions.store.create_whole(whole)
    if sessions.journal is not None:
        new = [done[0] for done in written if done is not None]
        for n, header in enumerate(new, 1):
            source = header.get("x_import") or {}
            sessions.journal.record(
                "session.imported",
                scope=f"project:{project_slug(header['repo_root'])}",
                session=header["id"],
                detail={
                    "repo_root": header["repo_root"],
                    "format": source.get("format", "native"),
                },
                sync=n == len(new),
            )
    return written


def _header_fields(
    found: str, conversation: importers.Conversation, repo_root: str | None
) -> dict[str, Any]:
    """What ``create`` takes for a session an import makes of ``conversation``."""
    root = repo_root or conversation.source.get("repo_root") or conversation.cwd
    extra = (
        {k: v for k, v in conversation.source.items() if k != "repo_root"}
        if found == "native"
        else {
            "x_import": {
                "format": found,
                "fingerprint": conversation.fingerprint,
                **conversation.source,
            }
        }
    )
    return {
        "repo_root": str(root),
        "session_id": conversation.id(),
        "cwd": conversation.cwd,
        "model": conversation.model,
        "title": conversation.title,
        "created_at": conversation.created_at,
        "aster_version": conversation.source.get("aster_version") if found == "native" else None,
        "extra": {k: v for k, v in extra.items() if k != "aster_version"},
    }


def _keyed_runs(
    events: list[dict[str, Any]], keys: list[str | None] | None
) -> list[tuple[list[dict[str, Any]], str | None]]:
    """Events to append, split where their idempotency key changes (a native export's
    keyed appends come back as appends with those keys, so a retry is still known)."""
    if not events:
        return []
    if not keys or not any(keys):
        return [(events, None)]
    runs: list[tuple[list[dict[str, Any]], str | None]] = []
    for event, key in zip(events, keys, strict=True):
        if runs and runs[-1][1] == key:
            runs[-1][0].append(event)
        else:
            runs.append(([event], key))
    return runs
