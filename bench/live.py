"""The live feed (``--only live``) and readers (``--only readers``).

Live:

- Feed delivery: 100 subscribers of /v1/events while one client appends 200 events a
  second; the time from each append's reply to its notice arriving, p99 over every
  notice (target: p99 under 50 ms).
- Durable appends at 8 connections with 100 feed subscribers against the same appends
  with none, five interleaved pairs, the median of the pairs' ratios (target: at least
  0.8x).
- A hand edit of a memory block until its journal entry is on the feed (target: p50
  under 1 s; no baseline).

Readers: durable appends to one session with every stream slot taken (all by
/v1/events followers, all by tails of the session written, or half each) against the
same appends with no stream open, the runs interleaved, the median of each round's
ratio (target: at least 0.8x).
"""

from __future__ import annotations

import re
import selectors
import socket
import statistics
import threading
import time
from pathlib import Path

import httpx
import orjson

from bench.harness import EVENT, RawClient, Server, add, daemon, fsync_probe, settle, wrk


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
