"""Consolidation: merges, archives and new blocks for one scope, proposed by the model
and made only with ``apply`` (a proposal from an earlier dry run is applied as it is).

A block in which a hand edit left a secret is never shown to the model; a proposal is
validated (`validation`) before anything is done, and a merge of a block longer than
the model was shown is refused, so no text is lost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import LEARNING_OFF, AsterError, LearningOff, ModelUnavailable
from ..schemas import frontmatter
from ..storage.memory import slugify
from ..storage.memory.hygiene import protection
from .model import ModelClient, ModelError
from .prompts import CONSOLIDATION_PROMPT, CONSOLIDATION_SCHEMA, SCHEMA_NAME
from .validation import item_meta, redact, validate_proposal

if TYPE_CHECKING:
    from ..services.memory import Memory

CONSOLIDATE_BODY_CHARS = 400
PLAN = ("merges", "archives", "new", "rejected")  # what a pass proposes, and refused


def summary(plan: dict[str, Any]) -> dict[str, Any]:
    """What a proposal says, for the journal: each change with the model's reason (its
    texts are in the blocks it writes, so they are left out here)."""
    return {
        "merges": [{k: m[k] for k in ("into", "from", "reason")} for m in plan["merges"]],
        "archives": plan["archives"],
        "new": [{"title": n["title"], "reason": n["reason"]} for n in plan["new"]],
        "rejected": [r["reason"] for r in plan["rejected"]],
    }


class Consolidation:
    """A scope's blocks shown to the model and its proposal applied as one plan."""

    def __init__(
        self, memory: Memory, model: ModelClient | None, *, max_items: int, max_blocks: int
    ) -> None:
        self.memory = memory
        self.model = model
        self.max_items = max_items
        self.max_blocks = max_blocks

    async def boundary_pass(self, job: dict[str, Any]) -> None:
        """A pass a session boundary made due (``job``: its scope and trigger), applied;
        a model that fails, or a pass refused whole, is journaled, and the queue goes on."""
        scope, trigger = str(job["scope"]), str(job["trigger"])
        try:
            await self.consolidate(scope, apply=True, trigger=trigger, automatic=True)
        except AsterError as exc:  # no model, or a pass refused whole: nothing changed
            failed = redact(str(exc))[:300]  # an error may quote the endpoint's reply
            await self.memory.record(
                "memory.consolidation",
                scope=scope,
                actor="consolidator",
                detail={"trigger": trigger, "applied": False, "failed": failed},
            )

    async def consolidate(
        self,
        scope: str,
        *,
        apply: bool,
        proposal: dict[str, Any] | None = None,
        trigger: str = "consolidation asked for",
        automatic: bool = False,
    ) -> dict[str, Any]:
        """Propose (or with ``apply``, make) merges, archives and new blocks for a scope.
        A ``proposal`` from an earlier dry run is applied as it is, after validation. An
        ``automatic`` pass (no one reviews it) never shows the model a protected block
        (pinned, often recalled, consolidated, holding duplicates, related), so it can
        neither archive nor rewrite one, and asks nothing of fewer than two blocks."""
        memory = self.memory
        # a block in which a hand edit left a secret is never shown to the model
        blocks = [b for b in memory.blocks(scope) if not b.secrets]
        if automatic:
            blocks = [b for b in blocks if protection(b, memory.usage(b)["recall_count"]) is None]
            if len(blocks) < 2:
                nothing: list[Any] = []
                return {"scope": scope, "applied": False, **dict.fromkeys(PLAN, nothing)}
        blocks = blocks[: self.max_blocks]
        asked = proposal is None
        names = {block.name for block in blocks}
        if proposal is None:
            if self.model is None:
                raise LearningOff(LEARNING_OFF)
            listing = []
            for block in blocks:
                text, _block = await memory.read(scope, block.name)
                body = frontmatter.body_of(text)[:CONSOLIDATE_BODY_CHARS]
                listing.append(f"## {block.name}\n{block.description}\n{body}")
            try:
                proposal = await self.model.json(
                    [
                        {"role": "system", "content": CONSOLIDATION_PROMPT},
                        {"role": "user", "content": "\n\n".join(listing) or "(no blocks)"},
                    ],
                    schema=CONSOLIDATION_SCHEMA,
                    name="consolidation",
                    max_tokens=2048,
                )
            except ModelError as exc:
                raise ModelUnavailable(str(exc)) from None
        plan = validate_proposal(proposal, names, max_items=self.max_items)
        for merge in list(plan["merges"]):
            # The model saw each block cut short: a merge of a longer one would lose the rest.
            long = [
                name
                for name in (merge["into"], *merge["from"])
                if len(frontmatter.body_of((await memory.read(scope, name))[0]))
                > CONSOLIDATE_BODY_CHARS
            ]
            if long:
                plan["merges"].remove(merge)
                plan["rejected"].append(
                    {
                        "merge": merge,
                        "reason": f"{', '.join(long)} is longer than the model was shown",
                    }
                )
        if asked:  # what the model proposed and why, kept: a change can be explained
            await self.memory.record(
                "memory.consolidation",
                scope=scope,
                actor="consolidator",
                detail={"trigger": trigger, "applied": apply, **summary(plan)},
            )
        if not apply:
            return {"scope": scope, "applied": False, **plan}
        steps = await self._steps(scope, plan, trigger)
        made = await self.memory.apply_plan(
            scope, steps, actor="consolidator", detail={"trigger": trigger}
        )
        return {"scope": scope, "applied": True, **plan, "done": _done(plan, made)}

    async def _steps(self, scope: str, plan: dict[str, Any], trigger: str) -> list[dict[str, Any]]:
        """The plan as the steps the store makes as one: each merge's sources archived
        before its target is rewritten (so the new text is never taken for one of
        theirs), then the archives, then the new blocks."""
        steps: list[dict[str, Any]] = []
        for merge in plan["merges"]:
            text, target = await self.memory.read_block(scope, merge["into"])
            meta = {k: v for k, v in frontmatter.parse(text).meta.items() if k != "name"}
            why = {"reason": f"merged into {merge['into']}: {merge['reason']}", "trigger": trigger}
            steps += [{"do": "archive", "name": source, "detail": why} for source in merge["from"]]
            earlier = [str(n) for n in meta.get("supersedes") or [] if isinstance(n, str)]
            steps.append(
                {
                    "do": "write",
                    "name": merge["into"],
                    "body": merge["content"].strip() + "\n",
                    "meta": {
                        **meta,
                        "supersedes": list(dict.fromkeys([*earlier, *merge["from"]])),
                        "consolidated": True,  # rewritten by consolidation: never pruned
                    },
                    "etag": target.etag,  # an edit made meanwhile is never written over
                    "detail": {"reason": merge["reason"], "trigger": trigger},
                }
            )
        for archive in plan["archives"]:
            block = self.memory.block(scope, archive["name"])
            if block is not None and not block.archived:
                why = {"reason": archive["reason"], "trigger": trigger}
                steps.append({"do": "archive", "name": archive["name"], "detail": why})
        for item in plan["new"]:
            steps.append(
                {
                    "do": "create",
                    "name": slugify(item["title"])[:56],
                    "body": item["content"].strip() + "\n",
                    "meta": {**item_meta(item), "schema": SCHEMA_NAME, "consolidated": True},
                    "detail": {"reason": item["reason"], "trigger": trigger},
                }
            )
        return steps


def _done(plan: dict[str, Any], made: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a pass did, as it says it: each merge, each archive, each new block."""
    written = {step["name"] for step in made if step["do"] == "write"}
    done: list[dict[str, Any]] = [
        {"merged": merge["from"], "into": merge["into"]}
        for merge in plan["merges"]
        if merge["into"] in written
    ]
    merged = {name for merge in plan["merges"] for name in merge["from"]}
    done += [
        {"archived": step["name"]}
        for step in made
        if step["do"] == "archive" and step["name"] not in merged
    ]
    done += [{"created": step["name"]} for step in made if step["do"] == "create"]
    return done
