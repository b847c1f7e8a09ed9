"""Readers never slow writers: a real daemon with every stream slot taken (at its default
cap), half by change feed subscribers and half by tails of the session being written, a
few of the tails not reading at all while the appends go on. Writers append as fast as
they can; their rate against the same writers' with no stream open, the runs taken in
turn, is the figure (measured, never asserted). What is asserted is that every
follower was told of every acknowledged append exactly once and in order."""

from __future__ import annotations

import multiprocessing
import re
import socket
import statistics
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import httpx

from ..conftest import Daemon, new_session
from ..streams import Streams
from .scale import record, rounds

WRITERS = 4
SECONDS = 1.0
HELD_BACK = 4  # tails that read nothing until the writers stop
EVENT = b'{"type": "message", "role": "user", "content": "please explain the entrypoint"}'


def number(pattern: bytes, data: bytes) -> int:
    found = re.search(pattern, data)
    assert found is not None, data[:300]
    return int(found.group(1))


class Writer:
    """Appends on one kept-alive connection, as cheaply as a client can."""

    def __init__(self, port: int, sid: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.request = (
            f"POST /v1/sessions/{sid}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(EVENT)}\r\n\r\n"
        ).encode() + EVENT
        self.buffer = b""
        self.acknowledged: list[int] = []

    def recv(self) -> bytes:
        data = self.sock.recv(65536)
        assert data, "the daemon closed the connection"
        return data

    def append(self) -> None:
        self.sock.sendall(self.request)
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += self.recv()
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        length = number(rb"(?i)content-length: *(\d+)", head)
        while len(rest) < length:
            rest += self.recv()
        body, self.buffer = rest[:length], rest[length:]
        assert head.startswith(b"HTTP/1.1 201"), head + body
        self.acknowledged.append(number(rb'"last_seq":(\d+)', body))


def appends_per_second(port: int, sid: str) -> tuple[float, list[int]]:
    """WRITERS writers appending one event at a time for SECONDS; the rate and every
    seq acknowledged. The index has caught up first, so no run pays for the one before."""
    httpx.get(f"http://127.0.0.1:{port}/v1/search", params={"q": "settle"}, timeout=60)
    writers = [Writer(port, sid) for _ in range(WRITERS)]
    stop = threading.Event()

    def run(writer: Writer) -> None:
        while not stop.is_set():
            writer.append()

    threads = [threading.Thread(target=run, args=(w,)) for w in writers]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(SECONDS)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    for writer in writers:
        writer.sock.close()
    seqs = sorted(seq for writer in writers for seq in writer.acknowledged)
    return len(seqs) / elapsed, seqs


def received(streams: Streams, which: range, marker: bytes) -> None:
    """Wait until each of ``which`` streams has been sent ``marker``."""
    streams.wait(lambda: all(streams.has(n, marker) for n in which))


def open_streams(url: str) -> int:
    return int(httpx.get(f"{url}/v1/info", timeout=60).json()["streams"]["open"])


def test_readers_never_slow_writers(home: Path) -> None:
    daemon = Daemon(home).start()
    ratios, checked, lost = [], 0, 0
    # the writers in a process of their own, so reading the streams here never slows them
    writers = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    try:
        slots = int(httpx.get(f"{daemon.url}/v1/info").json()["streams"]["max"])
        feeds = slots // 2
        tails = slots - feeds
        runs = rounds(2, 8)
        for round_ in range(runs):
            with httpx.Client(base_url=daemon.url) as http:
                alone_sid, sid = new_session(http), new_session(http)
            if round_ % 2:
                alone, _ = writers.submit(appends_per_second, daemon.port, alone_sid).result()
            stream = f"/v1/sessions/{sid}/events/stream"
            streams = Streams(
                daemon.port,
                [("/v1/events", {})] * feeds
                + [(stream, {}) for _ in range(tails - HELD_BACK)]
                + [(stream, {"x-stalled": "1"}) for _ in range(HELD_BACK)],
            )
            try:
                streams.wait(lambda: open_streams(daemon.url) == slots)
                rate, seqs = writers.submit(appends_per_second, daemon.port, sid).result()
                for n in range(slots - HELD_BACK, slots):
                    streams.resume(n)
                last = seqs[-1]
                assert seqs == list(range(1, last + 1))
                received(streams, range(feeds, slots), b"id: %d\r\n" % last)
                received(streams, range(feeds), b'"last_seq":%d,' % last)
                for n in range(feeds):
                    told = [
                        seq
                        for first, end in streams.notices(n, sid)
                        for seq in range(first, end + 1)
                    ]
                    lost += len(set(seqs) ^ set(told)) + len(told) - len(set(told))
                    lost += told != sorted(told)
                    checked += len(seqs)
                for n in range(feeds, slots):
                    sent = streams.ids(n)
                    lost += len(set(seqs) ^ set(sent)) + len(sent) - len(set(sent))
                    lost += sent != sorted(sent)
                    checked += len(seqs)
            finally:
                streams.close()
            streams.wait(lambda: open_streams(daemon.url) == 0)
            if not round_ % 2:
                alone, _ = writers.submit(appends_per_second, daemon.port, alone_sid).result()
            ratios.append(rate / alone)
    finally:
        writers.shutdown()
        daemon.kill()
    record(
        f"readers never slow writers: {slots} streams, half feed, half tails ({HELD_BACK} held back)",
        rounds=runs,
        faults=runs * HELD_BACK,
        checked=checked,
        lost=lost,
        figure=f"writers at {statistics.median(ratios):.2f}x with every feed and tail slot taken",
    )
    assert lost == 0
