"""A durable FIFO of jobs: one append-only log, ``<home>/queue/jobs.jsonl``.

Each line records one step of one job::

    {"op": "put", "id": "<job>", "job": {...}}        queued
    {"op": "result", "id": "<job>", "result": {...}}  the model's answer, before it is applied
    {"op": "done", "id": "<job>"}                     finished
    {"op": "failed", "id": "<job>", "error": "..."}   given up (the job is kept in the line)

A job id is the ULID of the run that queued it, a dot, and a count.

Every method but ``sync`` runs on the event loop. A ``put`` is one small write with no
sync (it runs as part of an append, which has already waited for its own sync); the
worker syncs the log before it starts a job, so a job that has begun is on disk. A job with a saved answer is finished from that answer
after a crash, never asked again; applying an answer twice writes nothing twice (see
`extraction.py`). At start the log is read back (a torn last line is ignored) and
rewritten with only the jobs still pending. A failed job is kept in ``failed.jsonl``.
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

import orjson
from ulid import ULID

from ..errors import UnsafePath
from ..storage import fs
from ..storage.home import FILE_MODE, ensure_dir
from ..storage.jsonl import atomic_write, parse, read_bytes

log = logging.getLogger("aster_persist")

LOG = "jobs.jsonl"
FAILED = "failed.jsonl"
COMPACT_BYTES = 1 << 20  # an idle log longer than this is emptied


class JobQueue:
    """The durable job log of learning: each job put, answered and done is a line of
    ``queue/jobs.jsonl``, so a restart resumes what was pending."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        ensure_dir(folder)
        self.path = folder / LOG
        self.pending: OrderedDict[str, dict[str, Any]] = OrderedDict()
        try:
            data = read_bytes(self.path) if fs.exists(self.path) else b""
        except UnsafePath as exc:  # a link or a pipe holds no job of ours
            log.warning("%s; it is removed and the queue starts empty", exc.detail)
            fs.unlink(self.path)  # the name only: a link's target is untouched
            data = b""
        if data:
            for line in parse(data).lines:
                job_id, op = str(line.get("id")), line.get("op")
                if op == "put" and isinstance(line.get("job"), dict):
                    self.pending[job_id] = {**line["job"], "id": job_id}
                elif op == "result" and job_id in self.pending:
                    self.pending[job_id]["result"] = line.get("result")
                elif op in ("done", "failed"):  # (a failed job is in failed.jsonl)
                    self.pending.pop(job_id, None)
        atomic_write(self.path, b"".join(self._put_lines(job) for job in self.pending.values()))
        self.fd = fs.open_file(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        self.size = os.fstat(self.fd).st_size
        self.unsynced = False
        # Job ids: this run's ULID and a count (cheaper than a ULID per job, and unique).
        self.epoch, self.numbers = str(ULID()), itertools.count(1)

    def __len__(self) -> int:
        return len(self.pending)

    def close(self) -> None:
        os.close(self.fd)

    def put(self, job: dict[str, Any]) -> str:
        """Queue a job (one write, no sync); its id."""
        job_id = f"{self.epoch}.{next(self.numbers)}"
        job = {**job, "id": job_id}
        self._write(self._put_lines(job))
        self.pending[job_id] = job
        self.unsynced = True
        return job_id

    def head(self) -> dict[str, Any] | None:
        """The oldest pending job (``sync`` first, to know it is on disk); None when there
        is none."""
        return dict(next(iter(self.pending.values()))) if self.pending else None

    def sync(self) -> None:
        """Make every line written so far durable (any thread)."""
        self.unsynced = False
        os.fdatasync(self.fd)

    def save(self, job_id: str, result: dict[str, Any]) -> None:
        """Record a job's model answer (``sync`` before applying it)."""
        self._write(orjson.dumps({"op": "result", "id": job_id, "result": result}) + b"\n")
        self.unsynced = True
        if job_id in self.pending:
            self.pending[job_id]["result"] = result

    def done(self, job_id: str) -> None:
        self._write(orjson.dumps({"op": "done", "id": job_id}) + b"\n")
        self.pending.pop(job_id, None)
        self._compact()

    def fail(self, job_id: str, error: str) -> None:
        job = self.pending.pop(job_id, None)
        fd = fs.open_file(self.folder / FAILED, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        try:
            line = {"op": "failed", "id": job_id, "error": error, "job": job}
            fs.write_all(fd, orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE))
        finally:
            os.close(fd)
        self._write(orjson.dumps({"op": "failed", "id": job_id, "error": error[:500]}) + b"\n")
        self._compact()

    def failed(self) -> list[dict[str, Any]]:
        path = self.folder / FAILED
        data = fs.read_or_none(path)
        return parse(data).lines if data is not None else []

    def _write(self, data: bytes) -> None:
        if not fs.same_file(self.fd, self.path):  # moved away, or a link in its place
            fs.check(self.path)
            raise OSError(errno.ESTALE, f"{LOG} was moved or replaced while it was open")
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]
        self.size += len(data)

    def _compact(self) -> None:
        """Nothing pending and a long log: start it again, empty."""
        if not self.pending and self.size > COMPACT_BYTES:
            os.ftruncate(self.fd, 0)
            os.fsync(self.fd)
            self.size = 0

    @staticmethod
    def _put_lines(job: dict[str, Any]) -> bytes:
        queued = {k: v for k, v in job.items() if k != "result"}
        lines = [orjson.dumps({"op": "put", "id": job["id"], "job": queued}) + b"\n"]
        if "result" in job:
            lines.append(orjson.dumps({"op": "result", "id": job["id"], "result": job["result"]}))
            lines.append(b"\n")
        return b"".join(lines)
