"""Sessions from a file another tool wrote (or an export of this one).

Every conversation is read and checked before anything is written, then all are written
whole at once; one already here (same source, so same id) is reported, not copied. A
conversation keyed by its source (the tool and the source's own session id, each event
by the record it came from) that is already here is brought up to date instead: the
records it holds now that the session does not are appended, each under its record's
key, so a grown file adds exactly what it gained and the same file again adds nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Container
from typing import TYPE_CHECKING, Any

from ... import importers
from ...storage.home import project_slug
from ...storage.summary import SessionInfo
from .notices import Appended

if TYPE_CHECKING:
    from ...storage.transcripts import AppendResult
    from .parts import Parts


Append = Callable[..., Awaitable["AppendResult"]]
RecentKeys = Callable[[str], Awaitable[Container[str]]]


async def import_file(
    sessions: Parts,
    data: bytes,
    *,
    append: Append,
    recent_keys: RecentKeys,
    format: str = "auto",
    repo_root: str | None = None,
    modified_at: str | None = None,
) -> dict[str, Any]:
    """Sessions from a file another tool wrote (or an export of this one). Every
    conversation is read and checked before anything is written, then all are written
    whole at once; one already here (same source, so same id) is reported, not copied.
    """
    found, conversations = await asyncio.to_thread(importers.read, data, format, modified_at)
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
            grown = await _bring_up_to_date(append, recent_keys, sid, conversation)
            status = "updated" if grown else "already_imported"
            results.append({"id": sid, "status": status, **({"events": grown} if grown else {})})
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
        "updated": sum(r["status"] == "updated" for r in results),
        "already_imported": sum(r["status"] == "already_imported" for r in results),
        "sessions": results,
    }


async def _bring_up_to_date(
    append: Append, recent_keys: RecentKeys, sid: str, conversation: importers.Conversation
) -> int:
    """Append what a source holds that its session does not. A source grows at its end,
    so what is new follows the last record the session holds (its latest keys are
    remembered, however long it is); each is appended under its record's key, so a
    record already written is a replay that writes nothing."""
    keys = conversation.keys
    if ":source:" not in conversation.fingerprint or not keys:
        return 0  # keyed by its bytes: the same bytes, so nothing can be new
    known = await recent_keys(sid)
    start = next((n + 1 for n in range(len(keys) - 1, -1, -1) if keys[n] in known), 0)
    written = 0
    for events, key in _keyed_runs(conversation.events[start:], keys[start:]):
        if key in known:
            continue
        result = await append(sid, events, key=key, learn=False)
        written += 0 if result.replayed else result.count
    return written


def _write_imported(
    sessions: Parts,
    found: str,
    conversations: list[importers.Conversation],
    repo_root: str | None,
) -> list[tuple[dict[str, Any], SessionInfo] | None]:
    """Write every new conversation of an import whole, then journal them with one
    sync (writer thread, so a concurrent import of the same file finds them). One the
    journal says was imported before is the session it became, whatever its id says."""
    whole = []
    for conversation in conversations:
        if sessions.journal is not None and conversation.session_id is None:
            conversation.session_id = sessions.journal.sources.get(conversation.fingerprint)
        conversation.session_id = conversation.id()  # fixed once: a new one is minted now
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
                    "source": source.get("fingerprint", f"native:{header['id']}"),
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
