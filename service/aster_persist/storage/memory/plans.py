"""Many memory changes made as one: a plan (a consolidation pass's archives, rewrites and
new blocks) is applied whole or not at all, across a refusal at any step and a crash at
any point.

Every step is checked first, names included, against the store as it is on the writer
thread, where no other change comes in between: a step that would be refused refuses
the plan before anything changes. Then the plan is journaled (``memory.plan``, every
step with the text it writes), each step is made and journaled as a change of its own
(naming the plan), and ``memory.plan_done`` closes it, before the plan is answered as
made. A step that fails reverts the steps made before it (each from its own journal
entry, byte for byte). At start, a plan the journal holds open (a crash came between
its entry and its end, so it was never answered as made) is undone the same way.

A step is one of::

    {"do": "archive", "name": n, "detail": {...}}
    {"do": "write", "name": n, "body": text, "meta": {...}, "etag": e, "detail": {...}}
    {"do": "create", "name": n, "body": text, "meta": {...}, "detail": {...}}
"""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING, Any

from ...errors import AsterError, BlockNotFound, Invalid, NameTaken, PreconditionFailed
from ...schemas.names import check_name
from ...secrets import refuse_secrets

if TYPE_CHECKING:
    from . import MemoryStore

log = logging.getLogger("aster_persist")

STEPS = ("archive", "write", "create")


class Plans:
    """Applies plans to one memory store, and undoes those a crash cut short (writer
    thread)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    # -- one plan ----------------------------------------------------------------

    def apply(
        self, scope: str, steps: list[dict[str, Any]], *, actor: str, detail: dict[str, Any]
    ) -> list[dict[str, Any]]:
        """Check every step, journal the plan, make each step, close it; returns what was
        done, one entry a step. Refused whole (nothing changed) when a step would be."""
        if not steps:
            return []
        planned = [self._planned(scope, step) for step in self._checked(scope, steps)]
        entry = self.store.journal.record(
            "memory.plan",
            scope=scope,
            actor=actor,
            detail={**detail, "steps": planned},
        )
        try:
            done = self._run(entry, scope, planned, actor=actor)
        except AsterError as exc:
            self._undo(entry, actor=actor, why=str(exc))
            raise
        self._close(entry, scope, actor, {"done": len(done)})
        return done

    def _checked(self, scope: str, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``steps``, each checked against the store as it is now (names, ETags, secrets,
        one step a name); the first that would be refused raises."""
        seen: set[str] = set()
        for step in steps:
            kind, name = step.get("do"), str(step.get("name"))
            if kind not in STEPS:
                raise Invalid(f"a plan step does one of {', '.join(STEPS)}, not {kind!r}")
            check_name(name)
            if name in seen:
                raise Invalid(f"a plan changes block {name!r} once, not twice")
            seen.add(name)
            block = self.store.block(scope, name)
            if kind == "create":
                if block is not None:
                    state = "an archived block" if block.archived else "a block"
                    raise NameTaken(
                        f"{state} is already named {name!r}: nothing of this pass was "
                        "changed; choose another name, or restore or forget that block"
                    )
            elif block is None or block.archived:
                raise BlockNotFound(f"no live block {name!r} in {scope}")
            elif kind == "write" and step.get("etag") not in (None, block.etag):
                raise PreconditionFailed(
                    f"block {name!r} changed since the plan was made: nothing of this pass "
                    "was changed"
                )
            if kind != "archive":
                self.store.check_relations(scope, name, step.get("meta") or {})
                refuse_secrets({"content": step.get("body"), **(step.get("meta") or {})})
            refuse_secrets(step.get("detail") or {})
        return steps

    def _planned(self, scope: str, step: dict[str, Any]) -> dict[str, Any]:
        """A step as journaled: what it changes, why, and the version a rewrite replaces."""
        out = dict(step)
        if step["do"] == "write":
            block = self.store.block(scope, step["name"])
            assert block is not None  # checked first
            out["etag"] = block.etag
        return out

    def _run(
        self, entry: dict[str, Any], scope: str, steps: list[dict[str, Any]], *, actor: str
    ) -> list[dict[str, Any]]:
        done = []
        for n, step in enumerate(steps):
            detail = {**(step.get("detail") or {}), "plan": entry["id"], "step": n}
            name = step["name"]
            if step["do"] == "archive":
                self.store.move(scope, name, archive=True, actor=actor, detail=detail)
            else:
                self.store.write_block(
                    scope,
                    name,
                    body=step["body"],
                    meta=step.get("meta") or {},
                    replace=step["do"] == "write",
                    if_match=frozenset({step["etag"]}) if step["do"] == "write" else None,
                    actor=actor,
                    detail=detail,
                )
            done.append({"do": step["do"], "name": name})
        return done

    def _undo(self, entry: dict[str, Any], *, actor: str, why: str) -> None:
        """Revert every step of the plan the journal holds, newest first, each only while
        its block is still as the step left it (a hand edit since is kept), then close
        the plan: the store is as it was before the plan, but for such edits."""
        made = [
            e
            for e in self.store.journal.entries()
            if isinstance(e.get("detail"), dict) and e["detail"].get("plan") == entry["id"]
        ]
        for step in reversed(made):
            if not self._as_left(step):
                log.warning("kept %s as it is: changed since plan %s", step["name"], entry["id"])
                continue
            try:
                self.store.revert(step, actor=actor)
            except AsterError as exc:  # left as it is, and said
                log.error("could not undo %s of plan %s: %s", step["op"], entry["id"], exc)
        self._close(entry, str(entry["scope"]), actor, {"undone": True, "why": why[:300]})

    def _as_left(self, step: dict[str, Any]) -> bool:
        """Whether the block a step's entry changed still holds what the step wrote."""
        after = step.get("after")
        if not isinstance(after, dict):
            return False
        try:
            text, _ = self.store.read_block(
                str(step["scope"]), str(step["name"]), archived=step["op"] == "memory.archive"
            )
        except BlockNotFound:
            return False
        return hashlib.sha256(text.encode("utf-8")).hexdigest() == after.get("sha256")

    def _close(self, entry: dict[str, Any], scope: str, actor: str, detail: dict[str, Any]) -> None:
        self.store.journal.record(
            "memory.plan_done", scope=scope, actor=actor, detail={"plan": entry["id"], **detail}
        )

    # -- at start ----------------------------------------------------------------

    def finish(self) -> list[str]:
        """Undo every plan the journal holds open (a crash came before its end, so it was
        never answered as made); their ids."""
        finished = []
        for entry in list(self.store.journal.open_plans.values()):
            actor = str(entry.get("actor") or "consolidator")
            self._undo(entry, actor=actor, why="cut short by a crash, undone at start")
            log.warning("undid plan %s, cut short by a crash", entry["id"])
            finished.append(str(entry["id"]))
        return finished
