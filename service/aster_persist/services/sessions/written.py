"""What an import writes of a conversation: the header fields a new session takes, its
events as the runs of keyed appends they were, and the retractions that let a record
completing a stored turn replace it.

Pure functions of what the reader found; nothing here touches a file.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import Any

from ... import importers
from ...importers.records import earlier_keys
from .shared import SharedStart


def completing(
    todo: list[tuple[dict[str, Any], str | None]], known: Container[str]
) -> list[tuple[dict[str, Any], str | None]]:
    """``todo``, where an event completes one the session holds (a turn written over
    several records, stored as it was when the file was read before its last record):
    the stored part is taken back first, in the same append, so the session shows the
    turn once, whole. Its retraction is keyed too, so a read again adds nothing."""
    if not isinstance(known, Mapping):
        return todo
    out: list[tuple[dict[str, Any], str | None]] = []
    for event, key in todo:
        stored = next((known[k] for k in earlier_keys(event, key) if k in known), None)
        if stored is not None and key is not None:
            taken = {
                "type": "retraction",
                "target_seq": stored.first_seq,
                "reason": "completed by a later record of the same turn",
            }
            out.append((taken, f"{key}:completes"[:200]))
        out.append((event, key))
    return out


def runs_of(runs: list[int] | None, wanted: list[bool]) -> list[int] | None:
    """The appends a batch's events were, as lengths, of the events that are written."""
    if runs is None:
        return None
    out: list[int] = []
    n = 0
    for size in runs:
        kept = sum(wanted[n : n + size])
        out += [kept] if kept else []
        n += size
    return out


def imported_detail(header: Mapping[str, Any]) -> dict[str, Any]:
    """What ``session.imported`` says of a session an import wrote, from its header: the
    same whether the import journals it or a start finds it on disk without an entry."""
    source = header.get("x_import") or {}
    return {
        "repo_root": header.get("repo_root"),
        "format": source.get("format", "native"),
        "source": source.get("fingerprint", f"native:{header.get('id')}"),
        **{k: source[k] for k in ("rewrite_of", "fork_of") if k in source},
    }


def header_fields(
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
    shared = conversation.shared
    return {
        "base": shared.ref() if isinstance(shared, SharedStart) else None,
        "repo_root": str(root),
        "session_id": conversation.id(),
        "cwd": conversation.cwd,
        "model": conversation.model,
        "title": conversation.title,
        "created_at": conversation.created_at,
        "aster_version": conversation.source.get("aster_version") if found == "native" else None,
        "extra": {k: v for k, v in extra.items() if k != "aster_version"},
    }


def keyed_runs(
    events: list[dict[str, Any]],
    keys: list[str | None] | None,
    runs: list[int] | None = None,
) -> list[tuple[list[dict[str, Any]], str | None]]:
    """Events to append, split where their idempotency key changes (a native export's
    keyed appends come back as appends with those keys, so a retry is still known), or
    as the appends they were (``runs``, an export's: each one key)."""
    if not events:
        return []
    if runs is not None:
        out: list[tuple[list[dict[str, Any]], str | None]] = []
        n = 0
        for size in runs:
            out.append((events[n : n + size], keys[n] if keys else None))
            n += size
        return out
    if not keys or not any(keys):
        return [(events, None)]
    keyed: list[tuple[list[dict[str, Any]], str | None]] = []
    for event, key in zip(events, keys, strict=True):
        if keyed and keyed[-1][1] == key:
            keyed[-1][0].append(event)
        else:
            keyed.append(([event], key))
    return keyed
