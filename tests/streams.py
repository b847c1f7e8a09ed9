"""Many event streams of a daemon read at once: raw sockets, one thread, every byte kept,
so that a test can hold every slot open and check afterwards what each stream was sent."""

from __future__ import annotations

import json
import re
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

HEAD_END = b"\r\n\r\n"


class Streams:
    """``GET`` each path with its headers; read every stream not paused until closed."""

    def __init__(self, port: int, requests: list[tuple[str, dict[str, str]]]) -> None:
        self.socks: list[socket.socket] = []
        self.received: list[bytearray] = []
        self.paused: set[int] = set()
        self.selector = selectors.DefaultSelector()
        self.lock = threading.Lock()
        for n, (path, headers) in enumerate(requests):
            sock = socket.socket()
            if headers.pop("x-stalled", None):  # a reader that takes its time: small buffer
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                self.paused.add(n)
            sock.connect(("127.0.0.1", port))
            lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{lines}\r\n".encode())
            sock.setblocking(False)
            self.socks.append(sock)
            self.received.append(bytearray())
            if n not in self.paused:
                self.selector.register(sock, selectors.EVENT_READ, n)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while not self.stop.is_set():
            with self.lock:
                ready = self.selector.select(0.05) if self.selector.get_map() else []
                for key, _ in ready:
                    try:
                        data = self.socks[key.data].recv(1 << 20)
                    except BlockingIOError:
                        continue
                    if not data:
                        self.selector.unregister(key.fileobj)
                    self.received[key.data] += data
            if not ready:
                time.sleep(0.005)

    def resume(self, n: int) -> None:
        """Start reading a stream held back."""
        with self.lock:
            self.paused.discard(n)
            self.selector.register(self.socks[n], selectors.EVENT_READ, n)

    def status(self, n: int) -> int:
        raw = bytes(self.received[n])
        return int(raw.split(b" ", 2)[1]) if HEAD_END in raw else 0

    def events(self, n: int) -> list[dict[str, Any]]:
        """The events stream ``n`` has been sent so far: {"event", "id", "data"}."""
        return parse_events(body(bytes(self.received[n])))

    def ids(self, n: int) -> list[int]:
        """The ``id:`` of every event stream ``n`` has been sent so far, in order."""
        return [int(i) for i in re.findall(rb"(?m)^id: (\d+)\r$", body(bytes(self.received[n])))]

    def notices(self, n: int, session_id: str) -> list[tuple[int, int]]:
        """The (first_seq, last_seq) of each append notice of a session stream ``n`` has
        been sent so far."""
        found = re.findall(
            rb'"session_id":"%s".*?"first_seq":(\d+),"last_seq":(\d+)' % session_id.encode(),
            body(bytes(self.received[n])),
        )
        return [(int(first), int(last)) for first, last in found]

    def has(self, n: int, marker: bytes) -> bool:
        return marker in self.received[n]

    def wait(self, done: Callable[[], bool], timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, "the streams did not get there in time"
            time.sleep(0.02)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        for sock in self.socks:
            sock.close()


def body(raw: bytes) -> bytes:
    """The body of a chunked HTTP response, as far as it has come."""
    _head, _, rest = raw.partition(HEAD_END)
    out = bytearray()
    while True:
        size_line, found, after = rest.partition(b"\r\n")
        if not found:
            return bytes(out)
        size = int(size_line, 16)
        if size == 0 or len(after) < size + 2:
            return bytes(out)
        out += after[:size]
        rest = after[size + 2 :]


def parse_events(data: bytes) -> list[dict[str, Any]]:
    """Server-Sent Events, comment lines left out."""
    events = []
    for block in re.split(rb"\r\n\r\n", data)[:-1]:
        event: dict[str, Any] = {}
        for line in block.split(b"\r\n"):
            if line.startswith(b":"):
                continue
            key, _, value = line.decode().partition(": ")
            event[key] = json.loads(value) if key == "data" else value
        if "data" in event:
            events.append(event)
    return events
