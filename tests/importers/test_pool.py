"""Imports read on other processes: what a reading process finds is what the caller's
thread finds, a file it refuses is refused with the same problem, a small file stays on
the thread, and a pool whose process died leaves the reading to the thread."""

from __future__ import annotations

import io
import os
import signal
from pathlib import Path

import orjson
import pytest

from aster_persist import importers
from aster_persist.errors import AsterError, ValidationFailed
from aster_persist.importers import lines
from aster_persist.importers.pool import SMALLEST, ScanPool

from ..conftest import FIXTURES

BIG = FIXTURES / "claude-code" / "claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
FORM = importers.named("claude-code")


def found(scan: lines.Scan) -> tuple[object, ...]:
    batches = [(b.events, b.keys, b.runs) for b in scan.kept or []]
    return (scan.conversation, scan.source_id, scan.digest, scan.events, scan.keys, batches)


@pytest.fixture
def pool() -> ScanPool:
    readers = ScanPool(processes=1)
    yield readers
    readers.close()


def test_a_file_read_on_a_process_gives_what_the_thread_gives(pool: ScanPool) -> None:
    assert BIG.stat().st_size >= SMALLEST and pool.wanted(BIG.stat().st_size)
    with BIG.open("rb") as handle:
        there = pool.scan(FORM, handle, None).result(60)
        here = lines.scan(FORM, handle, None)
    assert found(there) == found(here) and there.events > 300
    assert pool._pool is not None  # it went to a process


def test_a_refused_file_says_the_same_from_a_process(pool: ScanPool) -> None:
    records = [orjson.loads(line) for line in BIG.read_bytes().splitlines()]
    data = b"\n".join(orjson.dumps(r) for r in records[:-1])
    bad = data + b'\n{"type":"user","uuid":"x","message":{"role":"user","role":"user"}}\n'
    assert len(bad) >= SMALLEST
    with pytest.raises(ValidationFailed) as there:
        pool.scan(FORM, io.BytesIO(bad), None).result(60)
    with pytest.raises(ValidationFailed) as here:
        lines.scan(FORM, io.BytesIO(bad), None)
    assert there.value.problem() == here.value.problem()
    assert there.value.errors and there.value.errors[0]["type"] == "duplicate_key"


def test_errors_cross_processes_whole() -> None:
    import pickle

    error = ValidationFailed("x", errors=[{"loc": "l", "msg": "m", "type": "t"}], current='"3"')
    back = pickle.loads(pickle.dumps(error))
    assert isinstance(back, AsterError) and type(back) is ValidationFailed
    assert (back.detail, back.errors, back.current) == ("x", error.errors, '"3"')


def test_a_small_file_is_read_on_the_thread(pool: ScanPool, tmp_path: Path) -> None:
    small = (
        FIXTURES
        / "claude-code"
        / "claude-code-viewer"
        / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
    )
    assert not pool.wanted(small.stat().st_size)
    with small.open("rb") as handle:
        assert pool.scan(FORM, handle, None).result().events > 10
    assert pool._pool is None  # no process started for it


def test_a_dead_reading_process_leaves_the_reading_to_the_thread(pool: ScanPool) -> None:
    with BIG.open("rb") as handle:
        pool.scan(FORM, handle, None).result(60)
        assert pool._pool is not None
        for pid in list(pool._pool._processes or {}):
            os.kill(pid, signal.SIGKILL)
        future = pool.scan(FORM, handle, None)
        try:
            future.result(60)
        except BaseException as exc:
            assert pool.failed(exc)  # the caller reads it again on its thread
        assert not pool.wanted(BIG.stat().st_size) or future.exception() is None
        after = pool.scan(FORM, handle, None).result(60)
        assert after.events > 300


def test_a_grown_file_read_on_a_process_adds_only_what_it_gained(tmp_path: Path) -> None:
    """What a reading process found is matched against the keys the session holds (in
    this process): a grown file adds its new record, the same file again nothing."""
    from ..conftest import make_client

    records = BIG.read_bytes().splitlines(keepends=True)
    with make_client(tmp_path / "home") as client:
        first = client.post("/v1/sessions/import", content=b"".join(records[:-1])).json()
        grown = client.post("/v1/sessions/import", content=b"".join(records)).json()
        again = client.post("/v1/sessions/import", content=b"".join(records)).json()
    [session] = first["sessions"]
    assert grown["sessions"] == [{"id": session["id"], "status": "updated", "events": 1}]
    assert again["sessions"] == [{"id": session["id"], "status": "already_imported"}]
