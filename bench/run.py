"""make bench: the daemon against baselines measured in the same run, printed as a table.

Baselines: a no-op FastAPI POST endpoint on the same uvicorn settings (appends), a raw
in-process append loop with one fdatasync per 100 lines (batches), the same listing on a
small store (listing), a bare read-and-parse loop over the same files (index rebuild,
import), an in-process SQLite writing the index's tables from prepared rows (the most a
rebuild can reach), a single append and two no-op requests plus bare disk work (remember
and recall) and the same appends without followers (the live feed, and every stream slot
taken by feed subscribers and tails of the session written: readers). Floors beside two
targets show what the work itself allows: a bare ASGI app doing only what a durable batch
append must (bench/floor_app.py), and a bare parse that writes and syncs each imported
conversation to a file of its own. Load comes from wrk,
which does not measure itself, or from raw sockets. Runs that are compared are interleaved, the index settles before each timed
run, and an fsync probe is printed beside durable figures.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import re
import selectors
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from pathlib import Path

import httpx
import orjson
from ulid import ULID

ROOT = Path(__file__).resolve().parents[1]
EVENT = {
    "type": "message",
    "role": "user",
    "content": "please read src/main.rs and explain the entrypoint",
}
rows: list[tuple[str, str, str, str]] = []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fsync_probe(folder: Path, n: int = 200) -> float:
    """Median ms of a 200-byte append plus fdatasync on this disk, right now."""
    path = folder / "probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        os.write(fd, b"x" * 200)
        os.fdatasync(fd)
        times.append(time.perf_counter() - t)
    os.close(fd)
    path.unlink()
    return statistics.median(times) * 1000


class Server:
    def __init__(self, args: list[str], env: dict[str, str], port: int, ready: str) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(
            args, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.started = time.perf_counter()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + ready, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.01)
        else:
            raise RuntimeError(f"{args} did not start")
        self.ready_after = time.perf_counter() - self.started

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)


def daemon(home: Path, **env: str) -> Server:
    port = free_port()
    return Server(
        [sys.executable, "-m", "aster_persist", "serve"],
        {"ASTER_HOME": str(home), "ASTER_PORT": str(port), "ASTER_LOG_LEVEL": "warning", **env},
        port,
        "/readyz",
    )


def noop() -> Server:
    return asgi("bench.noop_app:app", "/docs")


def floor(folder: Path) -> Server:
    """The bare durable batch append (bench/floor_app.py), its files under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    return asgi("bench.floor_app:app", "/", FLOOR_DIR=str(folder))


def asgi(target: str, ready: str, **env: str) -> Server:
    """An ASGI app of bench/ on the daemon's uvicorn settings."""
    port = free_port()
    return Server(
        [
            sys.executable,
            "-m",
            "uvicorn",
            target,
            "--port",
            str(port),
            "--no-access-log",
            "--log-level",
            "warning",
            "--no-server-header",
        ],
        {"PYTHONPATH": str(ROOT), **env},
        port,
        ready,
    )


def wrk(
    url: str, paths: list[str], body: bytes, connections: int, seconds: int, folder: Path
) -> float:
    """Requests per second wrk reached posting ``body`` round-robin over ``paths``."""
    script = folder / "post.lua"
    lua_paths = ", ".join(f'"{p}"' for p in paths)
    script.write_text(
        'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
        f"wrk.body = [==[{body.decode()}]==]\nlocal paths = {{{lua_paths}}}\nlocal i = 0\n"
        "request = function() i = i + 1; return wrk.format(nil, paths[(i % #paths) + 1]) end\n"
        "response = function(status) if status >= 300 then error('status ' .. status) end end\n"
    )
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", str(script), url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError(f"wrk saw errors:\n{out}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]


def settle(url: str) -> None:
    """Let the daemon index what earlier runs appended (a search waits for that), so
    no run pays for the one before it."""
    httpx.get(url + "/v1/search", params={"q": "settle", "limit": 1}, timeout=300)
    time.sleep(0.2)


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


def vocabulary() -> list[str]:
    """Words of real transcripts (the test fixtures), most frequent first."""
    counts: Counter[str] = Counter()
    for path in (ROOT / "tests" / "fixtures").rglob("*.json*"):
        counts.update(w.lower() for w in re.findall(r"[A-Za-z]{3,}", path.read_text()))
    return [w for w, _ in counts.most_common(20_000)]


def texts(n: int, seed: int = 7) -> list[str]:
    """``n`` messages of 6 to 16 words drawn with Zipf's law from ``vocabulary()``."""
    words = vocabulary()
    rng = random.Random(seed)
    weights = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(words))))
    return [
        " ".join(rng.choices(words, cum_weights=weights, k=rng.randint(6, 16))) for _ in range(n)
    ]


def make_store(home: Path, sessions: int, events: int) -> None:
    """Write a store of ``sessions`` transcripts holding ``events`` events in all."""
    per = events // sessions
    pool = texts(min(events, 200_003))
    base = int(time.time() * 1000) - sessions * 1000
    for i in range(sessions):
        root = f"/srv/project-{i % 50}"
        from aster_persist.storage.home import project_slug

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


def add(name: str, ours: str, baseline: str, result: str) -> None:
    rows.append((name, ours, baseline, result))
    print(f"  {name}: {ours} vs {baseline} -> {result}", flush=True)


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


def bench_listing(work: Path, sessions: int, events: int) -> None:
    small = work / "small-home"
    big = work / "big-home"
    t = time.perf_counter()
    make_store(small, sessions, sessions)
    make_store(big, sessions, events)
    print(f"  (wrote test stores in {time.perf_counter() - t:.1f} s)", flush=True)
    big_bytes = sum(p.stat().st_size for p in (big / "sessions").rglob("*.jsonl"))
    cold = daemon(big)
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
            "target < 2 s",
        )
        add(
            "resident memory after start and listing",
            f"{warm.rss_mb():.0f} MB",
            "-",
            "target < 200 MB",
        )
        bench_search(warm, big)
    finally:
        warm.stop()
        d_small.stop()
    bench_catch_up(big, sessions, events)
    bench_rebuild(big, work, events, big_bytes)


def bench_search(d: Server, home: Path) -> None:
    words = vocabulary()
    raw = RawClient(d.port)
    rows = []
    for pair in ((300, 1200), (800, 3000), (150, 5000)):
        query = f"{words[pair[0]]} {words[pair[1]]}"
        path = f"/v1/search?q={urllib.parse.quote(query)}&limit=20"
        status, body = raw.request("GET", path)
        assert status == 200 and len(orjson.loads(body)["items"]) == 20, body[:200]
        db = sqlite3.connect(f"file:{home / 'index' / 'catalog.sqlite3'}?mode=ro", uri=True)
        matches = db.execute(
            "SELECT count(*) FROM doc_text WHERE doc_text MATCH ?",
            (" OR ".join(f'"{w}"' for w in query.split()),),
        ).fetchone()[0]
        indexed = db.execute("SELECT count(*) FROM docs").fetchone()[0]
        db.close()
        rows.append((p50(lambda path=path: raw.request("GET", path), 60), query, matches))
    latency, query, matches = sorted(rows)[1]
    add(
        f"search {indexed:,} documents, two words, top 20 with snippets",
        f"p50 {latency:.2f} ms",
        f"'{query}': {matches:,} matches",
        "target < 20 ms (median of 3 queries)",
    )


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
                rows.append((n, path.stem, event["seq"], "message", event["role"], event["ts"]))
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
            "INSERT INTO docs (rowid, session, seq, kind, role, ts) VALUES (?, ?, ?, ?, ?, ?)",
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


def make_blocks(home: Path, n: int) -> None:
    folder = home / "memory"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    for i in range(n):
        (folder / f"block-{i:05d}.md").write_text(
            f"---\nname: block-{i:05d}\ndescription: fact number {i} about the build\n"
            f"tags: [bench]\nimportance: 0.5\nupdated_at: '2026-01-01T00:{i // 600 % 60:02d}:{i // 10 % 60:02d}.000Z'\n"
            f"---\nThe build needs step {i} before step {i + 1}.\n"
        )


class RawClient:
    """A keep-alive HTTP/1.1 client on a plain socket: it costs microseconds, not the
    millisecond a full Python HTTP client spends, so latencies are the server's."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.connect()

    def connect(self) -> None:
        self.sock = socket.create_connection(("127.0.0.1", self.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def recv(self) -> bytes:
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionResetError("the daemon closed the connection")
        return data

    def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        try:
            self.sock.sendall(head.encode() + body)
            self.buf += self.recv()
        except ConnectionError:  # an idle keep-alive connection the daemon closed
            self.connect()
            self.sock.sendall(head.encode() + body)
        while b"\r\n\r\n" not in self.buf:
            self.buf += self.recv()
        header, self.buf = self.buf.split(b"\r\n\r\n", 1)
        status = int(header.split(b" ", 2)[1])
        found = re.search(rb"(?i)content-length: *(\d+)", header)
        length = int(found.group(1)) if found else 0
        while len(self.buf) < length:
            self.buf += self.recv()
        payload, self.buf = self.buf[:length], self.buf[length:]
        if status >= 300:
            raise RuntimeError(f"{method} {path}: {status} {payload[:200]!r}")
        return status, payload


def p50(fn, n: int = 200) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


class MemoryDiskWork:
    """What a remember must do on disk, bare: a block written to a temporary file, synced,
    renamed over its name and its folder synced (SPEC §4.1), then a journal line appended
    and synced (§5)."""

    def __init__(self, work: Path) -> None:
        self.folder = work / "bare-memory"
        self.folder.mkdir(exist_ok=True)
        self.journal_path = work / "bare-journal.jsonl"
        self.journal = os.open(self.journal_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.block = b"---\nname: rt\ndescription: note\n---\n" + b"note 1 " * 5 + b"\n"
        self.entry = b"x" * 400 + b"\n"
        self.count = itertools.count()

    def __call__(self) -> None:
        tmp = self.folder / f".tmp-{next(self.count)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, self.block)
        os.fsync(fd)
        os.close(fd)
        os.replace(tmp, self.folder / f"rt-{next(self.count)}.md")
        folder = os.open(self.folder, os.O_RDONLY)
        os.fsync(folder)
        os.close(folder)
        os.write(self.journal, self.entry)
        os.fdatasync(self.journal)

    def close(self) -> None:
        os.close(self.journal)
        self.journal_path.unlink()
        shutil.rmtree(self.folder)


def bench_memory(work: Path, blocks: int) -> None:
    home = work / "memory-home"
    make_blocks(home, blocks)
    d = daemon(home)
    base = noop()
    try:
        raw = RawClient(d.port)
        ctx = p50(lambda: raw.request("GET", "/v1/memory/context"))
        text = orjson.loads(raw.request("GET", "/v1/memory/context")[1])
        assert text["counts"]["blocks"] == blocks and text["counts"]["shown"] == 60
        sid = orjson.loads(raw.request("POST", "/v1/sessions", b'{"repo_root": "/srv/bench"}')[1])[
            "id"
        ]
        counter = iter(range(10**9))
        event = orjson.dumps(EVENT)

        def round_trip() -> None:
            i = next(counter)
            body = orjson.dumps({"name": f"rt-{i}", "content": f"note {i} " * 5})
            raw.request("POST", "/v1/memory/blocks", body)
            raw.request("GET", f"/v1/memory/blocks/rt-{i}")

        def append() -> None:
            raw.request("POST", f"/v1/sessions/{sid}/events", event)

        no_op = RawClient(base.port)
        disk = MemoryDiskWork(work)

        def floor() -> None:
            no_op.request("POST", "/noop", event)
            disk()
            no_op.request("POST", "/noop", event)

        rts, apps, floors = [], [], []
        for _ in range(3):
            rts.append(p50(round_trip, 100))
            apps.append(p50(append, 100))
            floors.append(p50(floor, 100))
        disk.close()
        rt, ap, fl = statistics.median(rts), statistics.median(apps), statistics.median(floors)
        add(
            f"memory context with {blocks:,} blocks on disk",
            f"p50 {ctx:.2f} ms",
            "-",
            "target < 10 ms",
        )
        add(
            f"remember -> recall round trip (fsync {fsync_probe(work):.2f} ms)",
            f"p50 {rt:.2f} ms",
            f"p50 {ap:.2f} ms single append",
            f"{rt / ap:.2f}x (target within 2x)",
        )
        add(
            "two no-op requests and a remember's disk work alone",
            f"p50 {fl:.2f} ms",
            f"p50 {ap:.2f} ms single append",
            f"{fl / ap:.2f}x (the floor of a round trip)",
        )
    finally:
        d.stop()
        base.stop()


class Subscribers:
    """``n`` SSE clients of ``path`` (/v1/events) on raw sockets, read by one thread with
    selectors; each notice's arrival time is kept by (session, last seq). Without
    ``parse``, ``mark(marker)`` tells which streams have received ``marker`` since."""

    def __init__(
        self, port: int, n: int, parse: bool = True, path: str = "/v1/events", head: str = ""
    ) -> None:
        self.parse = parse
        self.socks = []
        request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}\r\n".encode()
        for _ in range(n):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(request)
            sock.setblocking(False)
            self.socks.append(sock)
        self.arrivals: dict[tuple[str, int], list[float]] = {}
        self.marker = b""
        self.marked: set[socket.socket] = set()
        self.ended = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        selector = selectors.DefaultSelector()
        buffers = {}
        for sock in self.socks:
            selector.register(sock, selectors.EVENT_READ)
            buffers[sock] = b""
        pattern = re.compile(rb'"session_id":"([0-9A-Z]{26})".*?"first_seq":(\d+),"last_seq":(\d+)')
        while not self.stop.is_set():
            for key, _ in selector.select(0.1):
                sock = key.fileobj
                try:
                    data = sock.recv(1 << 20)  # type: ignore[union-attr]
                except BlockingIOError:
                    continue
                if not data:  # the stream ended
                    selector.unregister(sock)
                    self.ended += 1
                    continue
                if not self.parse:
                    if self.marker and self.marker in buffers[sock][-64:] + data:
                        self.marked.add(sock)  # type: ignore[arg-type]
                    buffers[sock] = data[-64:]
                    continue
                now = time.perf_counter()
                buf = buffers[sock] + data
                *events, buffers[sock] = buf.split(b"\r\n\r\n")
                for event in events:
                    if b"session.appended" in event:
                        found = pattern.search(event)
                        if found:  # one notice may cover several appends
                            sid = found.group(1).decode()
                            for seq in range(int(found.group(2)), int(found.group(3)) + 1):
                                self.arrivals.setdefault((sid, seq), []).append(now)

    def expect(self, marker: bytes) -> None:
        """Watch for ``marker`` on every stream (without ``parse``) from now on."""
        self.marked.clear()
        self.marker = marker

    def wait_marked(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while len(self.marked) < len(self.socks):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(self.marked)} of {len(self.socks)} streams caught up")
            time.sleep(0.02)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        for sock in self.socks:
            sock.close()


def bench_live(work: Path, seconds: int) -> None:
    home = work / "live-home"
    d = daemon(home, ASTER_MAX_SUBSCRIBERS="200")
    try:
        raw = RawClient(d.port)
        sid = orjson.loads(raw.request("POST", "/v1/sessions", b'{"repo_root": "/srv/live"}')[1])[
            "id"
        ]
        event = orjson.dumps(EVENT)
        subs = Subscribers(d.port, 100)
        time.sleep(1)
        replies: dict[tuple[str, int], float] = {}
        period = 1 / 200
        start = time.perf_counter()
        for n in range(200 * seconds):  # 200 appends a second, paced
            _, body = raw.request("POST", f"/v1/sessions/{sid}/events", event)
            replies[(sid, orjson.loads(body)["last_seq"])] = time.perf_counter()
            delay = start + (n + 1) * period - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        time.sleep(1)
        subs.close()
        latencies = [
            max(0.0, arrived - replies[key]) * 1000
            for key, times in subs.arrivals.items()
            if key in replies
            for arrived in times
        ]
        expected = len(replies) * 100
        latencies.sort()
        p99 = latencies[int(len(latencies) * 0.99) - 1] if latencies else float("nan")
        add(
            "feed delivery, 100 subscribers, 200 appends/s",
            f"p99 {p99:.1f} ms (p50 {statistics.median(latencies):.1f} ms)",
            f"{len(latencies):,} of {expected:,} notices received",
            "target p99 < 50 ms",
        )
        paths = [f"/v1/sessions/{sid}/events"]
        with_subs, without, ratios = [], [], []
        for _ in range(5):  # interleaved pairs; the median of the pairs' ratios
            settle(d.url)
            without.append(wrk(d.url, paths, event, 8, seconds, work))
            dropped = httpx.get(d.url + "/v1/info").json()["streams"]["dropped"]
            subs = Subscribers(d.port, 100, parse=False)
            time.sleep(0.5)
            settle(d.url)
            with_subs.append(wrk(d.url, paths, event, 8, seconds, work))
            streams = httpx.get(d.url + "/v1/info").json()["streams"]
            assert streams["open"] == 100 and streams["dropped"] == dropped, streams
            subs.close()
            ratios.append(with_subs[-1] / without[-1])
            time.sleep(0.5)
        add(
            "durable append, c=8, with 100 feed subscribers",
            f"{statistics.median(with_subs):,.0f} req/s",
            f"{statistics.median(without):,.0f} req/s with none",
            f"{statistics.median(ratios):.2f}x (target >= 0.8x)",
        )
        # A hand edit, from the write to its journal entry arriving on the feed.
        block = home / "memory" / "hand.md"
        subs_one = socket.create_connection(("127.0.0.1", d.port))
        subs_one.sendall(b"GET /v1/events?op=memory HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        subs_one.settimeout(5)
        subs_one.recv(65536)  # the response head
        times = []
        for n in range(10):
            t = time.perf_counter()
            block.write_text(f"---\ndescription: edit {n}\n---\nEdited by hand, round {n}.\n")
            buf = b""
            while b"memory." not in buf:
                buf += subs_one.recv(65536)
            times.append(time.perf_counter() - t)
            time.sleep(0.2)
        subs_one.close()
        add(
            "hand edit of a block until it is on the feed",
            f"p50 {statistics.median(times) * 1000:.0f} ms",
            "-",
            "target p50 < 1 s",
        )
    finally:
        d.stop()


def bench_readers(work: Path, seconds: int, reps: int) -> None:
    """Durable appends to one session with every stream slot taken (all by /v1/events
    followers, all by tails of that session, or half each) against the same appends with
    no stream open; each run on a session of its own holding 2,000 events, the runs
    interleaved, the median of each round's ratio."""
    d = daemon(work / "readers-home")
    try:
        raw = RawClient(d.port)
        slots = open_streams(d.url)["max"]
        shapes = {"feed": (slots, 0), "tails": (0, slots), "both": (slots // 2, slots - slots // 2)}
        alone: list[float] = []
        rates: dict[str, list[float]] = {name: [] for name in shapes}
        ratios: dict[str, list[float]] = {name: [] for name in shapes}
        for round_ in range(reps):
            alone.append(_with_streams(d, raw, 0, 0, seconds, work))
            order = list(shapes)[round_ % 3 :] + list(shapes)[: round_ % 3]
            for name in order:
                rate = _with_streams(d, raw, *shapes[name], seconds, work)
                rates[name].append(rate)
                ratios[name].append(rate / alone[-1])
        labels = {
            "feed": f"all {slots} stream slots following /v1/events",
            "tails": f"all {slots} stream slots tailing the session written",
            "both": f"{shapes['both'][0]} on /v1/events and {shapes['both'][1]} tailing it",
        }
        for name, label in labels.items():
            add(
                f"durable append, c=8, {label} (fsync {fsync_probe(work):.2f} ms)",
                f"{statistics.median(rates[name]):,.0f} req/s",
                f"{statistics.median(alone):,.0f} req/s with none",
                f"{statistics.median(ratios[name]):.2f}x (target >= 0.8x)",
            )
    finally:
        d.stop()


def _with_streams(
    d: Server, raw: RawClient, feeds: int, tails: int, seconds: int, work: Path
) -> float:
    """Appends/s to a new session with ``feeds`` /v1/events followers and ``tails`` tails
    of it open, each having received an append made once all were open; none of them
    dropped or ended by the end of the run."""
    sid = orjson.loads(raw.request("POST", "/v1/sessions", b'{"repo_root": "/srv/readers"}')[1])[
        "id"
    ]
    path = f"/v1/sessions/{sid}/events"
    for _ in range(4):
        raw.request("POST", path, orjson.dumps([EVENT] * 500))
    last = 2000
    settle(d.url)  # the info below waits for the index
    before = open_streams(d.url)
    head = f"Last-Event-ID: {last}\r\n"
    groups = [
        (Subscribers(d.port, feeds, parse=False), b'"last_seq":%d,'),
        (Subscribers(d.port, tails, parse=False, path=f"{path}/stream", head=head), b"id: %d\r\n"),
    ]
    try:
        deadline = time.monotonic() + 60
        while open_streams(d.url)["open"] < feeds + tails:
            if time.monotonic() > deadline:
                raise RuntimeError("the streams did not open")
            time.sleep(0.05)
        for subs, marker in groups:
            subs.expect(marker % (last + 1))
        raw.request("POST", path, orjson.dumps(EVENT))
        for subs, _marker in groups:
            subs.wait_marked()
        settle(d.url)
        rate = wrk(d.url, [path], orjson.dumps(EVENT), 8, seconds, work)
        streams = open_streams(d.url)
        assert streams["open"] == feeds + tails, streams
        assert streams["dropped"] == before["dropped"], streams
        assert not any(subs.ended for subs, _marker in groups), "a stream ended"
    finally:
        for subs, _marker in groups:
            subs.close()
    deadline = time.monotonic() + 30
    while open_streams(d.url)["open"] > 0:
        if time.monotonic() > deadline:
            raise RuntimeError("the streams did not close")
        time.sleep(0.05)
    return rate


def open_streams(url: str) -> dict[str, int]:
    streams: dict[str, int] = httpx.get(url + "/v1/info", timeout=300).json()["streams"]
    return streams


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


def bench_learning(work: Path, rounds: int = 10, per_round: int = 100) -> None:
    """Appends that complete a turn, with extraction on and a model that takes 2 s per
    call (jobs pile up behind it), against the same appends with learning off; rounds
    interleaved, p50 of every append."""
    sys.path.insert(0, str(ROOT))
    from tests.model_server import Reply, ScriptedModel

    model = ScriptedModel().start()
    model.responders["memory_items"] = lambda request: Reply({"items": []}, delay=2.0)
    model.responders["session_title"] = lambda request: Reply({"title": "t"}, delay=2.0)
    on = daemon(
        work / "learning-on",
        ASTER_LLM_BASE_URL=model.url,
        ASTER_LLM_MODEL="bench",
        ASTER_LLM_DRAIN_SECONDS="0",
    )
    off = daemon(work / "learning-off")
    times: dict[str, list[float]] = {"on": [], "off": []}
    body = orjson.dumps(
        [
            {"type": "message", "role": "user", "content": "how do I run the tests here?"},
            {"type": "message", "role": "assistant", "content": "Run make test from the root."},
        ]
    )
    try:
        clients = {name: RawClient(d.port) for name, d in (("on", on), ("off", off))}
        paths = {}
        for name, raw in clients.items():
            sid = orjson.loads(raw.request("POST", "/v1/sessions", b'{"repo_root": "/srv/b"}')[1])
            paths[name] = f"/v1/sessions/{sid['id']}/events"
        for round_ in range(rounds):
            for name in ("on", "off") if round_ % 2 == 0 else ("off", "on"):  # no first-mover bias
                raw = clients[name]
                for _ in range(per_round):
                    t = time.perf_counter()
                    raw.request("POST", paths[name], body)
                    times[name].append(time.perf_counter() - t)
        queued = orjson.loads(clients["on"].request("GET", "/v1/extraction")[1])["queued"]
    finally:
        on.stop()
        off.stop()
        model.stop()
    o, b = statistics.median(times["on"]) * 1000, statistics.median(times["off"]) * 1000
    add(
        f"append a completed turn, extraction on, 2 s model (fsync {fsync_probe(work):.2f} ms)",
        f"p50 {o:.2f} ms ({queued} jobs waiting)",
        f"p50 {b:.2f} ms learning off",
        f"{o / b:.2f}x (target within 1.1x)",
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--blocks", type=int, default=10_000)
    parser.add_argument(
        "--only",
        choices=["appends", "listing", "memory", "live", "readers", "import", "learning"],
        default=None,
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed: apt-get install wrk (make bench does it)")
    work = Path(tempfile.mkdtemp(prefix="aster-bench-", dir=os.environ.get("BENCH_DIR")))
    try:
        print(f"fsync probe at start: {fsync_probe(work):.2f} ms", flush=True)
        if args.only in (None, "appends"):
            bench_appends(work, args.seconds, args.reps)
        if args.only in (None, "listing"):
            bench_listing(work, args.sessions, args.events)
        if args.only in (None, "memory"):
            bench_memory(work, args.blocks)
        if args.only in (None, "live"):
            bench_live(work, args.seconds)
        if args.only in (None, "readers"):
            bench_readers(work, args.seconds, args.reps)
        if args.only in (None, "import"):
            bench_import(work)
        if args.only in (None, "learning"):
            bench_learning(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    widths = [
        max(
            len(r[i]) for r in [("benchmark", "aster-persist", "baseline", "ratio / target"), *rows]
        )
        for i in range(4)
    ]
    header = ("benchmark", "aster-persist", "baseline", "ratio / target")
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |")


if __name__ == "__main__":
    main()
