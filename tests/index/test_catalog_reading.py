"""A catch-up reads many files on other processes and writes exactly what reading them
in the catalog's own thread writes."""

from __future__ import annotations

import os
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import orjson
import pytest

from aster_persist.index.catalog import files as files_module
from aster_persist.index.catalog.database import Catalog
from aster_persist.index.catalog.files import FileEntry

KEY = "AKIA" + "IOSFODNN7EXAMPLE"  # the shape of an AWS access key id


def transcripts(folder: Path) -> list[FileEntry]:
    """Forty sessions, each with a secret; a torn line, a link and a folder among them."""
    folder.mkdir()
    entries = []
    for n in range(40):
        sid = f"01J{n:023d}"
        lines = [orjson.dumps({"seq": 0, "type": "session", "id": sid, "v": 1,
                               "created_at": f"2026-01-01T00:00:{n:02d}Z"})]  # fmt: skip
        for seq in range(1, 30):
            text = f"turn {seq} of session {n}: the walrus {'and ' + KEY if seq == 7 else ''}"
            lines.append(orjson.dumps({"seq": seq, "type": "message", "role": "user",
                                       "content": text, "ts": "2026-01-01T00:01:00Z"}))  # fmt: skip
        data = b"\n".join(lines) + b"\n" + (b'{"seq": 30, "type": "mess' if n == 3 else b"")
        path = folder / f"{sid}.jsonl"
        if n == 5:
            path.mkdir()  # not a regular file
        elif n == 6:
            (folder / "elsewhere.jsonl").write_bytes(data)
            os.symlink(folder / "elsewhere.jsonl", path)  # a link: never followed
        else:
            path.write_bytes(data)
        stat = os.lstat(path)
        entries.append(FileEntry(sid, "-p", path, stat.st_size, stat.st_mtime_ns))
    return entries


def indexed(catalog: Catalog) -> tuple[list[Any], list[Any]]:
    rows = sorted(
        (info.id, info.state, info.events, info.offset, info.bad_lines, catalog.secrets_of(info.id))
        for info in catalog.all()
    )
    found = catalog.db.execute(
        "SELECT d.rowid, d.session, d.seq, d.kind, d.secrets FROM docs d ORDER BY d.session, d.seq"
    ).fetchall()
    texts = catalog.texts([rowid for rowid, *_ in found])  # read back from the transcripts
    docs = [(*rest, texts.get(rowid)) for rowid, *rest in found]
    return rows, docs


def catalog_in(folder: Path, sessions: Path) -> Catalog:
    folder.mkdir()
    return Catalog(folder, lambda slug, sid: sessions / f"{sid}.jsonl")


def holds(folder: Path, text: str) -> bool:
    """Whether any file of the catalog holds ``text``."""
    return any(text.encode() in p.read_bytes() for p in folder.iterdir())


def test_reading_on_other_processes_writes_what_reading_here_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = transcripts(tmp_path / "sessions")
    here = catalog_in(tmp_path / "here", tmp_path / "sessions")
    stats_here = here.catch_up(entries)
    pools: list[int] = []

    class Counted(files_module.ProcessPoolExecutor):  # type: ignore[misc]
        def __init__(self, workers: int, **options: Any) -> None:
            pools.append(workers)
            super().__init__(workers, **options)

    monkeypatch.setattr(files_module, "ProcessPoolExecutor", Counted)
    monkeypatch.setattr(files_module, "POOL_BYTES", 0)
    pooled = catalog_in(tmp_path / "pool", tmp_path / "sessions")
    stats_pooled = pooled.catch_up(entries)
    assert pools, "the files were read on other processes"
    assert stats_pooled == stats_here
    rows, docs = indexed(pooled)
    assert (rows, docs) == indexed(here)
    found = {sid: (state, events) for sid, state, events, *_ in rows}
    assert entries[5].id not in found  # not a regular file: never opened
    assert found[entries[6].id] == ("damaged", 0)  # a link: never followed, never skipped
    assert found[entries[3].id] == ("ok", 29)  # the torn last line waits for its end
    assert all(secrets == 1 for sid, *_, secrets in rows if sid != entries[6].id)
    shown = [text for *_, text in docs if text is not None]
    assert len(shown) == 38 * 29 and sum("[redacted: " in text for text in shown) == 38
    assert not any(KEY in text for text in shown)  # never shown
    # the index holds no copy of the text (beyond the first turn a listing shows)
    assert not holds(tmp_path / "pool", KEY) and not holds(tmp_path / "pool", "turn 20 of session")
    here.close()
    pooled.close()


@pytest.mark.parametrize("failure", ["no processes here", "a reader killed midway"])
def test_when_reading_processes_fail_the_rest_is_read_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    """No semaphores for a pool (some containers), or a reader killed (out of memory):
    the catch-up reads what is left in its own process and writes the same index."""
    entries = transcripts(tmp_path / "sessions")
    here = catalog_in(tmp_path / "here", tmp_path / "sessions")
    here.catch_up(entries)

    class Failing(files_module.ProcessPoolExecutor):  # type: ignore[misc]
        submitted = 0

        def __init__(self, workers: int, **options: Any) -> None:
            if failure == "no processes here":
                raise OSError(38, "Function not implemented: sem_open")
            super().__init__(workers, **options)

        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            Failing.submitted += 1
            if Failing.submitted == 2:  # the second chunk's reader dies
                broken: Future[Any] = Future()
                broken.set_exception(BrokenProcessPool("a process terminated abruptly"))
                return broken
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(files_module, "ProcessPoolExecutor", Failing)
    monkeypatch.setattr(files_module, "POOL_BYTES", 0)
    fallback = catalog_in(tmp_path / "fallback", tmp_path / "sessions")
    fallback.catch_up(entries)
    assert indexed(fallback) == indexed(here)
    if failure == "a reader killed midway":
        assert Failing.submitted >= 2  # the pool was used, then given up
    here.close()
    fallback.close()
