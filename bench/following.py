"""Importing a tree and following one (``--only tree``).

- A synthetic tree of about ``--tree-mb`` (1 GB by default) of real transcripts: the
  Claude Code and Codex fixtures copied over and over, each copy a session of its own
  (its session id and its records' ids changed), in folders as those tools keep them. It
  is imported by ``aster-persist sessions import`` (each file sent as a stream, a few at
  a time), with the catalog and the index on, against a bare read and orjson parse of
  the same files in this process (target: at least 0.3x of it); and how long after the
  command ends the index has caught up.
- Following: a daemon following a folder (``ASTER_FOLLOW``); a line appended to a
  transcript in it, timed until its ``session.appended`` notice is on the change feed
  (target: p50 under 1 s).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import orjson

from bench.harness import ROOT, add, daemon, fsync_probe

FIXTURES = ROOT / "tests" / "fixtures"
SOURCES = [
    *sorted((FIXTURES / "claude-code").rglob("*.jsonl")),
    *sorted((FIXTURES / "codex").rglob("*.jsonl")),
]


def build_tree(folder: Path, megabytes: int) -> list[Path]:
    """Copies of the fixtures, each with a session id of its own, to about ``megabytes``."""
    made: list[Path] = []
    size = 0
    copy = 0
    originals = [(path, path.read_bytes(), _own_id(path)) for path in SOURCES]
    while size < megabytes << 20:
        for path, data, own in originals:
            new = f"{own[:-6]}{copy:06d}"
            target = folder / path.parent.name / f"{copy:06d}-{path.name}"
            target.parent.mkdir(parents=True, exist_ok=True)
            # its records known by ids of their own too: copies of one session under new
            # ids would be stored once (a resumed session), not imported whole
            mark = f"c{copy:06d}-".encode()
            data = data.replace(b'"uuid":"', b'"uuid":"' + mark)
            data = data.replace(b'"parentUuid":"', b'"parentUuid":"' + mark)
            target.write_bytes(data.replace(own.encode(), new.encode()))
            made.append(target)
            size += len(data)
        copy += 1
    return made


def _own_id(path: Path) -> str:
    """The session id a transcript names itself by (Claude Code's or Codex's)."""
    for line in path.read_bytes().splitlines():
        record = orjson.loads(line)
        if record.get("sessionId"):
            return str(record["sessionId"])
        if record.get("type") == "session_meta":
            return str(record["payload"]["id"])
    raise ValueError(f"{path} names no session")


def bench_tree(work: Path, megabytes: int) -> None:
    tree = work / "tree"
    files = build_tree(tree, megabytes)
    total = sum(p.stat().st_size for p in files)

    def bare() -> tuple[float, int]:
        t = time.perf_counter()
        lines = 0
        for path in files:
            for line in path.read_bytes().splitlines():
                orjson.loads(line)
                lines += 1
        return time.perf_counter() - t, lines

    d = daemon(work / "tree-home")
    try:
        t = time.perf_counter()
        command = [sys.executable, "-m", "aster_persist", "sessions", "import", str(tree)]
        done = subprocess.run(
            [*command, "--json", "--url", d.url],
            capture_output=True,
            text=True,
            timeout=7200,
        )
        took = time.perf_counter() - t
        assert done.returncode == 0, done.stderr[-2000:]
        rows = orjson.loads(done.stdout)["files"]
        assert sum(row.get("imported", 0) for row in rows) == len(files)
        with httpx.Client(base_url=d.url, timeout=600) as http:
            t = time.perf_counter()
            http.get("/v1/sessions", params={"limit": 1})  # a read: the index caught up first
            behind = time.perf_counter() - t
    finally:
        d.stop()
    seconds, _lines = bare()
    reading, events = _converted(files)
    base = events / seconds
    ours = events / took
    add(
        f"import a tree of {total / 1e9:.2f} GB ({len(files)} files, {events:,} events) with "
        f"`aster-persist sessions import` (fsync {fsync_probe(work):.2f} ms)",
        f"{ours:,.0f} events/s",
        f"{base:,.0f} events/s bare read + orjson parse",
        f"{ours / base:.2f}x (target >= 0.3x); the index caught up {behind:.1f} s later",
    )
    converted = events / reading
    add(
        "the same files read as an import reads them: parsed, checked, converted and "
        "validated (in process, one core, nothing written)",
        f"{converted:,.0f} events/s",
        f"{base:,.0f} events/s bare read + orjson parse",
        f"{converted / base:.2f}x (the floor of this import's reading)",
    )


def _converted(files: list[Path]) -> tuple[float, int]:
    """Seconds to read every file as ``import_stream`` does, writing nothing, and the
    events read."""
    from aster_persist import importers
    from aster_persist.importers import lines

    t = time.perf_counter()
    events = 0
    for path in files:
        with path.open("rb") as handle:
            form = importers.named(importers.detect_file(handle))
            scanned = lines.scan(form, handle, None)
            for batch in lines.batches(form, handle, None, scanned, None):
                events += len(batch.events)
    return time.perf_counter() - t, events


def bench_follow(work: Path, rounds: int = 20) -> None:
    folder = work / "followed" / "projects" / "demo"
    folder.mkdir(parents=True)
    source = SOURCES[0]
    lines = source.read_bytes().splitlines(keepends=True)
    target = folder / source.name
    target.write_bytes(b"".join(lines[:5]))
    d = daemon(work / "follow-home", ASTER_FOLLOW=str(folder.parent))
    heard: list[float] = []
    got = threading.Event()
    stop = threading.Event()

    def listen() -> None:
        with httpx.stream("GET", f"{d.url}/v1/events", timeout=None) as stream:
            for line in stream.iter_lines():
                if stop.is_set():
                    return
                if line == "event: session.appended":
                    heard.append(time.perf_counter())
                    got.set()

    try:
        deadline = time.monotonic() + 30
        while not httpx.get(f"{d.url}/v1/sessions").json()["items"]:
            assert time.monotonic() < deadline, "the followed file was not imported"
            time.sleep(0.05)
        threading.Thread(target=listen, daemon=True).start()
        time.sleep(0.5)
        waits = []
        for n in range(rounds):
            got.clear()
            line = lines[5 + n] if 5 + n < len(lines) else lines[-1]
            record = orjson.loads(line)
            record["uuid"] = f"bench-{n}-{record.get('uuid', '')}"
            t = time.perf_counter()
            with target.open("ab") as handle:
                handle.write(orjson.dumps(record) + b"\n")
            assert got.wait(10), "no notice within 10 s"
            waits.append(heard[-1] - t)
            time.sleep(0.3)
        stop.set()
    finally:
        d.stop()
    p50 = statistics.median(waits) * 1000
    p90 = sorted(waits)[int(len(waits) * 0.9) - 1] * 1000
    add(
        "follow: a line appended to a followed transcript until its notice is on the feed",
        f"p50 {p50:.0f} ms (p90 {p90:.0f} ms)",
        f"{rounds} lines, one at a time",
        "target p50 < 1 s",
    )
