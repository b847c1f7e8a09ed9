"""Durable appends (``--only appends``).

- Single events, at 8 and 64 connections, against a no-op FastAPI POST endpoint with a
  pydantic body on the same uvicorn settings (target: at least 0.8x of it).
- 100-event batches at 8 connections against a raw in-process loop appending the same
  lines with one fdatasync per 100 (target: at least 0.3x of it), and beside them the
  floor: the same batches through a bare ASGI app doing only what a durable batch append
  must (bench/floor_app.py).

Each round times the baseline, then the daemon (then the floor); the median of the
rounds' ratios is printed.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import httpx
import orjson

from bench.harness import EVENT, add, daemon, floor, fsync_probe, noop, settle, wrk


def bench_appends(work: Path, seconds: int, reps: int) -> None:
    home = work / "append-home"
    d = daemon(home)
    base = noop()
    try:
        sids = [
            httpx.post(d.url + "/v1/sessions", json={"repo_root": f"/srv/bench{i}"}).json()["id"]
            for i in range(8)
        ]
        paths = [f"/v1/sessions/{s}/events" for s in sids]
        body = orjson.dumps(EVENT)
        for conns in (8, 64):
            ratios, ours_all, base_all = [], [], []
            for _ in range(reps):
                b = wrk(base.url, ["/noop"], body, conns, seconds, work)
                settle(d.url)
                o = wrk(d.url, paths, body, conns, seconds, work)
                ratios.append(o / b)
                ours_all.append(o)
                base_all.append(b)
            add(
                f"durable append, 1 event, c={conns} (fsync {fsync_probe(work):.2f} ms)",
                f"{statistics.median(ours_all):,.0f} req/s",
                f"{statistics.median(base_all):,.0f} req/s no-op",
                f"{statistics.median(ratios):.2f}x (target >= 0.8x)",
            )
        batch = orjson.dumps([EVENT] * 100)
        lines = [
            orjson.dumps({**EVENT, "seq": i, "ts": "2026-01-01T00:00:00.000Z"}) + b"\n"
            for i in range(100)
        ]
        ratios, ours_all, base_all, floor_all, floor_ratios = [], [], [], [], []
        bare = floor(work / "floor")
        try:
            for _ in range(reps):
                raw = raw_batches(work, lines, 300)
                settle(d.url)
                o = wrk(d.url, paths, batch, 8, seconds, work) * 100
                settle(d.url)  # the daemon's index catches up before the floor is timed
                f = wrk(bare.url, paths, batch, 8, seconds, work) * 100
                ratios.append(o / raw)
                floor_ratios.append(f / raw)
                ours_all.append(o)
                base_all.append(raw)
                floor_all.append(f)
        finally:
            bare.stop()
        add(
            f"durable append, batches of 100, c=8 (fsync {fsync_probe(work):.2f} ms)",
            f"{statistics.median(ours_all):,.0f} events/s",
            f"{statistics.median(base_all):,.0f} events/s raw loop",
            f"{statistics.median(ratios):.2f}x (target >= 0.3x)",
        )
        add(
            "the same batches through a bare ASGI app: validate, number, write, group fdatasync",
            f"{statistics.median(floor_all):,.0f} events/s",
            f"{statistics.median(base_all):,.0f} events/s raw loop",
            f"{statistics.median(floor_ratios):.2f}x (the floor of a durable batch)",
        )
    finally:
        d.stop()
        base.stop()


def raw_batches(folder: Path, lines: list[bytes], batches: int) -> float:
    """Events/s of a bare loop appending the same lines, one fdatasync per batch."""
    fd = os.open(folder / "raw.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    data = b"".join(lines)
    t = time.perf_counter()
    for _ in range(batches):
        os.write(fd, data)
        os.fdatasync(fd)
    elapsed = time.perf_counter() - t
    os.close(fd)
    return batches * len(lines) / elapsed
