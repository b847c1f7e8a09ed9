"""A durable FIFO of jobs: one small JSON file each under ``<home>/queue/``.

A job file is named ``<position>-<id>.json``; positions only grow, so a listing sorted
by name is the queue's order across restarts. ``put`` writes the file without waiting
for a sync (it runs as part of an append, which must not wait twice); the worker
syncs the file and the folder before it starts the job, so a job a worker has begun is
on disk. A job that has its model answer is rewritten with it before the answer is
applied, so a job interrupted there is finished from the same answer. A finished job's
file is removed; a job that failed for good moves to ``failed/``.
"""

from __future__ import annotations

import os
import re
from collections import deque
from pathlib import Path
from typing import Any

import orjson
from ulid import ULID

from ..storage.home import ensure_dir, fsync_dir
from ..storage.jsonl import atomic_write, remove_leftover_temps, write_new

_NAME = re.compile(r"(\d{12})-([0-9A-Z]{26})\.json")


class JobQueue:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.failed = folder / "failed"
        ensure_dir(self.failed)
        remove_leftover_temps(folder)
        names = sorted(n for n in os.listdir(folder) if _NAME.fullmatch(n))
        self.pending: deque[str] = deque(names)
        self.next = int(names[-1][:12]) + 1 if names else 1

    def __len__(self) -> int:
        return len(self.pending)

    def put(self, job: dict[str, Any]) -> str:
        """Queue a job; its id."""
        job_id = str(ULID())
        name = f"{self.next:012d}-{job_id}.json"
        self.next += 1
        write_new(self.folder / name, orjson.dumps({**job, "id": job_id}), sync=False)
        self.pending.append(name)
        return job_id

    def head(self) -> tuple[str, dict[str, Any]] | None:
        """The oldest job (synced to disk first), or None. A file that cannot be read
        moves to ``failed/``."""
        while self.pending:
            name = self.pending[0]
            path = self.folder / name
            try:
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
                job = orjson.loads(path.read_bytes())
                if not isinstance(job, dict):
                    raise ValueError("not an object")
            except FileNotFoundError:
                self.pending.popleft()
                continue
            except (OSError, ValueError):
                self.fail(name)
                continue
            fsync_dir(self.folder)
            return name, job
        return None

    def save(self, name: str, job: dict[str, Any]) -> None:
        """Rewrite a job (with its model answer), durably."""
        atomic_write(self.folder / name, orjson.dumps(job))

    def done(self, name: str) -> None:
        (self.folder / name).unlink(missing_ok=True)
        fsync_dir(self.folder)
        self._drop(name)

    def fail(self, name: str) -> None:
        try:
            os.replace(self.folder / name, self.failed / name)
            fsync_dir(self.failed)
        except FileNotFoundError:
            pass
        self._drop(name)

    def _drop(self, name: str) -> None:
        if self.pending and self.pending[0] == name:
            self.pending.popleft()
        elif name in self.pending:
            self.pending.remove(name)
