"""The journal: ``<home>/journal.jsonl``, one JSON line per change, oldest first.

Guarantees: an entry is appended whole and synced before ``record`` returns, so a change
is never published (or reported) before its journal line is durable; ids are ULIDs made
here, so they sort in the order entries were written. A torn last line is moved aside
like a transcript's, never deleted. Runs on the writer thread; reads run anywhere.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from ulid import ULID

from ..errors import Invalid, StorageFailed
from ..schemas.clock import Clock, format_ts
from ..schemas.journal import ACTORS, OPS, REQUEST_ACTOR, matches_op, revertible
from ..schemas.names import ULID_RE
from . import fs
from .home import FILE_MODE
from .jsonl import parse, read_bytes, write_new

BORN = ("session.created", "session.imported")  # the entries that say a session exists


class Journal:
    """``journal.jsonl``: every change, in id order, with what it replaced; listeners
    are told of each entry once it is written."""

    def __init__(self, path: Path, *, clock: Clock, durable: bool = True) -> None:
        self.path = path
        self.clock = clock
        self.durable = durable
        self._lock = threading.Lock()
        self._fd = -1
        self._last: ULID | None = None
        self._published = 0  # bytes of whole entries that listeners have been told of
        self.listeners: list[Callable[[dict[str, Any]], None]] = []
        self.sessions: set[str] = set()  # every session with a created or imported entry

    def open(self) -> None:
        """Open for appending, moving a torn tail aside first."""
        fd = fs.open_file(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, FILE_MODE)
        data = read_bytes(self.path)
        parsed = parse(data)
        if parsed.torn is not None:
            start, end = parsed.torn
            stamp = format_ts(self.clock()).replace(":", "").replace("-", "")
            write_new(self.path.with_name(f"{self.path.name}.torn-{stamp}"), data[start:end])
            os.ftruncate(fd, start)
            os.fsync(fd)
        self._published = os.fstat(fd).st_size
        self.sessions = {
            str(line["session"])
            for line in parsed.lines
            if line.get("op") in BORN and isinstance(line.get("session"), str)
        }
        # what each imported session came from (a source, or a file's bytes) → its id
        self.sources: dict[str, str] = {}
        self.open_plans: dict[str, dict[str, Any]] = {}  # plans a crash cut short
        for line in parsed.lines:
            self._note_source(line)
        ids = [line["id"] for line in parsed.lines if isinstance(line.get("id"), str)]
        if ids and ULID_RE.fullmatch(max(ids)):
            self._last = ULID.from_str(max(ids))
        self._fd = fd

    def _note_source(self, entry: dict[str, Any]) -> None:
        detail = entry.get("detail")
        if entry.get("op") == "memory.plan" and isinstance(entry.get("id"), str):
            self.open_plans[entry["id"]] = entry
        elif entry.get("op") == "memory.plan_done" and isinstance(detail, dict):
            self.open_plans.pop(str(detail.get("plan")), None)
        if entry.get("op") == "session.imported" and isinstance(detail, dict):
            source, session = detail.get("source"), entry.get("session")
            if isinstance(source, str) and isinstance(session, str):
                self.sources.setdefault(source, session)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def record(self, op: str, *, scope: str, **fields: Any) -> dict[str, Any]:
        """Append one entry and return it; durable unless ``sync`` is False (usage records,
        such as recalls, whose loss in a crash changes no content)."""
        entry = self.try_record(op, scope=scope, blocking=True, **fields)
        assert entry is not None
        return entry

    def try_record(
        self,
        op: str,
        *,
        scope: str,
        actor: str = "api",
        name: str | None = None,
        session: str | None = None,
        before: Any = None,
        after: Any = None,
        detail: dict[str, Any] | None = None,
        sync: bool = True,
        blocking: bool = False,
    ) -> dict[str, Any] | None:
        """``record``, but without ``blocking`` it returns None at once when another thread
        is writing (or syncing) an entry, so the event loop never waits on a disk."""
        if actor == "api":
            actor = REQUEST_ACTOR.get()
        assert actor in ACTORS, actor
        assert op in OPS, op
        if not self._lock.acquire(blocking=blocking):
            return None
        try:
            moment = self.clock()
            entry_id = ULID.from_datetime(moment)
            if self._last is not None and int(entry_id) <= int(self._last):
                entry_id = ULID.from_int(int(self._last) + 1)  # ids sort in write order
            self._last = entry_id
            entry = {
                "id": str(entry_id),
                "ts": format_ts(moment),
                "op": op,
                "scope": scope,
                "name": name,
                "actor": actor,
                "session": session,
                "before": before,
                "after": after,
                "detail": detail or {},
            }
            data = orjson.dumps(entry, option=orjson.OPT_APPEND_NEWLINE)
            self._still_here()
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(self._fd, view) :]
                if self.durable and sync:
                    os.fdatasync(self._fd)
            except OSError:
                # Not recorded: cut away what did reach the file, so the next entry starts
                # on a line of its own and readers' offsets stay true.
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, self._published)
                raise
            self._published += len(data)
            entry["revertible"] = revertible(op)  # derived from the table, never stored
            entry["reverted_by"] = None
            if op in BORN and session is not None:
                self.sessions.add(session)
            self._note_source(entry)
            # Published under the lock, so listeners see entries in id order.
            for listener in self.listeners:
                listener(entry)
        finally:
            self._lock.release()
        return entry

    def _still_here(self) -> None:
        """Refuse to write when the open journal is no longer ``journal.jsonl`` of the home
        (moved away, or a link put in its place): nothing is ever written outside it."""
        if fs.same_file(self._fd, self.path):
            return
        fs.check(self.path)  # a link in its place: refused, naming it
        raise StorageFailed(
            f"{self.path.name} was moved or replaced while the daemon had it open; restart "
            "the daemon to open it again"
        )

    def of_op(self, *ops: str) -> list[dict[str, Any]]:
        """The published entries of any of ``ops``, oldest first, as written (without
        whether each was reverted); only their lines are parsed (a start reads the
        recalls out of a journal of a hundred thousand sessions' entries)."""
        try:
            data = read_bytes(self.path, 0, self._published if self._fd >= 0 else None)
        except FileNotFoundError:
            return []
        # a line of one of them holds the start of their names that the first and the
        # last of them in order share (parsed, it is checked)
        first, last = min(ops).encode(), max(ops).encode()
        shared = next((n for n in range(len(first)) if first[n : n + 1] != last[n : n + 1]), None)
        wanted = first[:shared]
        names = [op.encode() for op in ops]
        found = b"\n".join(
            line
            for line in data.split(b"\n")
            if wanted in line and any(name in line for name in names)
        )
        return [
            line
            for line in parse(found + b"\n" if found else b"").lines
            if isinstance(line.get("id"), str) and line.get("op") in ops
        ]

    def entries(self) -> list[dict[str, Any]]:
        """Every published entry, oldest first (a torn tail, and an entry still being
        synced, are left out)."""
        try:
            data = read_bytes(self.path, 0, self._published if self._fd >= 0 else None)
        except FileNotFoundError:
            return []
        lines = [line for line in parse(data).lines if isinstance(line.get("id"), str)]
        undone: dict[str, str] = {}  # an entry's id -> the latest revert of it
        for line in lines:
            detail = line.get("detail")
            target = detail.get("reverted") if isinstance(detail, dict) else None
            if isinstance(target, str):
                undone[target] = line["id"]
        return [
            line | {"revertible": revertible(line.get("op")), "reverted_by": undone.get(line["id"])}
            for line in lines
        ]

    def page(
        self,
        *,
        after: str | None = None,
        limit: int = 100,
        op: str | None = None,
        scope: str | None = None,
        name: str | None = None,
        session: str | None = None,
        actor: str | None = None,
        since: str | None = None,
        until: str | None = None,
        newest_first: bool = False,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Entries after the id ``after`` (before it when ``newest_first``), oldest first
        (newest first), with the filters that are given; ``since`` and ``until`` bound
        their times (``until`` exclusive)."""
        if after is not None and not ULID_RE.fullmatch(after):
            raise Invalid("cursor must be a journal entry id (a ULID)")
        picked: list[dict[str, Any]] = []
        more = False
        entries = self.entries()
        for entry in reversed(entries) if newest_first else entries:
            if after is not None and (
                entry["id"] >= after if newest_first else entry["id"] <= after
            ):
                continue
            if since is not None and str(entry.get("ts", "")) < since:
                continue
            if until is not None and str(entry.get("ts", "")) >= until:
                continue
            if actor is not None and entry.get("actor") != actor:
                continue
            if op is not None and not matches_op(entry.get("op"), op):
                continue
            if scope is not None and entry.get("scope") != scope:
                continue
            if name is not None and entry.get("name") != name:
                continue
            if session is not None and entry.get("session") != session:
                continue
            if len(picked) == limit:
                more = True
                break
            picked.append(entry)
        return picked, (picked[-1]["id"] if more and picked else None)

    def entries_after(self, entry_id: str) -> list[dict[str, Any]]:
        """Every published entry with an id after ``entry_id``, oldest first."""
        return [entry for entry in self.entries() if entry["id"] > entry_id]

    def get(self, entry_id: str) -> dict[str, Any] | None:
        for entry in self.entries():
            if entry["id"] == entry_id:
                return entry
        return None


# END
