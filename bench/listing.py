"""The big store (``--only listing``): a store of ``--sessions`` transcripts holding
``--events`` events in all, words drawn from real transcripts, and what it costs.

- Listing 50 sessions against the same listing on a small store of as many sessions
  with one event each (target: under 5 ms, within 1.2x of the small store).
- Start-up with the catalog present, timed to /readyz, beside a cold start that
  rebuilds it (target: under 2 s); resident memory after start and listing (target:
  under 200 MB).
- Search on the same store (bench/search.py).
- Index catch-up at start after 10,000 events were appended while the daemon was
  stopped, beside the start's whole time to /readyz (target: under 1 s).
- A full index rebuild in process against a bare read-and-parse loop over the same
  files (target: at least 0.5x of it); beside it, an in-process SQLite writing the
  index's own tables from rows prepared in advance, the most a rebuild can reach; and
  the index's size on disk against the transcripts'.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import httpx
import orjson
from ulid import ULID

from aster_persist.index.sqlite import sqlite3
from bench.harness import add, daemon, texts
from bench.search import bench_search


def bench_listing(work: Path, sessions: int, events: int) -> None:
    small = work / "small-home"
    big = work / "big-home"
    t = time.perf_counter()
    make_store(small, sessions, sessions)
    make_store(big, sessions, events)
    print(f"  (wrote test stores in {time.perf_counter() - t:.1f} s)", flush=True)
    big_bytes = sum(p.stat().st_size for p in (big / "sessions").rglob("*.jsonl"))
    cold = daemon(big, wait=3600)  # it rebuilds the catalog from the files first
    cold_s = cold.ready_after
    cold.stop()
    d_small = daemon(small)
    warm = daemon(big)
    try:
        p_small, p_big = [], []
        for _ in range(3):
            p_small.append(list_latency(d_small.url))
            p_big.append(list_latency(warm.url))
        ps, pb = statistics.median(p_small), statistics.median(p_big)
        add(
            f"list 50 of {sessions:,} sessions, {events:,} events",
            f"p50 {pb:.2f} ms",
            f"p50 {ps:.2f} ms with {sessions:,} events",
            f"{pb / ps:.2f}x (target < 5 ms, within 1.2x)",
        )
        add(
            f"start with {sessions:,} sessions, catalog present",
            f"{warm.ready_after:.2f} s to /readyz",
            f"cold rebuild {cold_s:.2f} s ({big_bytes / 1e6:.0f} MB)",
            "target < 3 s at 10M events",
        )
        add(
            "resident memory after start and listing",
            f"{warm.rss_mb():.0f} MB",
            "-",
            "target < 300 MB at 10M events",
        )
        bench_search(warm, big)
    finally:
        warm.stop()
        d_small.stop()
    bench_catch_up(big, sessions, events)
    bench_rebuild(big, work, events, big_bytes)


def make_store(home: Path, sessions: int, events: int) -> None:
    """Write a store of ``sessions`` transcripts holding ``events`` events in all."""
    per = events // sessions
    pool = texts(min(events, 200_003))
    base = int(time.time() * 1000) - sessions * 1000
    for i in range(sessions):
        root = f"/srv/project-{i % 50}"
        from aster_persist.schemas.names import project_slug

        folder = home / "sessions" / project_slug(root)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        sid = str(ULID.from_timestamp((base + i * 1000) / 1000))
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((base + i * 1000) / 1000))
        out = [
            orjson.dumps(
                {
                    "type": "session",
                    "seq": 0,
                    "id": sid,
                    "v": 1,
                    "created_at": ts + ".000Z",
                    "cwd": root,
                    "repo_root": root,
                    "model": "m",
                    "aster_version": "0",
                    "title": None,
                }
            )
        ]
        for n in range(1, per + 1):
            role = "user" if n % 2 else "assistant"
            out.append(
                orjson.dumps(
                    {
                        "type": "message",
                        "seq": n,
                        "role": role,
                        "content": f"turn {n}: {pool[(i * per + n) % len(pool)]}",
                        "ts": f"{ts}.{n % 1000:03d}Z",
                    }
                )
            )
        (folder / f"{sid}.jsonl").write_bytes(b"\n".join(out) + b"\n")


def list_latency(url: str, n: int = 300) -> float:
    """p50 ms of GET /v1/sessions?limit=50 over one keep-alive connection."""
    times = []
    with httpx.Client(base_url=url) as http:
        for _ in range(20):
            http.get("/v1/sessions", params={"limit": 50})
        for _ in range(n):
            t = time.perf_counter()
            r = http.get("/v1/sessions", params={"limit": 50})
            times.append(time.perf_counter() - t)
            assert r.status_code == 200 and len(r.json()["items"]) == 50
    return statistics.median(times) * 1000


def bench_catch_up(home: Path, sessions: int, events: int) -> None:
    """Append 10,000 events to 100 transcripts while the daemon is down, then start it."""
    per = events // sessions
    files = sorted((home / "sessions").rglob("*.jsonl"))[:100]
    pool = texts(100, seed=11)
    for path in files:
        with path.open("ab") as f:
            for n in range(per + 1, per + 101):
                line = {"type": "message", "seq": n, "role": "user", "content": pool[n % 100]}
                f.write(orjson.dumps({**line, "ts": "2026-06-01T00:00:00.000Z"}) + b"\n")
    d = daemon(home)
    try:
        stats = httpx.get(d.url + "/v1/info").json()["catalog"]
        assert stats["incremental"] == len(files), stats
    finally:
        d.stop()
    add(
        "index catch-up after 10,000 events appended while stopped",
        f"{stats['seconds']:.2f} s",
        f"{d.ready_after:.2f} s to /readyz with process start",
        "target < 1 s",
    )


def bench_rebuild(home: Path, work: Path, events: int, transcript_bytes: int) -> None:
    """A full rebuild of the index in-process, against a bare read-and-parse loop."""
    from aster_persist.index.catalog import rebuild
    from aster_persist.storage.home import Home

    bare, ours = [], []
    for _ in range(2):
        t = time.perf_counter()
        lines = bare_parse(home)
        bare.append(lines / (time.perf_counter() - t))
        opened = Home.open(home)
        try:
            t = time.perf_counter()
            rebuild(opened)
            ours.append(lines / (time.perf_counter() - t))
        finally:
            opened.close()
    b, o = statistics.median(bare), statistics.median(ours)
    add(
        f"full index rebuild, {lines:,} lines",
        f"{o:,.0f} lines/s ({lines / o:.1f} s)",
        f"{b:,.0f} lines/s bare read + orjson parse",
        f"{o / b:.2f}x (target >= 0.5x)",
    )
    sqlite_only = bare_sqlite(home, work)
    add(
        "the same documents inserted by SQLite alone",
        f"{sqlite_only:,.0f} rows/s",
        f"{b:,.0f} lines/s bare read + orjson parse",
        f"{sqlite_only / b:.2f}x (what the index's tables allow)",
    )
    size = sum(p.stat().st_size for p in (home / "index").iterdir() if p.is_file())
    add(
        "index size on disk",
        f"{size / 1e6:.0f} MB",
        f"{transcript_bytes / 1e6:.0f} MB of transcripts",
        f"{size / transcript_bytes:.2f}x of the transcripts",
    )


def bare_parse(home: Path) -> int:
    lines = 0
    for path in (home / "sessions").rglob("*.jsonl"):
        for line in path.read_bytes().splitlines():
            orjson.loads(line)
            lines += 1
    return lines


def bare_sqlite(home: Path, work: Path) -> float:
    """Rows/s of an in-process SQLite writing the index's own document tables (same schema,
    tokenizer and settings) from rows prepared in advance, in one transaction: the
    ceiling any rebuild on this machine has, however little Python it runs."""
    from aster_persist.index.search import SCHEMA

    rows, texts = [], []
    for path in (home / "sessions").rglob("*.jsonl"):
        for line in path.read_bytes().splitlines():
            event = orjson.loads(line)
            if isinstance(event.get("content"), str):
                n = len(rows) + 1
                rows.append(
                    (n, path.stem, event["seq"], "message", event["role"], event["ts"], 0, 0)
                )
                texts.append((n, event["content"]))
    db_path = work / "bare-index.sqlite3"
    db = sqlite3.connect(db_path, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=OFF")
        db.executescript(SCHEMA)
        t = time.perf_counter()
        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO docs (rowid, session, seq, kind, role, ts, pos, size) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        db.executemany("INSERT INTO doc_text (rowid, text) VALUES (?, ?)", texts)
        db.execute("COMMIT")
        elapsed = time.perf_counter() - t
    finally:
        db.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    return len(rows) / elapsed
