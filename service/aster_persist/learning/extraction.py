"""Extraction: the memories of one completed turn, asked of the model and written as
blocks with provenance (SPEC §7).

The model is shown the turn within the input budget and the related memories the index
finds, by name; its answer is validated (`validation`) and saved in the job before it is
applied. Every item passes the store's own refusal of secrets too (every field,
provenance included); rejected items are journaled with the reason, secrets redacted.
Applying a saved answer again after a crash skips what the first time did, and a block
already written merges with its own copy (the same normalized content), so nothing is
created twice.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..errors import AsterError, Invalid, NameTaken
from ..index.text import parse_query
from ..schemas.rendering import retracted
from ..services.tools import relations
from ..storage.memory import slugify
from .model import ModelClient
from .prompts import EXTRACTION_PROMPT, EXTRACTION_SCHEMA, SCHEMA_NAME
from .provenance import held_because, origin_of, said_by
from .turns import render_turn, turn_of
from .validation import item_meta, redact, validate_items

if TYPE_CHECKING:
    from ..services.memory import Memory
    from .transcripts import Transcripts

RELATED = 5  # existing memories shown to the model


class Extraction:
    """Asks the model what a turn teaches, and applies its validated answer; counts the
    items accepted and rejected."""

    def __init__(
        self,
        sessions: Transcripts,
        memory: Memory,
        model: ModelClient | None,
        *,
        max_items: int,
        max_input_chars: int,
    ) -> None:
        self.sessions = sessions
        self.memory = memory
        self.model = model
        self.max_items = max_items
        self.max_input_chars = max_input_chars
        self.counts = {"accepted": 0, "rejected": 0}

    async def extract(self, job: dict[str, Any]) -> dict[str, Any]:
        """Ask the model about one turn; its validated answer, with what was shown."""
        assert self.model is not None
        lines, info = await self._lines(job)
        if int(job["to_seq"]) in retracted(lines):  # taken back since: nothing to learn
            nothing: list[Any] = []
            seq = int(job["to_seq"])
            return {"accepted": nothing, "rejected": nothing, "first_seq": seq,
                    "last_seq": seq, "repo_root": info.repo_root}  # fmt: skip
        turn, first, last = turn_of(lines, job.get("from_seq"), int(job["to_seq"]))
        text = render_turn(turn, self.max_input_chars)
        scope = await self.memory.scope_of(info.repo_root)
        related = await self._related(text, scope)
        shown = "\n".join(
            f"- {hit['name']}: {hit['description']}{relations(hit)}" for hit in related
        )
        messages = [
            {"role": "system", "content": EXTRACTION_PROMPT % {"max_items": self.max_items}},
            {
                "role": "user",
                "content": f"Existing memories:\n{shown or '(none)'}\n\nThe turn:\n{text}",
            },
        ]
        answer = await self.model.json(messages, schema=EXTRACTION_SCHEMA, name="memory_items")
        accepted, rejected = validate_items(
            answer, max_items=self.max_items, shown={hit["name"] for hit in related}
        )
        said = said_by(turn)
        held = []
        for item in list(accepted):  # whose words each is, and none a tool's instruction
            item["origin"] = origin_of(item["content"], said)
            why = held_because(item, said)
            if why is not None:
                accepted.remove(item)
                held.append({"item": redact(item), "reason": why, "origin": item["origin"]})
        return {
            "accepted": accepted,
            "rejected": rejected,
            "held": held,
            "first_seq": first,
            "last_seq": last,
            "repo_root": info.repo_root,
        }

    async def refused_reply(self, job: dict[str, Any], why: str) -> None:
        """Journal a reply of the model's that could not be used at all (not JSON, not an
        object) as a rejection of the turn's items, with the reason (redacted)."""
        try:
            _lines, info = await self._lines(job)
            scope = await self.memory.scope_of(info.repo_root)
        except AsterError:
            scope = "global"  # the session is gone: the rejection is still said
        await self.memory.record(
            "memory.rejected",
            scope=scope,
            actor="extractor",
            session=str(job["session"]),
            detail={
                "item": None,
                "reason": f"the model's reply was refused: {redact(why)}",
                "job": job.get("id"),
            },
        )
        self.counts["rejected"] += 1

    async def _lines(self, job: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
        """The events a job needs: the bytes of its turn when it knows them (a long
        session is not read again for every turn), else the whole transcript."""
        session = str(job["session"])
        span = job.get("bytes")
        held = self.sessions.open_summary(session)
        if span and "from_seq" not in job and held is not None:
            start, end = span
            lines, _next = await asyncio.to_thread(self.sessions.read_span, session, start, end)
            seqs = [line["seq"] for line in lines if isinstance(line.get("seq"), int)]
            after = job.get("after_seq")
            # The whole turn must be there: from right after the turn before it (appends
            # that shared a sync can put the start of a turn before these bytes).
            whole = after is None or any(0 < s <= after + 1 for s in seqs)
            if job["to_seq"] in seqs and whole:
                # and what was taken back since (a retraction comes after what it takes)
                later, _end = await asyncio.to_thread(
                    self.sessions.read_span, session, end, held[0]
                )
                return lines + [e for e in later if e.get("type") == "retraction"], held[1]
        lines, _raw, info = await self.sessions.read(session)
        return lines, info

    async def _related(self, text: str, scope: str) -> list[dict[str, Any]]:
        words = " ".join(text.split()[:60])
        if not words.strip():
            return []
        scopes = ["global"] if scope == "global" else [scope, "global"]
        try:
            return await self.sessions.search_memory(
                parse_query(words), scopes=scopes, kinds=("block",), k=RELATED
            )
        except AsterError:
            return []

    async def apply(self, job: dict[str, Any], *, again: bool = False) -> None:
        """Write a job's accepted items and journal its rejected ones; ``again`` (a saved
        answer applied after a crash) skips what the first time already did."""
        result = job["result"]
        session = str(job["session"])
        project = await self.memory.scope_of(result["repo_root"])
        journaled: list[Any] = []
        if again:
            journaled = [
                {k: v for k, v in e["detail"].items() if k != "job"}
                for e in await self.memory.journal_entries()
                if e.get("op") in ("memory.rejected", "memory.held")
                and e["detail"].get("job") == job.get("id")
            ]
        for item in result["accepted"]:
            scope = project if item["scope"] == "project" else "global"
            meta = {
                **item_meta(item),
                "source_session": session,
                "source_seq": [result["first_seq"], result["last_seq"]],
                "workspace": result["repo_root"],
                "schema": SCHEMA_NAME,
                "supersedes": item.get("supersedes") or [],
                "conflicts_with": item.get("conflicts_with") or [],
            }
            base = slugify(item["title"])[:56]
            # superseding the block of its own name is an edit of that block
            edit = base in meta["supersedes"]
            meta["supersedes"] = [n for n in meta["supersedes"] if n != base]
            meta = {k: v for k, v in meta.items() if v != []}
            body = item["content"].strip() + "\n"
            if again and await self.memory.holds(scope, body, meta):
                continue  # written (or merged) before the crash
            for attempt in range(1, 6):
                name = base if attempt == 1 else f"{base}-{attempt}"
                try:
                    await self.memory.write_block(
                        scope,
                        name,
                        body=item["content"].strip() + "\n",
                        meta=meta,
                        replace=edit and attempt == 1,
                        actor="extractor",
                        session=session,
                    )
                    self.counts["accepted"] += 1
                    break
                except NameTaken:
                    continue  # another block has this name: the next one
                except Invalid as exc:  # a secret the first pass did not see, a bad name
                    result["rejected"].append({"item": redact(item), "reason": exc.detail})
                    break
            else:
                result["rejected"].append({"item": redact(item), "reason": "no free name"})
        for holding in result.get("held", []):  # not stored on a tool's word: for review
            if holding in journaled:
                continue
            await self.memory.record(
                "memory.held",
                scope=project if holding["item"].get("scope") == "project" else "global",
                actor="extractor",
                session=session,
                detail={**holding, "job": job.get("id")},
            )
        for rejection in result["rejected"]:
            if rejection in journaled:
                continue
            await self.memory.record(
                "memory.rejected",
                scope=project,
                actor="extractor",
                session=session,
                detail={**rejection, "job": job.get("id")},
            )
            self.counts["rejected"] += 1
