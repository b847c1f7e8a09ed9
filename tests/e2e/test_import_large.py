"""Imports of any size on a real daemon: a 20 MB transcript, past the body limit of
every other route, goes through as a stream with the memory of a batch of records; a
bad line deep in it refuses the whole file with nothing written; the CLI streams it and
draws its progress by bytes on stderr."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from aster_persist import importers
from aster_persist.importers import lines

from ..conftest import CLAUDE_SMALL, Daemon, snapshot, wait_until

FIXTURE = CLAUDE_SMALL
SIZE = 20 << 20


def big_transcript(path: Path, size: int = SIZE) -> int:
    """A Claude Code transcript of about ``size`` bytes: the fixture's records over and
    over, each copy with records of its own (fresh uuids, one session); its events."""
    records = [orjson.loads(line) for line in FIXTURE.read_bytes().splitlines()]
    written = copies = 0
    with path.open("wb") as out:
        while written < size:
            for record in records:
                copy = dict(record)
                for key in ("uuid", "parentUuid"):
                    if copy.get(key):
                        copy[key] = f"{copy[key]}-{copies}"
                if isinstance(copy.get("message"), dict) and copy["message"].get("id"):
                    copy["message"] = {**copy["message"], "id": f"{copy['message']['id']}-{copies}"}
                line = orjson.dumps(copy) + b"\n"
                out.write(line)
                written += len(line)
            copies += 1
    return copies


def peak_rss_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM")))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle(pid: int) -> bool:
    """Whether the daemon did (almost) no work for half a second: what the first import
    left for the index to do is done, so the second is measured alone."""
    before = cpu_seconds(pid)
    time.sleep(0.5)
    return cpu_seconds(pid) - before < 0.05


@pytest.mark.alone  # other tests' load moves when the index reads, and so the peak
def test_a_20_mb_transcript_imports_as_a_stream_with_bounded_memory(tmp_path: Path) -> None:
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    big_transcript(first)
    big_transcript(second)
    second.write_bytes(second.read_bytes().replace(b'"sessionId":"', b'"sessionId":"2-'))
    daemon = Daemon(tmp_path / "home").start()
    try:
        assert daemon.proc is not None

        def chunks(path: Path) -> Iterator[bytes]:  # no whole file in one request body
            with path.open("rb") as handle:
                while chunk := handle.read(1 << 20):
                    yield chunk

        def imported(path: Path) -> dict[str, Any]:
            r = httpx.post(f"{daemon.url}/v1/sessions/import", content=chunks(path), timeout=300)
            assert r.status_code == 201, r.text
            [made] = r.json()["sessions"]
            return dict(made)

        imported(first)  # what an import and the index load, loaded
        wait_until(lambda: httpx.get(f"{daemon.url}/v1/search", params={"q": "zzz"}).is_success)
        wait_until(lambda: idle(daemon.proc.pid), timeout=120)  # type: ignore[union-attr]
        before = peak_rss_kb(daemon.proc.pid)
        made = imported(second)
        grew = peak_rss_kb(daemon.proc.pid) - before
        assert grew < SIZE // 2 // 1024, f"peak memory grew by {grew} kB"  # a stream's
        info = httpx.get(f"{daemon.url}/v1/sessions/{made['id']}").json()
        assert made["events"] == info["events"] > 10_000
        # the second begins with the first's records (a resumed copy): it refers to them,
        # read a line at a time as they are compared, never the first whole in memory
        assert info["header"]["base"]["through_seq"] == info["events"] - 1
        exported = httpx.get(f"{daemon.url}/v1/sessions/{made['id']}/export", timeout=60)
        stored = [orjson.loads(line) for line in exported.content.splitlines()[1:]]
        assert len({e["idempotency_key"] for e in stored}) == len(stored)  # one per record
        again = httpx.post(f"{daemon.url}/v1/sessions/import", content=chunks(second), timeout=300)
        assert again.json()["already_imported"] == 1
    finally:
        daemon.stop()


def test_a_bad_line_deep_in_a_large_file_writes_nothing(tmp_path: Path) -> None:
    source = tmp_path / "big.jsonl"
    big_transcript(source, 10 << 20)
    lines = source.read_bytes().splitlines(keepends=True)
    bad = len(lines) - 3
    lines[bad - 1] = b'{"type": "user", "message": \n'
    source.write_bytes(b"".join(lines))
    home = tmp_path / "home"
    daemon = Daemon(home).start()
    try:
        before = snapshot(home)
        r = httpx.post(f"{daemon.url}/v1/sessions/import", content=source.read_bytes(), timeout=120)
        assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"
        assert f"line {bad}" in r.json()["detail"]
        assert snapshot(home) == before
    finally:
        daemon.stop()


def test_an_import_past_its_own_limit_is_413_and_writes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    daemon = Daemon(home, env={"ASTER_MAX_IMPORT_BYTES": "4096"}).start()
    try:
        before = snapshot(home)
        data = FIXTURE.read_bytes()

        def unsized():  # no Content-Length: the limit is kept while it arrives
            yield data

        for body in (data, unsized()):
            r = httpx.post(f"{daemon.url}/v1/sessions/import", content=body, timeout=60)
            assert r.status_code == 413, r.text
            assert "ASTER_MAX_IMPORT_BYTES" in r.json()["detail"]
        assert snapshot(home) == before
        assert httpx.get(f"{daemon.url}/v1/sessions").json()["items"] == []
    finally:
        daemon.stop()


def test_the_cli_streams_a_file_and_shows_progress_by_bytes_on_stderr(tmp_path: Path) -> None:
    source = tmp_path / "big.jsonl"
    big_transcript(source, 12 << 20)
    daemon = Daemon(tmp_path / "home").start()
    try:
        master, slave = pty.openpty()  # stderr a terminal, as a person sees it
        proc = subprocess.Popen(
            [sys.executable, "-m", "aster_persist", "sessions", "import", str(source)],
            env={**os.environ, "COLUMNS": "120", "ASTER_URL": daemon.url},
            stdout=subprocess.PIPE,
            stderr=slave,
        )
        os.close(slave)
        drawn = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
        out, _ = proc.communicate(timeout=300)
        os.close(master)
        assert proc.returncode == 0, drawn.decode(errors="replace")
        assert b"importing" not in out and b"sessions imported" not in out  # stdout: rows only
        assert "1 sessions imported" in drawn.decode(errors="replace")  # notices: stderr
        text = drawn.decode(errors="replace")
        assert "importing 0/1 files" in text and "MB" in text  # files and bytes, on stderr
        assert "B/s" in text and re.search(r"\d:\d\d:\d\d", text)  # the rate, time left
        listed = json.loads(
            subprocess.run(
                [sys.executable, "-m", "aster_persist", "sessions", "list", "--json"],
                env={**os.environ, "ASTER_URL": daemon.url},
                capture_output=True,
                check=True,
            ).stdout
        )
        assert len(listed["items"]) == 1
    finally:
        daemon.stop()


@pytest.mark.slow
def test_reading_a_file_holds_a_batch_of_its_records_not_the_file(tmp_path: Path) -> None:
    """What an import reads, measured as Python allocates it: both passes over a file as
    a stream hold about as much for 20 MB as for 10 MB, and a fraction of reading the
    20 MB whole, as an import read it before."""
    form = importers.named("claude-code")
    files = {}
    for size in (10 << 20, SIZE):
        files[size] = tmp_path / f"{size}.jsonl"
        big_transcript(files[size], size)

    def streamed(source: Path) -> int:
        with source.open("rb") as handle:
            scanned = lines.scan(form, handle, None)
            batches = lines.batches(form, handle, None, scanned, None)
            return sum(len(batch.events) for batch in batches)

    def whole(source: Path) -> int:
        _found, [conversation] = importers.read(source.read_bytes())
        return len(conversation.events)

    def peak(read: Callable[[Path], int], source: Path) -> tuple[int, int]:
        tracemalloc.start()
        try:
            count = read(source)
            return tracemalloc.get_traced_memory()[1], count
        finally:
            tracemalloc.stop()

    small, _ = peak(streamed, files[10 << 20])
    large, events = peak(streamed, files[SIZE])
    read_whole, same = peak(whole, files[SIZE])
    assert events == same > 10_000
    assert large < small * 1.5, (small, large)  # it does not grow with the file
    assert large < read_whole / 8, (large, read_whole)
