"""What every area of ``make bench`` shares: the servers it starts, the load it makes,
the timers and the table.

- Baselines. Each figure is set against a baseline measured in the same run on the same
  machine, never against a number from elsewhere: a no-op FastAPI POST endpoint on the
  daemon's uvicorn settings (``noop()``, bench/noop_app.py), a bare loop doing the same
  disk work in process, or the same request on a smaller store. Floors beside some
  unmet targets show what the work itself allows, such as a bare ASGI app doing only
  what a durable batch append must (``floor()``, bench/floor_app.py).
- Load. ``wrk()`` posts from wrk, which does not measure itself; latencies are timed
  over ``RawClient``, a keep-alive HTTP/1.1 client on a plain socket that costs
  microseconds, so that they are the server's.
- Interleaving. Runs that are compared are interleaved (the baseline and ours in turn,
  round after round) and medians over the rounds are printed (of the rounds' ratios
  where each round gives one), so that a noisy machine moves both sides alike.
  ``settle()`` lets the daemon's index catch up before each timed run, so that no run
  pays for the one before it.
- fsync probe. ``fsync_probe()`` is the median time of a 200-byte append plus fdatasync
  on the bench's own disk, at that moment; it is printed at the start and beside
  durable figures, as a durable append can go no faster than the disk syncs.

Each area calls ``add()`` once per row; ``print_table()`` prints the rows as a markdown
table at the end.
"""

from __future__ import annotations

import itertools
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx

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
    def __init__(
        self, args: list[str], env: dict[str, str], port: int, ready: str, wait: float = 120
    ) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(
            args, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.started = time.perf_counter()
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + ready, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.01)
        else:
            self.proc.kill()  # never left running behind the bench
            self.proc.wait(30)
            raise RuntimeError(f"{args} did not start within {wait:.0f} s")
        self.ready_after = time.perf_counter() - self.started

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)


def daemon(home: Path, wait: float = 120, **env: str) -> Server:
    """The daemon serving ``home``, once ready (within ``wait`` seconds: a cold start of
    a big store rebuilds its catalog first)."""
    port = free_port()
    return Server(
        [sys.executable, "-m", "aster_persist", "serve"],
        {"ASTER_HOME": str(home), "ASTER_PORT": str(port), "ASTER_LOG_LEVEL": "warning", **env},
        port,
        "/readyz",
        wait,
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


def add(name: str, ours: str, baseline: str, result: str) -> None:
    rows.append((name, ours, baseline, result))
    print(f"  {name}: {ours} vs {baseline} -> {result}", flush=True)


def p50(fn, n: int = 200) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


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


def print_table() -> None:
    """The rows added so far, as a markdown table."""
    header = ("benchmark", "aster-persist", "baseline", "ratio / target")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |")
