"""The journal on the wire: one entry a change, a page of them, and the one table of
its operations (name, whether it can be reverted, what it records), which the store,
the API, the feed and the dashboard all read."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

ACTORS = ("api", "tool", "extractor", "consolidator", "watcher", "cli", "dashboard", "team")
CLIENT_ACTORS = ("api", "cli", "dashboard")  # what a request may say it is (X-Aster-Actor)
# Who is asking, for the request being served: a change journaled as made by "api" is
# journaled as made by this instead (the guard sets it from the X-Aster-Actor header;
# the writer thread runs each call in the caller's context, so every path sees it).
REQUEST_ACTOR: ContextVar[str] = ContextVar("aster_request_actor", default="api")


class Op(NamedTuple):
    revertible: bool
    records: str


OPS: dict[str, Op] = {
    "memory.write": Op(True, "a new memory file, or a note added to ASTER.md"),
    "memory.edit": Op(True, "a memory file changed (by the API, a tool, or by hand)"),
    "memory.merge": Op(True, "a duplicate merged into the block it repeats"),
    "memory.delete": Op(True, "a block forgotten, or a memory file removed by hand"),
    "memory.archive": Op(True, "a block moved to .archive/"),
    "memory.restore": Op(True, "a block back from .archive/"),
    "memory.revert": Op(True, "a change undone (reverting it redoes the change)"),
    "memory.conflict": Op(
        True,
        "another machine's version put in place of a change made here that it had not "
        "seen: this machine's version is the entry's before (reverting it keeps that one)",
    ),
    "memory.recall": Op(False, "a block read by an agent (usage, not content)"),
    "memory.rejected": Op(False, "an extracted item refused, with the reason"),
    "memory.held": Op(False, "an extracted item held for review: a tool's instruction-like words"),
    "memory.consolidation": Op(
        False, "a consolidation pass: what triggered it, the model's proposals and reasons"
    ),
    "memory.plan": Op(
        False,
        "a change of many steps (a consolidation pass) about to be made: every step, "
        "written before the first, so start-up completes or undoes one a crash cut short",
    ),
    "memory.plan_done": Op(False, "every step of a plan made, or every step undone"),
    "session.created": Op(True, "a session made"),
    "session.imported": Op(True, "a session brought in from another tool's file"),
    "session.renamed": Op(True, "a session's title changed"),
    "session.deleted": Op(True, "a session moved to its project's trash"),
    "session.restored": Op(True, "a session back from the trash"),
    "session.pruned": Op(True, "a session moved to the trash by prune"),
    "session.purged": Op(False, "a trashed session deleted for good"),
    "session.compressed": Op(
        False, "a cold session kept compressed (<ulid>.jsonl.zst), its plain file removed"
    ),
    "session.decompressed": Op(
        False, "a compressed session made plain again: appended to, or settled at start"
    ),
    "session.made_whole": Op(
        False,
        "a copy that referred to another session's events given them itself, before that "
        "session was deleted for good",
    ),
    "session.appended": Op(False, "lines another program appended to a transcript"),
    "session.damaged": Op(False, "an unreadable line another program left"),
    "session.source_gone": Op(False, "a followed file deleted at its source; its session stays"),
    "home.symlink_refused": Op(False, "a symbolic link met below the data home, never followed"),
}


def revertible(op: Any) -> bool:
    """Whether an entry of ``op`` can be reverted (unknown ops cannot)."""
    found = OPS.get(op) if isinstance(op, str) else None
    return found is not None and found.revertible


class JournalEntry(BaseModel):
    id: str
    ts: str
    op: str
    scope: str
    name: str | None
    actor: str
    session: str | None
    before: Any
    after: Any
    detail: dict[str, Any]
    revertible: bool = Field(
        default=False, description="Whether POST /v1/journal/{id}/revert can undo it."
    )
    reverted_by: str | None = Field(
        default=None, description="The latest entry that reverted this one, if any."
    )


class JournalPage(BaseModel):
    items: list[JournalEntry]
    next_cursor: str | None


class JournalOperation(BaseModel):
    op: str
    revertible: bool
    records: str = Field(description="What an entry of this operation records.")


class JournalOperations(BaseModel):
    """The journal's operations and the actors an entry may name, as the store knows
    them (the dashboard's filters are drawn from this, never from a copy)."""

    operations: list[JournalOperation]
    actors: list[str]


def operations(actors: tuple[str, ...]) -> dict[str, Any]:
    """``JournalOperations``: the table above, and the actors given."""
    table = [{"op": op, "revertible": o.revertible, "records": o.records} for op, o in OPS.items()]
    return {"operations": table, "actors": list(actors)}


def matches_op(value: Any, wanted: str) -> bool:
    """``op=session.created`` matches itself; ``op=session`` matches every ``session.*``."""
    if not isinstance(value, str):
        return False
    return value == wanted or ("." not in wanted and value.startswith(wanted + "."))
