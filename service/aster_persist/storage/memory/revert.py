"""Putting a journaled change back.

A revert writes the entry's ``before`` state back byte for byte (text or base64) and is
journaled itself, with the bytes it replaced as its own ``before``, so a revert can be
reverted. A state the journal withheld (it held a secret) is never written back; an
entry naming a file outside memory is refused. When the revert's journal line fails,
every file it touched is put back as it was.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from ...errors import Conflict, Invalid, NameTaken
from ...secrets import refuse_journaled
from .. import fs
from ..home import fsync_dir
from .attempts import disk
from .blocks import BlockIndex, block_of
from .catchup import held_beside
from .files import MemoryFiles
from .names import ARCHIVE, CORE


class Reverter:
    """Puts back the memory file a journal entry changed (writer thread)."""

    def __init__(self, files: MemoryFiles, index: BlockIndex) -> None:
        self._files = files
        self._index = index

    def revert(self, entry: dict[str, Any], *, actor: str = "api") -> dict[str, Any]:
        """Put the file an entry changed back as it was before; journaled, so revertible."""
        if not str(entry.get("op", "")).startswith("memory.") or entry["op"] == "memory.recall":
            raise Conflict(f"a {entry.get('op')} entry changes no memory file; nothing to revert")
        before, after = entry.get("before"), entry.get("after")
        if isinstance(before, dict):
            refuse_journaled(before)  # content withheld from the journal, or holding a secret
            if not {"content", "content_base64"} & before.keys():
                raise Conflict(
                    f"the journal does not hold what {before.get('path')} held before this "
                    f"{entry['op']} ({before.get('unkept', 'only its hash')}); nothing to "
                    "put back"
                )
        paths = {state["path"] for state in (before, after) if isinstance(state, dict)}
        targets = [self._inside(p) for p in sorted(paths)]
        current = {self._files.rel(p): self._files.state(p) for p in targets}
        held = {
            self._files.rel(p): fs.read_or_none(p) for p in targets
        }  # the state may withhold it
        now_state = next((s for s in current.values() if s is not None), None)
        with held_beside(*targets):  # what a kill before the journal line replaced
            if isinstance(after, dict) and after["path"] != (before or {}).get("path"):
                if before is not None and current[before["path"]] is not None:
                    raise NameTaken(
                        f"{before['path']} exists again; move it away to revert this {entry['op']}"
                    )
                self._files.unlink(self._inside(after["path"]))
            if before is None:
                if isinstance(after, dict):
                    self._files.unlink(self._inside(after["path"]))
                data = None
            else:
                data = _content_bytes(before)
                self._files.write(self._inside(before["path"]), data)
            for path in targets:
                if fs.is_dir(path.parent):
                    fsync_dir(path.parent)
            restored_path = self._inside(before["path"]) if before else None
            with disk(f"could not journal the revert of {entry['id']}"):
                try:
                    recorded = self._files.journal.record(
                        "memory.revert",
                        scope=entry["scope"],
                        name=entry.get("name"),
                        actor=actor,
                        before=now_state,
                        after=self._files.after(restored_path, data)
                        if restored_path is not None and data is not None
                        else None,
                        detail={"reverted": entry["id"]},
                    )
                except BaseException:
                    for rel, old in held.items():  # not journaled: put every file back
                        if old is None:
                            self._files.unlink(self._inside(rel))
                        else:
                            self._files.write(self._inside(rel), old)
                    self._reindex(targets)
                    raise
        self._reindex(targets)
        if entry.get("name"):  # a team sets what it shares to what is here now
            self._files.share.changed(entry["scope"], str(entry["name"]))
        return recorded

    def _inside(self, rel: str) -> Path:
        """The memory file a journal entry names (relative to the home), refusing any
        that would lead outside memory; the home's own path may pass through a link."""
        parts = [p for p in str(rel).split("/") if p not in ("", ".")]
        if len(parts) < 2 or parts[0] != "memory" or ".." in parts or not rel.endswith(".md"):
            raise Invalid("the journal entry names a file outside memory")
        return self._files.home.root.joinpath(*parts)

    def _reindex(self, paths: list[Path]) -> None:
        for path in paths:
            archived = path.parent.name == ARCHIVE
            folder = path.parent.parent if archived else path.parent
            scope = "global" if folder == self._files.root else f"project:{folder.name}"
            name = path.name[:-3]
            if path.name == CORE:
                continue
            data = fs.read_or_none(path)
            indexed = self._index.get(scope, name)
            if data is not None:
                self._index.put(block_of(scope, name, archived, data))
            elif indexed is not None and indexed.archived == archived:
                self._index.drop(scope, name)


def _content_bytes(state: dict[str, Any]) -> bytes:
    if "content_base64" in state:
        return base64.b64decode(state["content_base64"])
    return str(state["content"]).encode("utf-8")
