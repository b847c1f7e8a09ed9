"""At start, the journal caught up with the memory files, before anything reads them.

Every change of a memory file is made on disk, then journaled. A kill between the two,
or an edit made while the daemon was stopped, leaves a file that the journal's last
entry for its path does not describe, and nothing would ever journal it. So at start
each live and archived memory file is compared with the state the journal last gave
its path (the hash in an entry's ``after``, or gone), and each difference is journaled
as found at start (actor ``watcher``):

- a file the journal never had is ``memory.write``; one it had with other bytes,
  ``memory.edit``; one it had that is gone, ``memory.delete``;
- a block gone from its place and found, the same bytes, in the archive is
  ``memory.archive`` (back from it, ``memory.restore``); one file under both names (a
  move cut short between its link and its unlink) keeps the name the journal gives it,
  and the other link, the move's own, is removed;
- the bytes a change replaced are its ``before`` when a temporary file beside it still
  holds them (a write cut short leaves them there); otherwise the ``before`` gives the
  hash the journal had and says that its content was not kept (a revert of it is
  refused);
- a change of a block that a plan the journal holds open names is journaled as that
  plan's step, so undoing the plan puts it back too.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import UnsafePath
from ...schemas.names import NAME_RE, SLUG_RE
from ...secrets import flagged
from .. import fs
from ..home import fsync_dir
from ..journal import Journal
from .files import MemoryFiles, md_files
from .names import ARCHIVE, CORE

# the entries that change a memory file, each with the state it left in ``after``
CHANGES = (
    "memory.write",
    "memory.edit",
    "memory.merge",
    "memory.delete",
    "memory.archive",
    "memory.restore",
    "memory.revert",
    "memory.conflict",
)
WAYS = {"create": "memory.write", "write": "memory.edit"}  # a plan's step, as journaled
FOUND = "found at start, not as the journal last had it"
UNKEPT = (
    "not kept: the file changed while the daemon was stopped, or by a change cut short "
    "before its journal line, and only its hash was journaled"
)


@dataclass(frozen=True)
class Place:
    """Where a memory file lives: its scope, its name (a block's, or ``ASTER.md``), and
    whether it is in the archive."""

    scope: str
    name: str
    archived: bool


class Catchup:
    """Journals what the memory files hold that the journal does not say (at start,
    on the writer thread, before the store reads them)."""

    def __init__(self, files: MemoryFiles, journal: Journal) -> None:
        self._files = files
        self._journal = journal
        self._steps: dict[str, int] | None = None  # steps journaled, by plan (read once)

    def run(self) -> list[dict[str, Any]]:
        """Journal every memory file that differs from the journal's last state of it;
        the entries written."""
        said = last_states(self._journal.of_op(*CHANGES))
        found = self._on_disk()
        places = {place: rel for rel, (place, _) in found.items()}
        for rel in said:
            place = self._place_of(rel)
            if place is not None:
                places.setdefault(place, rel)
        entries: list[dict[str, Any]] = []
        done: set[Place] = set()
        for place in sorted(places, key=lambda p: (p.scope, p.name, p.archived)):
            if place in done:
                continue
            other = Place(place.scope, place.name, not place.archived)
            done |= {place, other}
            if place.name == CORE:
                entries += self._one(place, said, found)
                continue
            pair = (
                self._files.path(place.scope, place.name),
                self._files.path(place.scope, place.name, archived=True),
            )
            entries += self._block(place.scope, place.name, pair, said, found)
        return entries

    # -- what is on disk, and where -------------------------------------------------

    def _path(self, place: Place) -> Path:
        if place.name == CORE:
            return self._files.folder(place.scope) / CORE
        return self._files.path(place.scope, place.name, archived=place.archived)

    def _on_disk(self) -> dict[str, tuple[Place, os.stat_result]]:
        """Every memory file there is, by its path in the home (a link left out)."""
        out = {}
        for scope in ["global", *self._files.project_scopes()]:
            for archived in (False, True):
                folder = self._files.folder(scope) / (ARCHIVE if archived else "")
                for file_name, st in md_files(folder).items():
                    name = file_name[:-3]
                    if file_name == CORE:
                        if archived:
                            continue
                        name = CORE
                    elif not NAME_RE.fullmatch(name):
                        continue
                    out[self._files.rel(folder / file_name)] = (Place(scope, name, archived), st)
        return out

    def _place_of(self, rel: str) -> Place | None:
        """The place of a path the journal names, or None for one no memory file has."""
        parts = rel.split("/")
        if len(parts) < 2 or parts[0] != "memory" or not parts[-1].endswith(".md"):
            return None
        folder, file_name = parts[1:-1], parts[-1]
        archived = bool(folder) and folder[-1] == ARCHIVE
        if archived:
            folder = folder[:-1]
        if folder == []:
            scope = "global"
        elif len(folder) == 2 and folder[0] == "projects" and SLUG_RE.fullmatch(folder[1]):
            scope = f"project:{folder[1]}"
        else:
            return None
        if file_name == CORE:
            return None if archived else Place(scope, CORE, False)
        name = file_name[:-3]
        return Place(scope, name, archived) if NAME_RE.fullmatch(name) else None

    def _read(self, path: Path) -> bytes | None:
        try:
            return fs.read_or_none(path)
        except UnsafePath:
            return None  # a link: reported, left out

    def _not_a_file(self, path: Path) -> bool:
        """Whether something other than a file has the name, or a folder above it is a
        link: never read, and left as it is (not journaled as a removal)."""
        try:
            st = fs.lstat(path)
        except UnsafePath:
            return True
        return st is not None and not stat.S_ISREG(st.st_mode)

    # -- one block, live and archived ---------------------------------------------------

    def _block(
        self,
        scope: str,
        name: str,
        pair: tuple[Path, Path],
        said: dict[str, str | None],
        found: dict[str, tuple[Place, os.stat_result]],
    ) -> list[dict[str, Any]]:
        live, archived = pair
        rels = (self._files.rel(live), self._files.rel(archived))
        stats = (found.get(rels[0]), found.get(rels[1]))
        if (  # a move cut short between its link and its unlink: one file, both names
            stats[0] is not None
            and stats[1] is not None
            and os.path.samestat(stats[0][1], stats[1][1])
        ):
            keep = 1 if said.get(rels[1]) and not said.get(rels[0]) else 0
            fs.unlink(pair[1 - keep])
            fsync_dir(pair[1 - keep].parent)
            found.pop(rels[1 - keep])
        data = (self._read(live), self._read(archived))
        hashes = tuple(None if d is None else _sha(d) for d in data)
        for was, now in ((0, 1), (1, 0)):  # moved, unjournaled: gone from one, in the other
            moved = data[now]
            if (
                moved is not None
                and data[was] is None
                and not self._not_a_file(pair[was])
                and said.get(rels[was]) == hashes[now]
                and said.get(rels[now]) != hashes[now]
            ):
                op = "memory.archive" if now == 1 else "memory.restore"
                before = self._files.content_state(pair[was], moved)
                after = self._files.after(pair[now], moved)
                return [self._record(op, Place(scope, name, now == 1), before, after, moved)]
        entries = []
        for n in (0, 1):
            entries += self._one(Place(scope, name, n == 1), said, found, data[n])
        return entries

    def _one(
        self,
        place: Place,
        said: dict[str, str | None],
        found: dict[str, tuple[Place, os.stat_result]],
        data: bytes | None = None,
    ) -> list[dict[str, Any]]:
        path = self._path(place)
        if self._not_a_file(path):
            return []
        rel = self._files.rel(path)
        if data is None and rel in found:
            data = self._read(path)
        was = said.get(rel)
        if (None if data is None else _sha(data)) == was:
            return []
        if was is None:
            op, before = "memory.write", None
        else:
            op = "memory.delete" if data is None else "memory.edit"
            before = self._before(path, was)
        after = None if data is None else self._files.after(path, data)
        return [self._record(op, place, before, after, data)]

    def _before(self, path: Path, sha: str) -> dict[str, Any]:
        """What a file held, hashed ``sha``: from a temporary file beside it that holds
        those bytes (a write cut short leaves them there), or said not to be kept."""
        prefix = f"{fs.TEMP_MARK}{path.name}."
        for temp, _ in fs.listdir(path.parent):
            if temp.startswith(prefix):
                held = self._read(path.parent / temp)
                if held is not None and _sha(held) == sha:
                    return self._files.content_state(path, held)
        return {"path": self._files.rel(path), "sha256": sha, "unkept": UNKEPT}

    def _record(
        self,
        op: str,
        place: Place,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        data: bytes | None,
    ) -> dict[str, Any]:
        step = self._step_of(place, op, data)
        detail: dict[str, Any] = {"by": FOUND, **step, **flagged(data)}
        return self._journal.record(
            op,
            scope=place.scope,
            name=place.name,
            actor="watcher",
            before=before,
            after=after,
            detail=detail,
        )

    def _step_of(self, place: Place, op: str, data: bytes | None) -> dict[str, Any]:
        """``{"plan": id, "step": n}`` when this change is the step a plan the journal
        holds open was making when it was cut short: the first step not journaled,
        changing this block in the step's way and, for a write, to the step's text. So
        undoing the plan undoes it too; any other change (a file a person made while
        the daemon was stopped) is theirs and kept."""
        for plan_id, entry in self._journal.open_plans.items():
            detail = entry.get("detail")
            steps = detail.get("steps") if isinstance(detail, dict) else None
            if entry.get("scope") != place.scope or not isinstance(steps, list):
                continue
            made = self._made(plan_id)
            step = steps[made] if made < len(steps) else None
            if not isinstance(step, dict) or step.get("name") != place.name:
                continue
            body, kind = step.get("body"), step.get("do")
            written = isinstance(body, str) and data is not None and body.strip() in _text(data)
            if kind == "archive":
                its_way = op == "memory.archive"
            else:
                its_way = WAYS.get(str(kind)) == op and not place.archived and written
            if its_way:
                return {"plan": plan_id, "step": made}
        return {}

    def _made(self, plan_id: str) -> int:
        """How many steps of a plan the journal holds."""
        if self._steps is None:
            self._steps = {}
            for entry in self._journal.of_op(*CHANGES):
                detail = entry.get("detail")
                plan = detail.get("plan") if isinstance(detail, dict) else None
                if isinstance(plan, str):
                    self._steps[plan] = self._steps.get(plan, 0) + 1
        return self._steps.get(plan_id, 0)


@contextmanager
def held_beside(*paths: Path | None) -> Iterator[None]:
    """Keep the bytes of each file of ``paths`` in a temporary file beside it while a
    change that is journaled after it is made (a revert, a team's version put in
    place): a kill before its journal line leaves them there, for the next start to
    journal as what the change replaced. Removed once the change is journaled or put
    back."""
    temps = []
    try:
        for path in paths:
            data = None if path is None else fs.read_or_none(path)
            if path is not None and data is not None:
                temps.append(fs.write_temp(path, data))
        yield
    finally:
        for temp in temps:
            fs.unlink(temp)


def last_states(entries: list[dict[str, Any]]) -> dict[str, str | None]:
    """The state the journal last gave each path its entries name: the hash of the
    bytes a change left there, or None when it left nothing (a removal, a move away)."""
    said: dict[str, str | None] = {}
    for entry in entries:
        before, after = entry.get("before"), entry.get("after")
        if isinstance(before, dict) and isinstance(before.get("path"), str):
            said[before["path"]] = None
        if isinstance(after, dict) and isinstance(after.get("path"), str):
            sha = after.get("sha256")
            said[after["path"]] = sha if isinstance(sha, str) else None
    return said


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
