"""The index worker: its threads end with it; what it answers without a flush."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from aster_persist.index.catalog import FLUSH_QUIET, CatalogWorker
from aster_persist.index.catalog import worker as worker_module
from aster_persist.storage.summary import SessionInfo


def test_closing_during_a_write_pause_stops_the_flush_thread(tmp_path: Path) -> None:
    (tmp_path / "index").mkdir()
    worker = CatalogWorker(tmp_path / "index", lambda sid: tmp_path / sid)

    def slow_load(scope: str, name: str) -> Any:
        time.sleep(FLUSH_QUIET * 3)  # the last flush outlasts the ticker's pause
        return None

    worker.memory_doc = slow_load
    worker.mark_memory("global", "note")  # wakes the ticker, which waits for writes to pause
    time.sleep(FLUSH_QUIET / 4)  # ... and is inside that pause when the index closes
    worker.close()
    worker._ticker.join(timeout=2)
    assert not worker._ticker.is_alive()


def imported(sid: str, record: str, created_at: str, events: int) -> SessionInfo:
    info = SessionInfo(sid, "-p", created_at=created_at, events=events, source_key="claude:x")
    info.stats.first_record = record
    return info


def test_the_fork_check_weighs_pending_summaries_without_writing_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import asks of every new file which session it forks: the summaries still
    pending are weighed as they are, and nothing waits for them to be indexed."""
    monkeypatch.setattr(worker_module, "FLUSH_QUIET", 60.0)  # no flush but the asked-for
    (tmp_path / "index").mkdir()
    worker = CatalogWorker(tmp_path / "index", lambda slug, sid: tmp_path / sid)
    try:
        worker.mark(imported("a", "r1", "2026-01-01T00:00:00Z", 3))
        assert worker.forked_from("r1", "2026-02-01T00:00:00Z", 5).result() == "a"
        # found while pending: no row was written for it
        assert worker.executor.submit(worker.catalog.begun_with, "r1").result() == []
        assert worker.forked_from("r1", "2025-12-01T00:00:00Z", 5).result() is None  # later
        assert worker.forked_from("r2", "2026-02-01T00:00:00Z", 5).result() is None
        worker.executor.submit(worker.flush).result()
        assert worker.forked_from("r1", "2026-02-01T00:00:00Z", 5).result() == "a"
        # the same start and time: the shorter one is forked, the longer the fork
        worker.mark(imported("b", "r1", "2025-06-01T00:00:00Z", 2))
        assert worker.forked_from("r1", "2026-02-01T00:00:00Z", 5).result() == "b"
        assert worker.forked_from("r1", "2025-06-01T00:00:00Z", 2).result() is None
        assert worker.forked_from("r1", "2025-06-01T00:00:00Z", 4).result() == "b"
        worker.forget("b")  # a pending removal hides the written row too
        worker.executor.submit(worker.flush).result()
        worker.forget("a")
        assert worker.forked_from("r1", "2026-02-01T00:00:00Z", 5).result() is None
    finally:
        worker.close()


def written(folder: Path, sid: str, text: str) -> SessionInfo:
    """A session file of a header and one message, and its summary."""
    lines = [
        {"seq": 0, "type": "session", "id": sid, "created_at": "2026-01-01T00:00:00Z"},
        {
            "seq": 1,
            "type": "message",
            "role": "user",
            "content": text,
            "ts": "2026-01-01T00:00:01Z",
        },
    ]
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    (folder / sid).write_bytes(data)
    return SessionInfo(sid, "-p", created_at="2026-01-01T00:00:00Z", events=1, last_seq=1,
                       offset=len(data), lines=2)  # fmt: skip


def test_a_flush_between_writes_gives_way_to_the_next_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Indexing begun in a pause stops after the session in hand when a write comes
    meanwhile: the rest stays pending (the next pause, or the next read, writes it)."""
    monkeypatch.setattr(worker_module, "FLUSH_QUIET", 60.0)  # no flush but the asked-for
    (tmp_path / "index").mkdir()
    files = tmp_path / "files"
    files.mkdir()
    worker: CatalogWorker

    def locate(slug: str, sid: str) -> Path:
        if sid == "a":  # a write comes while the first session's text is indexed
            worker.mark(written(files, "c", "the third session arrives"))
        return files / sid

    worker = CatalogWorker(tmp_path / "index", locate)
    try:
        for sid in ("a", "b"):
            worker.mark(written(files, sid, f"words of session {sid}"))
        worker.executor.submit(worker.flush, between_writes=True).result()

        def rows() -> list[str]:
            found = worker.catalog.db.execute("SELECT id FROM sessions ORDER BY id")
            return [sid for (sid,) in found]

        assert worker.executor.submit(rows).result() == ["a"]  # b (and c) left for later
        # a read flushes all of it first, writes or not
        assert sorted(i.id for i in worker.run(lambda c: c.all())) == ["a", "b", "c"]
        hits = worker.run(lambda c: c.db.execute("SELECT count(*) FROM docs").fetchone()[0])
        assert hits == 3
    finally:
        worker.close()


def test_a_flush_between_writes_does_not_give_way_once_they_are_overdue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes that never pause cannot keep the index behind for longer than
    ``FLUSH_MAX_DELAY``: what has waited that long is written whatever comes."""
    monkeypatch.setattr(worker_module, "FLUSH_QUIET", 60.0)  # the ticker sleeps through it
    monkeypatch.setattr(worker_module, "FLUSH_MAX_DELAY", 0.3)
    (tmp_path / "index").mkdir()
    files = tmp_path / "files"
    files.mkdir()
    worker: CatalogWorker

    def locate(slug: str, sid: str) -> Path:
        if sid in ("a", "b"):  # a write while each is indexed
            worker.mark(written(files, f"{sid}-next", "another write"))
        return files / sid

    worker = CatalogWorker(tmp_path / "index", locate)
    try:
        for sid in ("a", "b"):
            worker.mark(written(files, sid, f"words of session {sid}"))
        time.sleep(0.4)  # what is pending is overdue
        worker.executor.submit(worker.flush, between_writes=True).result()
        found = worker.executor.submit(
            lambda: [sid for (sid,) in worker.catalog.db.execute("SELECT id FROM sessions")]
        ).result()
        assert sorted(found) == ["a", "b"]
    finally:
        worker.close()
