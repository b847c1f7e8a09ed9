"""The reading of JSON Lines files on other processes, so that an import uses every core.

Parsing, checking, converting and validating a file (``lines.scan``) is most of what an
import costs, and all of it holds the interpreter's lock: on its own thread it shares one
core with the requests, the writer and the index. A file of ``SMALLEST`` to ``lines.KEEP``
bytes is read once by the caller (the whole of it is kept anyway) and scanned on one of
a few processes, started on the first such import and kept for the next (spawned, never
forked from the threaded daemon, and ending with it: ``workers.started``); its checked
events come back whole. A smaller file is
read on a thread (a round trip to another process costs more than it saves), so is a
larger one (read a batch at a time, never whole in memory), and so is every file where
processes cannot be started, or once one dies.
"""

from __future__ import annotations

import io
import logging
import multiprocessing
import os
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import BinaryIO

from .. import workers
from ..secrets.redact import PRESCANNED
from . import lines
from .reader import Format

log = logging.getLogger("aster_persist")

SMALLEST = 128 << 10  # bytes from which a file is read on another process
MOST = 2  # reading processes at most


def scan_bytes(name: str, data: bytes) -> lines.Scan:
    """``lines.scan`` of a whole file in memory, by its format's name (on a reading
    process: what crosses to it is plain bytes and a name), with the redactions the
    index will ask of its events, so that the daemon's process need not work them out."""
    from ..index.text import redacted_ahead
    from . import named

    found = lines.scan(named(name), io.BytesIO(data), None)
    if found.kept is not None:
        found.redactions = redacted_ahead(e for batch in found.kept for e in batch.events)
    return found


class ScanPool:
    """Where an import's file is scanned: on a reading process when that pays, else on
    the caller's thread."""

    def __init__(self, processes: int | None = None) -> None:
        cores = os.cpu_count() or 1
        # one process a core (none on one core: the reading would only move)
        self._processes = (min(MOST, cores) if cores > 1 else 0) if processes is None else processes
        self._pool: ProcessPoolExecutor | None = None
        self._broken = False
        self._lock = threading.Lock()

    def wanted(self, size: int) -> bool:
        """Whether a file of ``size`` bytes is read on another process."""
        return self._processes > 0 and not self._broken and SMALLEST <= size <= lines.KEEP

    def scan(self, form: Format, handle: BinaryIO, limit: int | None) -> Future[lines.Scan]:
        """``lines.scan`` of the file (blocking: call it off the event loop), on a reading
        process when ``wanted``; a future of what it found."""
        done: Future[lines.Scan] = Future()
        size = lines.read_size(handle, limit)
        pool = self._started() if self.wanted(size) else None
        if pool is None:
            _settle(done, lambda: lines.scan(form, handle, limit))
            return done
        handle.seek(0)
        data = handle.read() if limit is None else handle.read(limit)
        try:
            future = pool.submit(scan_bytes, form.name, data)
            future.add_done_callback(_ahead)
            return future
        except (BrokenProcessPool, RuntimeError) as exc:
            self._give_up(exc)
            _settle(done, lambda: lines.scan(form, io.BytesIO(data), None))
            return done

    def _started(self) -> ProcessPoolExecutor | None:
        with self._lock:
            if self._pool is None and not self._broken:
                try:
                    context = multiprocessing.get_context("spawn")
                    self._pool = ProcessPoolExecutor(
                        self._processes,
                        mp_context=context,
                        initializer=workers.started,
                        initargs=(os.getpid(),),
                    )
                except (OSError, ImportError, NotImplementedError) as exc:
                    self._give_up(exc)
            return self._pool

    def _give_up(self, exc: BaseException) -> None:
        """No more reading on processes here (none can start, or one died)."""
        log.warning("reading imports on other processes failed (%s); reading them here", exc)
        self._broken = True

    def failed(self, exc: BaseException) -> bool:
        """Whether ``exc``, from a scan's future, says the processes broke (the file is
        then read again here); its own problems are the file's."""
        if isinstance(exc, BrokenProcessPool):
            self._give_up(exc)
            return True
        return False

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _ahead(future: Future[lines.Scan]) -> None:
    """What a reading process redacted ahead, kept for the index (when it is taken)."""
    if not future.cancelled() and future.exception() is None:
        found = future.result()
        if found.redactions:
            PRESCANNED.add(found.redactions)
            found.redactions = None


def _settle(done: Future[lines.Scan], work: object) -> None:
    try:
        done.set_result(work())  # type: ignore[operator]
    except BaseException as exc:
        done.set_exception(exc)
