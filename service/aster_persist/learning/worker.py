"""The `Learner`: the worker of learning from sessions, which extracts memories from
completed turns, titles untitled sessions, and consolidates a scope's blocks (SPEC §7).
Each step is an object of its own (`Extraction`, `Titles`, `Consolidation`); this module
holds the queue draining and each job's lifecycle.

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

The queue never stops for one job: while the model is unreachable the job stays first
and is tried again (at most every ``MAX_RETRY_DELAY`` seconds); a job that cannot finish
is failed (kept in ``failed.jsonl``) and the next one runs. On stop, the job in progress
gets its grace period and the rest stays queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from ..secrets.redact import redact_text
from .boundaries import Boundaries
from .consolidation import Consolidation
from .extraction import Extraction
from .model import ModelClient, ModelError
from .queue import JobQueue
from .titles import Titles
from .turns import completes_turn

if TYPE_CHECKING:
    from ..services.memory import Memory
    from ..services.sessions import Appended
    from .transcripts import Transcripts

# the name log lines have always carried, from when this was learner.py
log = logging.getLogger("aster_persist.learning.learner")

MAX_RETRY_DELAY = 60.0  # seconds between tries of a job while the model is unreachable


class Learner:
    """The extraction queue's worker, over its steps: ``Extraction``, ``Titles`` and
    ``Consolidation``."""

    def __init__(
        self,
        sessions: Transcripts,
        memory: Memory,
        queue: JobQueue,
        model: ModelClient | None,
        *,
        extraction: bool = True,
        max_items: int = 5,
        max_input_chars: int = 8000,
        consolidate_idle: float = 0,
        consolidate_min_interval: float = 3600,
        consolidate_max_blocks: int = 40,
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
        self.counts = {"done": 0, "failed": 0}
        self.errors: deque[dict[str, Any]] = deque(maxlen=10)
        self.extractor = Extraction(
            sessions, memory, model, max_items=max_items, max_input_chars=max_input_chars
        )
        self.titles = Titles(sessions, model) if model is not None else None
        self.consolidation = Consolidation(
            memory, model, max_items=max_items, max_blocks=consolidate_max_blocks
        )
        self.consolidate = self.consolidation.consolidate  # asked for through the API too
        self.apply = self.extractor.apply  # an answer saved before a crash, applied again
        self.boundaries = (
            Boundaries(self.put, idle=consolidate_idle, min_interval=consolidate_min_interval)
            if model is not None and consolidate_idle > 0
            else None
        )
        self.watching: asyncio.Task[None] | None = None
        self.review_lock = asyncio.Lock()  # decisions on held items, one at a time

    # -- the queue ----------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self.model is not None

    def start(self) -> None:
        if self.enabled:
            self.task = asyncio.get_running_loop().create_task(self._run())
        if self.boundaries is not None:
            self.watching = asyncio.get_running_loop().create_task(self.boundaries.run())

    def session_started(self, entry: dict[str, Any]) -> None:
        """A journal listener (on the writer thread): a new session in a project ends the
        one before it, which makes a consolidation pass of the project due."""
        if self.boundaries is not None and entry.get("op") == "session.created" and self.task:
            with contextlib.suppress(RuntimeError):  # the loop is closing: nothing is due
                self.task.get_loop().call_soon_threadsafe(self.boundaries.started, entry["scope"])

    def appended(self, notice: Appended) -> None:
        """A listener of appends (on the event loop, once they are durable): queue what
        this daemon's own appends complete (an import's are left alone: old history is
        extracted on demand). ``app.py`` lists it only when learning is ``enabled``."""
        events = notice.events
        if not (self.enabled and notice.learn and events is not None):
            return
        session_id, first_seq = notice.session_id, notice.first_seq
        held = self.sessions.open_summary(session_id)
        if self.boundaries is not None and held is not None:
            self.boundaries.touched(f"project:{held[1].slug}")
        done = [i for i, event in enumerate(events) if completes_turn(event)]
        if not done:
            return
        seq = first_seq + done[-1]
        if self.extraction:
            span = None
            if held is not None:  # bytes holding these turns: the worker reads only those
                span = [self.turn_ends.get(session_id, 0), held[0]]
                self.turn_ends[session_id] = held[0]
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
            and held is not None
            and held[1].title_source in (None, "first_message")
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
            assert self.titles is not None  # jobs are queued only with a model
            failed = await self.titles.title(job)
            if failed is not None:
                self._error(job, failed)
        elif job.get("kind") == "consolidate":
            await self.consolidation.boundary_pass(job)
        elif job.get("kind") == "extract":
            fresh = "result" not in job  # else saved before a crash: applied, perhaps in part
            if fresh:
                try:
                    job["result"] = await self.extractor.extract(job)
                except ModelError as exc:
                    if not exc.transient:  # an answer, but not one to use: said so too
                        await self.extractor.refused_reply(job, str(exc))
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
        error = redact_text(error)[0]  # a model's reply may quote the turn it was sent
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
        if self.watching is not None:
            self.watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.watching
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
            **self.extractor.counts,
            "last_errors": list(self.errors),
            "model_latency_ms": {
                "last": round(recent[-1] * 1000, 1) if recent else None,
                "p50": round(latencies[len(latencies) // 2] * 1000, 1) if latencies else None,
            },
        }

    def _error(self, job: dict[str, Any], message: str) -> None:
        said = redact_text(message)[0][:500]  # shown by /v1/extraction: never a secret
        self.errors.append({"job": job.get("id"), "session": job.get("session"), "error": said})
