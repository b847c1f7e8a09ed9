"""Importing (``--only import``): every fixture file (real transcripts) imported into a
fresh home over HTTP, against a bare orjson parse of the same files (target: at least
0.3x of it).

Two floors beside it, in process: the bare parse with each conversation written to a
file of its own and synced (what any durable import must do), and the same with the
importers' conversion and checks first (what this import must do, before index and
journal). Three rounds, each on a fresh home; the medians are printed.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import httpx
import orjson

from bench.harness import ROOT, add, daemon, fsync_probe


def bench_import(work: Path) -> None:
    """Import the fixtures folder into a fresh home, against a bare orjson parse of it."""
    files = sorted(
        p for p in (ROOT / "tests" / "fixtures").rglob("*") if p.suffix in (".json", ".jsonl")
    )
    blobs = [p.read_bytes() for p in files]

    def bare() -> float:
        t = time.perf_counter()
        for data in blobs:
            if data.lstrip()[:1] == b"[":
                orjson.loads(data)
            else:
                for line in data.splitlines():
                    orjson.loads(line)
        return time.perf_counter() - t

    from concurrent.futures import ThreadPoolExecutor

    from aster_persist import importers

    syncers = ThreadPoolExecutor(4)

    def parse_and_write(folder: Path, convert: bool = False) -> float:
        """The bare parse, then each conversation's records written to a new file of
        its own and synced, and the folder synced: no conversion, no validation (with
        ``convert``, the importers' conversion and checks first, in this process)."""
        folder.mkdir()
        t = time.perf_counter()
        n = 0
        for data in blobs:
            if convert:
                found = [c.events for c in importers.read(data)[1]]
            elif data.lstrip()[:1] == b"[":
                found = [r.get("messages") or r.get("traj") or [] for r in orjson.loads(data)]
            else:
                found = [[orjson.loads(line) for line in data.splitlines() if line.strip()]]
            fds = []
            for records in found:
                fd = os.open(folder / f"{n}.jsonl", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                os.write(
                    fd, b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in records)
                )
                fds.append(fd)
                n += 1
            for start in range(0, len(fds), 64):  # synced as the daemon syncs an import's
                list(syncers.map(os.fsync, fds[start : start + 64]))
            for fd in fds:
                os.close(fd)
        fd = os.open(folder, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        return time.perf_counter() - t

    ours, base, floors, converted = [], [], [], []
    events = 0
    for rep in range(3):
        d = daemon(work / f"import-home-{rep}")
        try:
            with httpx.Client(base_url=d.url, timeout=300) as http:
                t = time.perf_counter()
                events = 0
                for path, data in zip(files, blobs, strict=True):
                    params = {"repo_root": "/srv/imported"} if path.suffix == ".json" else {}
                    r = http.post("/v1/sessions/import", content=data, params=params)
                    assert r.status_code == 201, r.text
                    events += sum(s["events"] for s in r.json()["sessions"])
                ours.append(events / (time.perf_counter() - t))
        finally:
            d.stop()
        base.append(events / bare())
        floors.append(events / parse_and_write(work / f"import-floor-{rep}"))
        converted.append(events / parse_and_write(work / f"import-converted-{rep}", True))
    o, b, f = statistics.median(ours), statistics.median(base), statistics.median(floors)
    c = statistics.median(converted)
    add(
        f"import the fixtures ({len(files)} files, {events:,} events, fsync {fsync_probe(work):.2f} ms)",
        f"{o:,.0f} events/s",
        f"{b:,.0f} events/s bare orjson parse",
        f"{o / b:.2f}x (target >= 0.3x)",
    )
    add(
        "the same files parsed, each conversation written to a new file and synced",
        f"{f:,.0f} events/s",
        f"{b:,.0f} events/s bare orjson parse",
        f"{f / b:.2f}x (the floor of an import: no conversion, no checks)",
    )
    add(
        "the same, converted and checked by the importers first (in process, no HTTP)",
        f"{c:,.0f} events/s",
        f"{b:,.0f} events/s bare orjson parse",
        f"{c / b:.2f}x (what an import must do, before index and journal)",
    )
