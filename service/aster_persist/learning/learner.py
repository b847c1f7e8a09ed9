"""Learning from sessions: extraction of memories from completed turns, titles for
untitled sessions, and consolidation of a scope's blocks (SPEC §7).

An append that completes a turn (an assistant message with text and no tool calls)
queues a job in the durable `JobQueue` before it returns (a small file, not synced on
the request path); one worker runs the jobs in order, off the request path, so a slow
model delays no agent. A job's life:

1. the model is asked (the turn within the input budget, and the related memories the
   index finds, by name);
2. its answer is validated for structure and safety only, and saved in the job file;
3. accepted items are written as blocks with provenance, rejected ones journaled with
   the reason (secrets redacted); then the job file is removed.

Every item passes the store's own refusal of secrets too (every field, provenance
included), and consolidation never shows the model a block a hand edit left a secret in.

A crash before 2 asks again; a crash after 2 applies the saved answer again, and a
block already written merges with its own copy (the same normalized content), so
nothing is created twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from ..errors import AsterError, Invalid, ModelUnavailable, NameTaken
from ..index.text import parse_query
from ..storage import frontmatter
from ..storage.memory import MemoryStore, slugify
from ..storage.secrets import scan_text
from ..storage.summary import first_text
from .model import ModelClient, ModelError
from .queue import JobQueue

if TYPE_CHECKING:
    from ..sessions import Sessions

log = logging.getLogger(__name__)

MAX_RETRY_DELAY = 60.0  # seconds between tries of a job while the model is unreachable
SCHEMA_NAME = "aster.memory.v1"
RELATED = 5  # existing memories shown to the model
TOOL_RESULT_CHARS = 1000  # a tool result is context: this much of each
CONSOLIDATE_BLOCKS = 40  # most blocks one consolidation pass shows the model
CONSOLIDATE_BODY_CHARS = 400

ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {"enum": ["semantic", "procedural"]},
        "title": {"type": "string"},
        "content": {"type": "string"},
        "importance": {"type": "number", "minimum": 0, "maximum": 1},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "scope": {"enum": ["project", "global"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "reason": {"type": "string"},
        "supersedes": {"type": "array", "items": {"type": "string"}},
        "conflicts_with": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["type", "title", "content", "importance", "confidence", "scope", "reason"],
}
EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": ITEM_SCHEMA}},
    "required": ["items"],
}
TITLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"title": {"type": "string"}},
    "required": ["title"],
}
CONSOLIDATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "merges": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "into": {"type": "string"},
                    "from": {"type": "array", "items": {"type": "string"}},
                    "content": {"type": "string"},
                    "reason": {"type": "string"},
                },
                "required": ["into", "from", "content", "reason"],
            },
        },
        "archives": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "reason": {"type": "string"}},
                "required": ["name", "reason"],
            },
        },
        "new": {"type": "array", "items": ITEM_SCHEMA},
    },
    "required": ["merges", "archives", "new"],
}

EXTRACTION_PROMPT = """You keep the long-term memory of a coding agent.
From the conversation turn below, extract only what would change a future answer:
the user's stated preferences, project conventions, facts about the environment,
and procedures that worked or failed. Nothing that is only true for this turn.
Tool calls and results are context: never copy them into memory as they are.
Answer with JSON: {"items": [...]}, at most %(max_items)d items, or {"items": []}.
Each item: type (semantic or procedural), title (a few words), content (one to three
sentences), importance and confidence (0 to 1), scope (project, or global for what
holds across projects), tags, reason (why it will matter later), and optionally
supersedes / conflicts_with: names of the existing memories below that it replaces or
contradicts. Use only those names.
Never include secrets, tokens, passwords or keys."""

TITLE_PROMPT = """Give this coding session a short title (at most 8 words) that says
what it is about. Answer with JSON: {"title": "..."}."""

CONSOLIDATION_PROMPT = """You tidy the long-term memory of a coding agent. Below are its
memory blocks (name, description, start of the content). Propose:
- merges: blocks that say the same thing, merged "into" one of them (with the merged
  content), the others ("from") archived;
- archives: blocks that are stale or contradicted by another;
- new: distilled blocks that generalise several (same fields as a memory item).
Use only the names shown. Give a reason for each. Answer with JSON:
{"merges": [...], "archives": [...], "new": [...]}; empty lists when all is well."""


class Learner:
    """The extraction queue's worker, and the model-backed memory operations."""

    def __init__(
        self,
        sessions: Sessions,
        memory: MemoryStore,
        queue: JobQueue,
        model: ModelClient | None,
        *,
        extraction: bool = True,
        max_items: int = 5,
        max_input_chars: int = 8000,
    ) -> None:
        self.sessions = sessions
        self.memory = memory
        self.queue = queue
        self.model = model
        self.extraction = extraction and model is not None
        self.max_items = max_items
        self.max_input_chars = max_input_chars
        self.wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.current: str | None = None
        self.titled: set[str] = set()
        self.turn_ends: dict[str, int] = {}  # where each session's last queued turn ended
        self.turn_seqs: dict[str, int] = {}  # ... and at which seq
        self.retry_delay = 0.0  # grows while the model is unreachable
        self.counts = {"done": 0, "failed": 0, "accepted": 0, "rejected": 0}
        self.errors: deque[dict[str, Any]] = deque(maxlen=10)

    # -- the queue ----------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self.model is not None

    def start(self) -> None:
        if self.enabled:
            self.task = asyncio.get_running_loop().create_task(self._run())

    def appended(self, session_id: str, events: list[dict[str, Any]], first_seq: int) -> None:
        """Called on the event loop once an append is durable: queue what it completes."""
        if not self.enabled:
            return
        done = [i for i, event in enumerate(events) if completes_turn(event)]
        if not done:
            return
        seq = first_seq + done[-1]
        writer = self.sessions.store.writer(session_id)
        if self.extraction:
            span = None
            if writer is not None:  # bytes holding these turns: the worker reads only those
                span = [self.turn_ends.get(session_id, 0), writer.acked_size]
                self.turn_ends[session_id] = writer.acked_size
            after = self.turn_seqs.get(session_id, 0)
            for i in done:  # every turn the append completes, each a job of its own
                job: dict[str, Any] = {
                    "kind": "extract",
                    "session": session_id,
                    "to_seq": first_seq + i,
                    "after_seq": after,  # where the turn before it ended
                }
                if span is not None:
                    job["bytes"] = span
                self.put(job)
                after = first_seq + i
            self.turn_seqs[session_id] = after
        if (
            session_id not in self.titled
            and writer is not None
            and writer.info.title_source in (None, "first_message")
        ):
            self.titled.add(session_id)
            self.put({"kind": "title", "session": session_id, "to_seq": seq})

    def put(self, job: dict[str, Any]) -> str:
        job_id = self.queue.put(job)
        self.wake.set()
        return job_id

    async def _run(self) -> None:
        while True:
            if self.queue.unsynced:
                await asyncio.to_thread(self.queue.sync)
            job = self.queue.head()
            if job is None:
                self.wake.clear()
                if not self.queue.pending:
                    await self.wake.wait()
                continue
            self.current = job["id"]
            try:
                await self._process(job)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a job that cannot finish must not stop the queue
                log.exception("learning job %s failed", job.get("id"))
                self._fail(job, f"{type(exc).__name__}: {exc}")
            finally:
                self.current = None

    async def _process(self, job: dict[str, Any]) -> None:
        if job.get("kind") == "title":
            await self._title(job)
        elif job.get("kind") == "extract":
            fresh = "result" not in job  # else saved before a crash: applied, perhaps in part
            if fresh:
                try:
                    job["result"] = await self.extract(job)
                except ModelError as exc:
                    if not exc.transient:
                        self._fail(job, str(exc))
                        return
                    # Not reachable now: the job stays first in the queue (never dropped)
                    # and is tried again later, at most every MAX_RETRY_DELAY seconds.
                    self.retry_delay = min(MAX_RETRY_DELAY, max(1.0, self.retry_delay * 2))
                    self._error(job, f"{exc}; trying again in {self.retry_delay:.0f} s")
                    await asyncio.sleep(self.retry_delay)
                    return
                self.retry_delay = 0.0
                self.queue.save(job["id"], job["result"])
                await asyncio.to_thread(self.queue.sync)
            await self.apply(job, again=not fresh)
        else:
            raise ValueError(f"unknown job kind {job.get('kind')!r}")
        self.queue.done(job["id"])
        self.counts["done"] += 1

    def _fail(self, job: dict[str, Any], error: str) -> None:
        self._error(job, error)
        self.queue.fail(str(job["id"]), error)
        self.counts["failed"] += 1

    async def stop(self, grace: float) -> None:
        """Let the job in progress finish within ``grace`` seconds; the rest stays queued."""
        if self.task is None:
            self.queue.close()
            return
        if self.current is not None:
            deadline = time.monotonic() + grace
            while self.current is not None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        if self.model is not None:
            await self.model.close()
        self.queue.close()

    def status(self) -> dict[str, Any]:
        recent = list(self.model.latencies) if self.model else []
        latencies = sorted(recent)
        return {
            "enabled": self.enabled,
            "extraction": self.extraction,
            "model": self.model.model if self.model else None,
            "queued": len(self.queue),
            "in_progress": self.current is not None,
            **self.counts,
            "last_errors": list(self.errors),
            "model_latency_ms": {
                "last": round(recent[-1] * 1000, 1) if recent else None,
                "p50": round(latencies[len(latencies) // 2] * 1000, 1) if latencies else None,
            },
        }

    def _error(self, job: dict[str, Any], message: str) -> None:
        self.errors.append(
            {"job": job.get("id"), "session": job.get("session"), "error": message[:500]}
        )

    # -- extraction -----------------------------------------------------------------------

    async def extract(self, job: dict[str, Any]) -> dict[str, Any]:
        """Ask the model about one turn; its validated answer, with what was shown."""
        assert self.model is not None
        lines, info = await self._lines(job)
        turn, first, last = turn_of(lines, job.get("from_seq"), int(job["to_seq"]))
        text = render_turn(turn, self.max_input_chars)
        scope = self.memory.scope_for(info.repo_root)
        related = await self._related(text, scope)
        shown = "\n".join(f"- {hit['name']}: {hit['description']}" for hit in related)
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
        return {
            "accepted": accepted,
            "rejected": rejected,
            "first_seq": first,
            "last_seq": last,
            "repo_root": info.repo_root,
        }

    async def _lines(self, job: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
        """The events a job needs: the bytes of its turn when it knows them (a long
        session is not read again for every turn), else the whole transcript."""
        session = str(job["session"])
        span = job.get("bytes")
        writer = self.sessions.store.writer(session)
        if span and "from_seq" not in job and writer is not None:
            start, end = span
            lines, _next = await asyncio.to_thread(
                self.sessions.store.read_tail, session, start, end
            )
            seqs = [line["seq"] for line in lines if isinstance(line.get("seq"), int)]
            after = job.get("after_seq")
            # The whole turn must be there: from right after the turn before it (appends
            # that shared a sync can put the start of a turn before these bytes).
            whole = after is None or any(0 < s <= after + 1 for s in seqs)
            if job["to_seq"] in seqs and whole:
                return lines, writer.info
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
        project = self.memory.scope_for(result["repo_root"])
        committer = self.sessions.committer
        journaled: list[Any] = []
        if again:
            journaled = [
                {k: v for k, v in e["detail"].items() if k != "job"}
                for e in await asyncio.to_thread(self.memory.journal.entries)
                if e.get("op") == "memory.rejected" and e["detail"].get("job") == job.get("id")
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
            if again and self.memory.holds(scope, body, meta):
                continue  # written (or merged) before the crash
            for attempt in range(1, 6):
                name = base if attempt == 1 else f"{base}-{attempt}"
                try:
                    await committer.call(
                        self.memory.write_block,
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
        for rejection in result["rejected"]:
            if rejection in journaled:
                continue
            await committer.call(
                self.memory.journal.record,
                "memory.rejected",
                scope=project,
                actor="extractor",
                session=session,
                detail={**rejection, "job": job.get("id")},
            )
            self.counts["rejected"] += 1

    # -- titles ---------------------------------------------------------------------------

    async def _title(self, job: dict[str, Any]) -> None:
        assert self.model is not None
        session = str(job["session"])
        lines, _raw, info = await self.sessions.read(session)
        if info.title_source in ("event", "header"):
            return  # someone named it meanwhile: never overwritten
        turn, _first, _last = turn_of(lines, None, int(job["to_seq"]))
        text = render_turn(turn, 2000)
        try:
            answer = await self.model.json(
                [{"role": "system", "content": TITLE_PROMPT}, {"role": "user", "content": text}],
                schema=TITLE_SCHEMA,
                name="session_title",
                max_tokens=60,
            )
        except ModelError as exc:
            self._error(job, str(exc))
            return
        title = " ".join(str(answer.get("title") or "").split())[:120]
        if not title or scan_text(title):
            self._error(job, "the model gave no usable title")
            return
        _lines, _raw, info = await self.sessions.read(session)
        if info.title_source in ("event", "header"):
            return
        await self.sessions.append(session, [{"type": "title", "title": title, "source": "model"}])

    # -- consolidation --------------------------------------------------------------------

    async def consolidate(
        self, scope: str, *, apply: bool, proposal: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Propose (or with ``apply``, make) merges, archives and new blocks for a scope.
        A ``proposal`` from an earlier dry run is applied as it is, after validation."""
        # a block in which a hand edit left a secret is never shown to the model
        blocks = [b for b in self.memory.list_blocks(scope) if not b.secrets]
        blocks = blocks[:CONSOLIDATE_BLOCKS]
        names = {block.name for block in blocks}
        if proposal is None:
            if self.model is None:
                raise Invalid("no model is configured (ASTER_LLM_BASE_URL, ASTER_LLM_MODEL)")
            listing = []
            for block in blocks:
                text, _block = self.memory.read_block(scope, block.name)
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
                if len(frontmatter.body_of(self.memory.read_block(scope, name)[0]))
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
        if not apply:
            return {"scope": scope, "applied": False, **plan}
        committer = self.sessions.committer
        done: list[dict[str, Any]] = []
        for merge in plan["merges"]:
            text, _block = await committer.call(self.memory.read_block, scope, merge["into"])
            meta = {k: v for k, v in frontmatter.parse(text).meta.items() if k != "name"}
            # The merged blocks go first, so the new text is never taken for one of theirs.
            for source in merge["from"]:
                await committer.call(
                    self.memory.move, scope, source, archive=True, actor="consolidator"
                )
            earlier = [str(n) for n in meta.get("supersedes") or [] if isinstance(n, str)]
            await committer.call(
                self.memory.write_block,
                scope,
                merge["into"],
                body=merge["content"].strip() + "\n",
                meta={**meta, "supersedes": list(dict.fromkeys([*earlier, *merge["from"]]))},
                replace=True,
                actor="consolidator",
            )
            done.append({"merged": merge["from"], "into": merge["into"]})
        for archive in plan["archives"]:
            if self.memory.blocks.get((scope, archive["name"])) is None:
                continue
            block = self.memory.blocks[(scope, archive["name"])]
            if not block.archived:
                await committer.call(
                    self.memory.move, scope, archive["name"], archive=True, actor="consolidator"
                )
                done.append({"archived": archive["name"]})
        for item in plan["new"]:
            block, _merged = await committer.call(
                self.memory.write_block,
                scope,
                slugify(item["title"])[:56],
                body=item["content"].strip() + "\n",
                meta={**item_meta(item), "schema": SCHEMA_NAME, "consolidated": True},
                actor="consolidator",
            )
            done.append({"created": block.name})
        return {"scope": scope, "applied": True, **plan, "done": done}


# -- turns ------------------------------------------------------------------------------


def completes_turn(event: dict[str, Any]) -> bool:
    """An assistant message with text and no tool calls ends a turn."""
    return (
        event.get("type") == "message"
        and event.get("role") == "assistant"
        and not event.get("tool_calls")
        and bool((first_text(event.get("content")) or "").strip())
    )


def turn_of(
    lines: list[dict[str, Any]], from_seq: int | None, to_seq: int
) -> tuple[list[dict[str, Any]], int, int]:
    """The events of the turn that ends at ``to_seq`` (after the previous completed turn),
    or of ``from_seq``..``to_seq``; with the seq range they span."""
    events = [
        line for line in lines if isinstance(line.get("seq"), int) and 0 < line["seq"] <= to_seq
    ]
    if from_seq is not None:
        events = [e for e in events if e["seq"] >= from_seq]
    else:
        start = 0
        for i, event in enumerate(events[:-1]):
            if completes_turn(event):
                start = i + 1
        events = events[start:]
    if not events:
        raise Invalid(f"no events up to seq {to_seq}")
    return events, events[0]["seq"], events[-1]["seq"]


def render_turn(events: list[dict[str, Any]], budget: int) -> str:
    """A turn as text for the model: messages, tool calls and (shortened) results; cut
    in the middle when it is over ``budget`` characters."""
    parts: list[str] = []
    for event in events:
        kind = event.get("type")
        if kind == "summary":
            parts.append(f"[summary of earlier turns] {event.get('content', '')}")
            continue
        if kind != "message":
            continue
        role = event.get("role")
        text = _text_of(event.get("content"))
        if role == "tool":
            parts.append(f"[tool result {event.get('tool_call_id')}] {text[:TOOL_RESULT_CHARS]}")
            continue
        if text:
            parts.append(f"{str(role).capitalize()}: {text}")
        for call in event.get("tool_calls") or []:
            function = call.get("function") or {}
            arguments = str(function.get("arguments", ""))[:TOOL_RESULT_CHARS]
            parts.append(f"[tool call {call.get('id')}] {function.get('name')}({arguments})")
    text = "\n".join(parts)
    if len(text) <= budget:
        return text
    half = (budget - 40) // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half} characters left out …]\n{text[-half:]}"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    if isinstance(content, dict):  # a blob reference that was not put back
        return str(content.get("preview", ""))
    return ""


# -- validation -------------------------------------------------------------------------


def validate_items(
    answer: dict[str, Any], *, max_items: int, shown: set[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The model's items split into accepted (normalised) and rejected (with the reason,
    secrets redacted). Structure and safety only: meaning is the model's business."""
    items = answer.get("items")
    if not isinstance(items, list):
        return [], [{"item": redact(answer), "reason": "the answer has no items list"}]
    accepted: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if index >= max_items:
            rejected.append({"item": redact(item), "reason": f"more than {max_items} items"})
            continue
        problem = item_problem(item, shown)
        if problem:
            rejected.append({"item": redact(item), "reason": problem})
        else:
            accepted.append(normal_item(item))
    return accepted, rejected


def item_problem(item: Any, shown: set[str]) -> str | None:
    """Why an item cannot be kept, or None."""
    if not isinstance(item, dict):
        return "an item is not an object"
    if item.get("type") not in ("semantic", "procedural"):
        return f"type must be semantic or procedural, not {_quote(item.get('type'))}"
    if item.get("scope", "project") not in ("project", "global"):
        return "scope must be project or global"
    for key, limit in (("title", 200), ("content", 4000)):
        value = item.get(key)
        if not isinstance(value, str) or not value.strip():
            return f"{key} is missing"
        if len(value) > limit:
            return f"{key} is longer than {limit} characters"
    if not isinstance(item.get("reason"), str) or not item["reason"].strip():
        return "reason is missing: an item must say why it will matter later"
    for key in ("importance", "confidence"):
        value = item.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            return f"{key} must be a number from 0 to 1, not {_quote(value, 20, plain=True)}"
    tags = item.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        return "tags must be a list of strings"
    for key in ("supersedes", "conflicts_with"):
        names = item.get(key, [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return f"{key} must be a list of names"
        unknown = [n for n in names if n not in shown]
        if unknown:
            shown_names = ", ".join(_quote(n, plain=True) for n in unknown)
            return f"{key} names memories it was not shown: {shown_names[:200]}"
    try:
        slugify(item["title"])
    except Invalid:
        return "the title gives no usable name"
    secrets = [
        finding
        for key in ("title", "content", "reason")
        for finding in scan_text(str(item.get(key, "")), key)
    ] + [finding for tag in tags for finding in scan_text(tag, "tags")]
    if secrets:
        where = ", ".join(f"{f.kind} in {f.field}" for f in secrets)
        return f"secret detected ({where})"
    return None


def item_meta(item: dict[str, Any]) -> dict[str, Any]:
    """A validated item's frontmatter keys (its title is the index's one-line entry)."""
    return {
        "type": item["type"],
        "description": item["title"],
        "tags": item.get("tags") or [],
        "importance": item["importance"],
        "confidence": item["confidence"],
        "reason": item["reason"],
    }


def normal_item(item: dict[str, Any]) -> dict[str, Any]:
    keys = ("type", "title", "content", "importance", "confidence", "reason")
    out = {key: item[key] for key in keys}
    out["scope"] = item.get("scope", "project")
    out["tags"] = [t.strip() for t in item.get("tags", []) if t.strip()][:20]
    for key in ("supersedes", "conflicts_with"):
        if item.get(key):
            out[key] = list(dict.fromkeys(item[key]))
    return out


def _quote(value: Any, limit: int = 60, *, plain: bool = False) -> str:
    """A value of the model's for a rejection reason: quoted (or ``plain``) and cut, or
    only the kind of secret it holds (reasons are journaled and sent on the feed)."""
    text = str(value)
    found = scan_text(text)
    if found:
        return f"[redacted: {', '.join(sorted({f.kind for f in found}))}]"
    return text[:limit] if plain else repr(text[:limit])


def redact(value: Any) -> Any:
    """``value`` with every string that holds a secret replaced by what was found."""
    if isinstance(value, str):
        found = scan_text(value)
        return f"[redacted: {', '.join(sorted({f.kind for f in found}))}]" if found else value
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def validate_proposal(
    proposal: dict[str, Any], names: set[str], *, max_items: int
) -> dict[str, Any]:
    """A consolidation proposal reduced to what is well formed and names real blocks;
    what is dropped is listed under ``rejected`` with the reason."""
    plan: dict[str, Any] = {"merges": [], "archives": [], "new": [], "rejected": []}
    consumed: set[str] = set()  # blocks an accepted merge writes or archives
    for key in ("merges", "archives", "new"):
        if not isinstance(proposal.get(key) or [], list):
            plan["rejected"].append({key: redact(proposal[key]), "reason": f"{key} is not a list"})
            proposal = {**proposal, key: []}
    for merge in proposal.get("merges") or []:
        if not isinstance(merge, dict):
            plan["rejected"].append({"merge": redact(merge), "reason": "a merge is not an object"})
            continue
        sources = merge.get("from")
        into = merge.get("into")
        problem = None
        if not isinstance(into, str) or into not in names:
            problem = f"merge into an unknown block {_quote(into)}"
        elif (
            not isinstance(sources, list)
            or not sources
            or any(not isinstance(s, str) or s not in names for s in sources)
        ):
            problem = "merge from blocks that are not all known"
        elif not isinstance(merge.get("content"), str) or not merge["content"].strip():
            problem = "merge without content"
        elif not str(merge.get("reason") or "").strip():
            problem = "merge without a reason"
        elif scan_text(merge["content"]):
            problem = "secret detected in a merge"
        elif into in consumed or any(s in consumed for s in sources):
            problem = "merge names a block an earlier merge already takes in"
        if problem:
            plan["rejected"].append({"merge": redact(merge), "reason": problem})
            continue
        consumed.update([str(into), *map(str, sources or [])])
        plan["merges"].append(
            {
                "into": merge["into"],
                "from": [s for s in dict.fromkeys(sources or []) if s != merge["into"]],
                "content": merge["content"],
                "reason": merge["reason"],
            }
        )
    for archive in proposal.get("archives") or []:
        name = archive.get("name") if isinstance(archive, dict) else None
        if not isinstance(name, str) or name not in names:
            plan["rejected"].append({"archive": redact(archive), "reason": "unknown block"})
        elif not str(archive.get("reason") or "").strip():
            plan["rejected"].append({"archive": archive, "reason": "archive without a reason"})
        else:
            plan["archives"].append({"name": archive["name"], "reason": archive["reason"]})
    fresh, rejected = validate_items(
        {"items": proposal.get("new") or []}, max_items=max_items, shown=names
    )
    plan["new"] = fresh
    plan["rejected"] += rejected
    return plan
