"""Slow and oversized clients against a real daemon on loopback.

A request head larger than ASTER_MAX_HEADER_BYTES gets 431 problem+json and stores
nothing, whether it ends or never does, and the daemon's memory does not grow with it.
A head not in within ASTER_CLIENT_TIMEOUT_SECONDS, even one still trickling in, and a
body that stalls for as long get 408; a body that keeps coming is served however long it
takes; a connection that says nothing is closed. With 1,000 clients each holding half a
body — twice as many as ASTER_MAX_REQUESTS lets be in progress — a normal append is
answered 201 while every one of them is still held open (the daemon, started with a
soft limit of 256 descriptors, raises its own); each of them is served once its body is
in, and a stop answers those still waiting 503 at once instead of waiting for them.
"""

from __future__ import annotations

import contextlib
import json
import resource
import select
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from ..conftest import Daemon, new_session, user
from .scale import record, rounds

EVENT = json.dumps(user("appended")).encode()
STALLERS = 1_000


def raise_open_files(needed: int) -> None:
    """This process's soft descriptor limit, which the daemon it starts inherits."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"{needed} descriptors are needed, the hard limit is {hard}")
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


@contextlib.contextmanager
def soft_open_files(limit: int) -> Iterator[None]:
    """This process's soft descriptor limit for a while: a daemon started meanwhile
    inherits it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def open_files_allowed(pid: int) -> int:
    row = next(r for r in Path(f"/proc/{pid}/limits").read_text().splitlines() if "open files" in r)
    return int(row.split()[3])


def head(sid: str, *lines: bytes) -> bytes:
    start = f"POST /v1/sessions/{sid}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
    return (
        start + b"Content-Type: application/json\r\n" + b"".join(line + b"\r\n" for line in lines)
    )


def connect(daemon: Daemon, timeout: float = 10) -> socket.socket:
    return socket.create_connection(("127.0.0.1", daemon.port), timeout=timeout)


def answer(sock: socket.socket) -> bytes:
    """Everything the daemon sends until it closes the connection (or the socket times out)."""
    out = b""
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            out += chunk
    return out


def status(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1]) if raw.startswith(b"HTTP/1.1 ") else 0


def problem(raw: bytes) -> dict[str, object]:
    head_part, _, body = raw.partition(b"\r\n\r\n")
    assert b"content-type: application/problem+json" in head_part.lower(), raw[:300]
    assert b"connection: close" in head_part.lower(), raw[:300]
    parsed: dict[str, object] = json.loads(body)
    return parsed


def session(daemon: Daemon) -> str:
    with httpx.Client(base_url=daemon.url) as http:
        return new_session(http)


def stored(daemon: Daemon, sid: str) -> int:
    events = httpx.get(f"{daemon.url}/v1/sessions/{sid}/events", params={"limit": 10_000})
    assert events.status_code == 200, events.text
    return len(events.json()["events"])


def peak_memory_kib(pid: int) -> int:
    status_file = Path(f"/proc/{pid}/status").read_text()
    return int(status_file.split("VmHWM:")[1].split()[0])


def send_until_answered(sock: socket.socket, data: bytes, total: int) -> int:
    """Sends ``data`` again and again, up to ``total`` bytes, until the daemon answers or
    stops reading; the bytes sent."""
    sent = 0
    while sent < total:
        if select.select([sock], [], [], 0)[0]:
            break
        try:
            sock.sendall(data)
        except OSError:
            break
        sent += len(data)
    return sent


def test_a_head_over_the_limit_is_431_and_stores_nothing(home: Path) -> None:
    daemon = Daemon(home).start()
    try:
        sid = session(daemon)
        length = f"Content-Length: {len(EVENT)}".encode()
        with connect(daemon) as sock:  # a large head within the limit is served
            sock.sendall(
                head(sid, b"X-Pad: " + b"a" * 32_000, length, b"Connection: close")
                + b"\r\n"
                + EVENT
            )
            assert status(answer(sock)) == 201
        with connect(daemon) as sock:  # one header over the limit
            sock.sendall(head(sid, b"X-Pad: " + b"a" * 70_000, length) + b"\r\n" + EVENT)
            refused = answer(sock)
            assert status(refused) == 431
            assert problem(refused)["code"] == "header_fields_too_large"
        with connect(daemon) as sock:  # many headers, each small
            many = [f"X-Tag-{i}: {'b' * 60}".encode() for i in range(1_200)]
            sock.sendall(head(sid, *many, length) + b"\r\n" + EVENT)
            assert status(answer(sock)) == 431
        before = peak_memory_kib(daemon.proc.pid)
        with connect(daemon) as sock:  # 16 MiB of one header that never ends
            sock.sendall(head(sid) + b"X-Pad: ")
            sent = send_until_answered(sock, b"a" * 65536, 16 * 1024 * 1024)
            endless = answer(sock)
        grown = peak_memory_kib(daemon.proc.pid) - before
        assert status(endless) == 431, endless[:300]
        assert problem(endless)["code"] == "header_fields_too_large"
        assert grown < 8 * 1024, f"peak memory grew by {grown} KiB for {sent} bytes of head"
        assert stored(daemon, sid) == 1
    finally:
        daemon.kill()
    record("slow clients: request heads over 64 KiB, one of 16 MiB never ending",
           rounds=3, faults=3, checked=4, lost=0,
           figure=f"431 for each, the endless one after {sent // 1024:,} KiB sent; "
           f"the daemon's peak memory +{grown} KiB")  # fmt: skip


def late_by(daemon: Daemon, *parts: bytes, gap: float = 0) -> tuple[bytes, float]:
    """The answer to ``parts`` sent ``gap`` seconds apart (until the daemon answers), and
    the seconds from connecting to the end of the answer."""
    started = time.monotonic()
    with connect(daemon) as sock:
        for part in parts:
            if select.select([sock], [], [], gap)[0]:
                break
            with contextlib.suppress(OSError):
                sock.sendall(part)
        return answer(sock), time.monotonic() - started


def test_stalled_heads_and_bodies_get_408_and_silent_connections_are_closed(home: Path) -> None:
    timeout = 1.0
    daemon = Daemon(home, env={"ASTER_CLIENT_TIMEOUT_SECONDS": str(timeout)}).start()
    try:
        sid = session(daemon)
        length = f"Content-Length: {len(EVENT)}".encode()
        whole = head(sid, length, b"Connection: close") + b"\r\n" + EVENT
        cut = len(whole) - len(EVENT)
        cases = {
            "half a head": ((head(sid),), 0),
            "half a body": ((whole[: cut + 10],), 0),
            "a head a byte at a time": (tuple(bytes([b]) for b in whole[:80]), timeout / 10),
            "a body in parts": (
                (whole[:cut], *(whole[i : i + 10] for i in range(cut, len(whole), 10))),
                timeout * 0.3,
            ),
            "nothing": ((), 0),
        }
        with ThreadPoolExecutor(len(cases)) as pool:
            futures = {
                name: pool.submit(late_by, daemon, *p, gap=g) for name, (p, g) in cases.items()
            }
            answers = {name: future.result() for name, future in futures.items()}
        for name in ("half a head", "half a body", "a head a byte at a time"):
            raw, waited = answers[name]
            assert status(raw) == 408, (name, raw[:300])
            assert problem(raw)["code"] == "request_timeout"
            assert waited >= timeout * 0.9, (name, waited)
        raw, took = answers["a body in parts"]
        assert status(raw) == 201 and took > 1.5 * timeout
        assert answers["nothing"][0] == b"" and answers["nothing"][1] >= timeout * 0.9
        assert stored(daemon, sid) == 1
    finally:
        daemon.kill()


@contextlib.contextmanager
def stallers(daemon: Daemon, sid: str, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections, each with a whole head and half of its body sent."""
    half = len(EVENT) // 2
    opened: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = connect(daemon)
            sock.sendall(
                head(sid, f"Content-Length: {len(EVENT)}".encode()) + b"\r\n" + EVENT[:half]
            )
            opened.append(sock)
        yield opened
    finally:
        for sock in opened:
            sock.close()


def finish(socks: list[socket.socket], batch: int) -> list[int]:
    """Each staller's body completed, a batch (fewer than the requests allowed in
    progress) at a time; the status of each answer."""
    half = len(EVENT) // 2
    statuses = []
    for start in range(0, len(socks), batch):
        group = socks[start : start + batch]
        for sock in group:
            sock.sendall(EVENT[half:])
        statuses += [status(sock.recv(65536)) for sock in group]
    return statuses


def read_by_daemon(port: int, count: int, within: float = 20) -> bool:
    """True once ``count`` connections to ``port`` are established and the daemon has
    read every byte sent on them (nothing waits in its receive queues)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        rows = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
        mine = [r for r in rows if r[1].endswith(f":{port:04X}") and r[3] == "01"]
        if len(mine) >= count and all(r[4].endswith(":00000000") for r in mine):
            return True
        time.sleep(0.05)
    return False


def still_open(socks: list[socket.socket]) -> int:
    """How many of these connections the daemon has neither answered nor closed."""
    poller = select.poll()
    for sock in socks:
        poller.register(sock, select.POLLIN)
    return len(socks) - len(poller.poll(0))


def test_stalled_bodies_hold_no_slot_a_normal_append_needs_nor_delay_a_stop(home: Path) -> None:
    appends = rounds(5, 100)
    raise_open_files(2 * STALLERS + 512)
    env = {"ASTER_MAX_REQUESTS": str(STALLERS // 2)}
    with soft_open_files(256):  # fewer than the stallers: the daemon raises its own
        daemon = Daemon(home, env=env).start()
    latencies = []
    try:
        assert open_files_allowed(daemon.proc.pid) > 2 * STALLERS
        with httpx.Client(base_url=daemon.url, timeout=10) as http:
            sid = new_session(http)
            with stallers(daemon, sid, STALLERS) as held:
                assert read_by_daemon(daemon.port, STALLERS)
                for i in range(appends):
                    started = time.perf_counter()
                    r = http.post(f"/v1/sessions/{sid}/events", json=user(f"normal {i}"))
                    latencies.append(time.perf_counter() - started)
                    assert r.status_code == 201, r.text
                assert still_open(held) == STALLERS
                finished, left = held[: STALLERS // 2], held[STALLERS // 2 :]
                assert finish(finished, batch=STALLERS // 4) == [201] * len(finished)
                found = stored(daemon, sid)
                assert daemon.stop() == 0
                refused = [answer(sock) for sock in left]
        assert [status(raw) for raw in refused] == [503] * len(left)
        assert problem(refused[0])["code"] == "shutting_down"
        assert "graceful shutdown exceeded" not in daemon.output()
    finally:
        daemon.kill()
    slowest = max(latencies) * 1000
    expected = appends + len(finished)
    assert found == expected
    record(f"slow clients: {STALLERS:,} half-sent bodies, ASTER_MAX_REQUESTS={STALLERS // 2}",
           rounds=appends, faults=STALLERS, checked=expected + len(left), lost=expected - found,
           figure=f"{STALLERS:,} stalled clients held, a normal append answered in "
           f"{slowest:.0f} ms (the slowest of {appends})")  # fmt: skip
