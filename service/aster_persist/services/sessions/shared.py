"""An import whose leading events a stored session holds already (Claude Code's resumed
session begins with the records of the one it resumes): those events are left out of
the new session, which refers to them instead (``storage/transcripts/copies.py``).

An event is the stored one when the two are equal but for what only says where each is
kept (its seq, the idempotency key naming its own source, the length of the append it
was written in, and the session id in the source records it keeps); a large content
kept as a blob is compared as its text. Matching stops at the first that differs, and at
least one event is always the new session's own (its key is how a later import of its
grown file finds where it left off).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

from ...importers import Conversation
from ...importers.lines import Batch
from ...schemas.names import project_slug
from ...storage.home import normalize_repo_root
from ...storage.transcripts import copies
from ...storage.transcripts.copies import Ref

if TYPE_CHECKING:
    from .parts import Parts

WHERE_KEPT = ("seq", "idempotency_key", "batch_size")  # how each was written, not what


class SharedStart:
    """The events a new session shares with a stored one ``base`` (its events 1..n as
    stored, large contents put back), counted as the import's batches go by."""

    def __init__(
        self,
        base: str,
        stored: Iterator[dict[str, Any]],
        renamed: tuple[str, tuple[str, ...]] | None = None,
        replayed: bool = False,
    ) -> None:
        self.base = base
        # a replay (a Codex fork writes its parent's records again, at the time of the
        # fork, after its own header): times, and the parent's header, left out of the
        # comparison; the stored events, with the times they were said, are shown
        self._replayed = replayed
        self._stored = stored  # read as the batches go by, never all of it at once
        self._next: dict[str, Any] | None = None  # the stored event compared next
        # the new source's own session id, and those the stored events may name instead
        self._renamed = renamed
        self.through = 0  # how many leading events the new session refers to

    def ref(self) -> Ref | None:
        """The reference the new session's header makes (None: it shares nothing)."""
        return Ref(self.base, self.through) if self.through else None

    def skip(self, batches: Iterator[Batch]) -> Iterator[Batch]:
        """``batches`` without the leading events the base holds. Only a source keyed by
        its records (no appends of an export to keep) is matched."""
        matching = True
        last: tuple[dict[str, Any], str | None] | None = None
        for batch in batches:
            if not matching or batch.runs is not None:
                matching = False
                yield batch
                continue
            n = 0
            while n < len(batch.events):
                if self._next is None:
                    self._next = next(self._stored, None)
                if self._next is None or not _same(
                    batch.events[n], self._next, self._renamed, self._replayed
                ):
                    break
                self._next = None
                n += 1
            if n:
                self.through += n
                last = (batch.events[n - 1], batch.keys[n - 1])
            if n < len(batch.events):
                matching = False
                yield Batch(batch.events[n:], batch.keys[n:], None)
        if matching and last is not None:  # all of it is the base's: the last is its own
            self.through -= 1
            event, key = last
            yield Batch([event], [key], None)


def _same(
    event: dict[str, Any],
    stored: dict[str, Any],
    renamed: tuple[str, tuple[str, ...]] | None,
    replayed: bool = False,
) -> bool:
    """Whether ``event`` is ``stored`` but for where each is kept; with ``renamed`` (the
    new source's session id and those the stored events may name), also where the one
    names its source and the other one of those (a resumed session's copies of the old
    records name the new session: in the records kept, in a sub-agent's link); with
    ``replayed``, also but for when each was written (``_untimed``)."""
    mine = {k: v for k, v in event.items() if k not in WHERE_KEPT}
    theirs = {k: v for k, v in stored.items() if k not in WHERE_KEPT}
    if replayed:
        mine, theirs = _untimed(mine), _untimed(theirs)
    if mine == theirs:
        return True
    if renamed is None or mine.keys() != theirs.keys():
        return False
    new, olds = renamed
    said = orjson.dumps(mine, option=orjson.OPT_SORT_KEYS)
    stored_said = orjson.dumps(theirs, option=orjson.OPT_SORT_KEYS)
    return any(said.replace(new.encode(), old.encode()) == stored_said for old in olds)


def _untimed(event: dict[str, Any]) -> dict[str, Any]:
    """An event as a replay of it says it: without its time, and the records it keeps
    without theirs and without a source's header (a replay carries its parent's)."""
    out = {k: v for k, v in event.items() if k != "ts"}
    kept = out.get("x_source")
    if isinstance(kept, dict) and isinstance(kept.get("records"), list):
        records = [
            {k: v for k, v in r.items() if k != "timestamp"} if isinstance(r, dict) else r
            for r in kept["records"]
            if not (isinstance(r, dict) and r.get("type") == "session_meta")
        ]
        out["x_source"] = {**kept, "records": records}
        if not records:
            del out["x_source"]["records"]
            if not out["x_source"]:
                del out["x_source"]
    return out


async def shared_start(
    parts: Parts, first_record: str | None, conversation: Conversation, repo_root: str | None
) -> SharedStart | None:
    """What a new session (whose first event came from ``first_record``, when its source
    names its records) may share with a stored one: the session it forks, else one that
    began the same (a resumed session stored before the one it resumes holds all that
    one says), the one with the most events first; the first of them of its project.
    A fork its source names (``forked_from``: a replay of its parent) is compared as a
    replay. Its events are read as the import compares them, a line at a time. None
    when there is none."""
    fork_of = conversation.source.get("fork_of")
    began = (
        await asyncio.wrap_future(parts.catalog.begun_with(first_record))
        if first_record is not None
        else []
    )
    root = repo_root or conversation.source.get("repo_root") or conversation.cwd
    slug = project_slug(await asyncio.to_thread(normalize_repo_root, str(root)))
    replayed = "forked_from" in conversation.source
    for base in dict.fromkeys([fork_of, *began] if isinstance(fork_of, str) else began):
        where = parts.store.locations.get(base)
        if where is None or where.trashed or where.slug != slug:
            continue
        path = parts.store.path_of(slug, base)
        headers = await asyncio.to_thread(copies.headers_along, path)
        if headers[0] is None:
            continue
        stored = (parts.blobs.inline([event])[0][0] for event in copies.shown_events(path))
        return SharedStart(base, stored, _renamed(conversation, headers), replayed)
    return None


def _renamed(
    conversation: Conversation, headers: list[dict[str, Any] | None]
) -> tuple[str, tuple[str, ...]] | None:
    """The source session id of a new conversation, and those a stored session's events
    may name instead (its own source's, and each of its bases' along a chain of copies:
    what it shows of a base names the base's), when there are any that differ."""
    new = conversation.source.get("session_id")
    olds = []
    for header in headers:
        found = header.get("x_import") if header is not None else None
        old = found.get("session_id") if isinstance(found, dict) else None
        if isinstance(old, str) and old and old != new and old not in olds:
            olds.append(old)
    return (new, tuple(olds)) if isinstance(new, str) and new and olds else None
