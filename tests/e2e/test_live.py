"""Live streams against a real daemon: resume without gaps, session tails, dropping a
stalled client, the subscriber cap and shutdown with streams open."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..conftest import Daemon, new_session, user


def sse(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """Events of an SSE response: {"event", "id", "data"} (data parsed as JSON)."""
    event: dict[str, Any] = {}
    for line in response.iter_lines():
        if not line:
            if "data" in event:
                event["data"] = json.loads(event["data"])
                yield event
            event = {}
        elif line.startswith(":"):
            continue
        else:
            key, _, value = line.partition(":")
            event[key] = value[1:] if value.startswith(" ") else value


class Reader(threading.Thread):
    """Reads a stream in the background until told to stop or it has ``stop_after``."""

    def __init__(self, url: str, headers: dict[str, str] | None = None, stop_after: int = 0):
        super().__init__(daemon=True)
        self.url, self.headers, self.stop_after = url, headers or {}, stop_after
        self.events: list[dict[str, Any]] = []
        self.status = 0
        self.opened = threading.Event()
        self.done = threading.Event()
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            with (
                httpx.Client(timeout=httpx.Timeout(30, read=30)) as http,
                http.stream("GET", self.url, headers=self.headers) as response,
            ):
                self.status = response.status_code
                self.opened.set()
                if response.status_code != 200:
                    return
                for event in sse(response):
                    self.events.append(event)
                    if self.stop_after and len(self.events) >= self.stop_after:
                        return
                    if self.done.is_set():
                        return
        except httpx.HTTPError as exc:
            self.error = exc  # the connection broke before the stream ended
        finally:
            self.opened.set()


def journal_ids(url: str, after: str) -> list[str]:
    ids, cursor = [], after
    while True:
        page = httpx.get(f"{url}/v1/journal", params={"cursor": cursor, "limit": 1000}).json()
        ids += [e["id"] for e in page["items"]]
        if not page["next_cursor"]:
            return ids
        cursor = page["next_cursor"]


def test_resume_after_disconnect_under_writes_loses_and_repeats_nothing(daemon: Daemon) -> None:
    url = daemon.url
    first = httpx.post(f"{url}/v1/memory/blocks", json={"name": "seed", "content": "s"}).json()
    start = httpx.get(f"{url}/v1/journal").json()["items"][-1]["id"]
    assert first["name"] == "seed"
    stop = threading.Event()

    def write() -> None:
        with httpx.Client(base_url=url) as http:
            n = 0
            while not stop.is_set():
                http.post("/v1/memory/blocks", json={"name": f"b-{n}", "content": f"note {n}"})
                if n % 5 == 0:
                    new_session(http)
                n += 1

    writers = [threading.Thread(target=write, daemon=True)]
    writers[0].start()
    got: list[str] = []
    last = start
    for _ in range(4):  # connect, read a few, drop the connection, resume
        reader = Reader(f"{url}/v1/events", {"Last-Event-ID": last}, stop_after=15)
        reader.start()
        reader.join(20)
        assert reader.status == 200
        journal = [e for e in reader.events if e["event"] == "journal"]
        got += [e["id"] for e in journal]
        assert all(e["id"] == e["data"]["id"] for e in journal)
        last = got[-1]
    stop.set()
    writers[0].join(10)
    reader = Reader(f"{url}/v1/events", {"Last-Event-ID": last})
    reader.start()
    expected = journal_ids(url, start)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(got) + len(
        [e for e in reader.events if e["event"] == "journal"]
    ) < len(expected):
        time.sleep(0.05)
    reader.done.set()
    got += [e["id"] for e in reader.events if e["event"] == "journal"]
    assert len(got) == len(set(got)), "an entry was sent twice"
    assert got == expected


def created(url: str, **fields: Any) -> str:
    with httpx.Client(base_url=url) as http:
        return new_session(http, **fields)


def test_session_tail_replays_then_follows(daemon: Daemon) -> None:
    url = daemon.url
    sid = created(url)
    httpx.post(f"{url}/v1/sessions/{sid}/events", json=[user("one"), user("two"), user("three")])
    reader = Reader(f"{url}/v1/sessions/{sid}/events/stream", {"Last-Event-ID": "1"}, stop_after=3)
    reader.start()
    reader.opened.wait(10)
    time.sleep(0.3)
    httpx.post(f"{url}/v1/sessions/{sid}/events", json=user("four")).raise_for_status()
    reader.join(10)
    assert [(e["event"], e["id"], e["data"]["content"]) for e in reader.events] == [
        ("event", "2", "two"),
        ("event", "3", "three"),
        ("event", "4", "four"),
    ]


def test_change_feed_filters_and_append_notices(daemon: Daemon) -> None:
    url = daemon.url
    feed = Reader(f"{url}/v1/events?op=session", stop_after=2)
    memory_only = Reader(f"{url}/v1/events?op=memory", stop_after=1)
    one_repo = Reader(f"{url}/v1/events?repo_root=/srv/live", stop_after=3)
    for reader in (feed, memory_only, one_repo):
        reader.start()
        reader.opened.wait(10)
    time.sleep(0.3)
    sid = created(url, repo_root="/srv/live")
    httpx.post(f"{url}/v1/sessions/{sid}/events", json=[user("a"), user("b")]).raise_for_status()
    httpx.post(f"{url}/v1/memory/blocks", json={"name": "m", "content": "x"}).raise_for_status()
    with httpx.Client(base_url=url) as http:
        other = new_session(http, repo_root="/srv/elsewhere")
        http.post(f"/v1/sessions/{other}/events", json=user("c")).raise_for_status()
        http.post(f"/v1/sessions/{sid}/events", json=user("d")).raise_for_status()
    for reader in (feed, memory_only, one_repo):
        reader.join(10)
    assert [
        (e["event"], e["data"].get("session_id") or e["data"].get("session"))
        for e in one_repo.events
    ] == [
        ("journal", sid),
        ("session.appended", sid),
        ("session.appended", sid),
    ]
    kinds = [(e["event"], e["data"].get("op")) for e in feed.events]
    assert kinds == [("journal", "session.created"), ("session.appended", None)]
    notice = feed.events[1]
    assert "id" not in notice
    assert (
        notice["data"]["session_id"],
        notice["data"]["first_seq"],
        notice["data"]["last_seq"],
    ) == (
        sid,
        1,
        2,
    )
    assert notice["data"]["kinds"] == ["message"]
    assert [e["data"]["op"] for e in memory_only.events] == ["memory.write"]


@pytest.fixture
def small_daemon(home: Path) -> Iterator[Daemon]:
    env = {
        "ASTER_MAX_SUBSCRIBERS": "3",
        "ASTER_SUBSCRIBER_QUEUE": "8",
        "ASTER_HEARTBEAT_SECONDS": "0.3",
    }
    d = Daemon(home, env=env)
    d.start()
    yield d
    d.kill()


def test_a_stalled_client_is_dropped_and_writers_do_not_wait(small_daemon: Daemon) -> None:
    url = small_daemon.url
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect(("127.0.0.1", small_daemon.port))
    stalled.sendall(b"GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    time.sleep(0.3)
    big = "x" * 200_000
    times = []
    with httpx.Client(base_url=url) as http:
        for n in range(80):  # each entry carries the 200 KB it replaced: buffers fill fast
            t = time.perf_counter()
            r = http.put("/v1/memory/core", json={"content": f"{n} {big}"})
            times.append(time.perf_counter() - t)
            assert r.status_code == 200
        info = http.get("/v1/info").json()["streams"]
    assert info["dropped"] == 1 and info["open"] == 0
    assert max(times) < 5  # no write waited for the stalled reader's send to time out
    stalled.close()


def test_subscribers_past_the_cap_get_503(small_daemon: Daemon) -> None:
    readers = [Reader(f"{small_daemon.url}/v1/events") for _ in range(3)]
    for reader in readers:
        reader.start()
        reader.opened.wait(10)
    deadline = time.monotonic() + 5
    while httpx.get(f"{small_daemon.url}/v1/info").json()["streams"]["open"] < 3:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    r = httpx.get(f"{small_daemon.url}/v1/events")
    assert r.status_code == 503 and r.headers["content-type"] == "application/problem+json"
    assert r.headers["retry-after"] == "5"
    for reader in readers:
        reader.done.set()


def test_shutdown_ends_open_streams_within_the_timeout(daemon: Daemon) -> None:
    readers = [
        Reader(f"{daemon.url}/v1/events"),
        Reader(f"{daemon.url}/v1/sessions/{created(daemon.url)}/events/stream"),
    ]
    for reader in readers:
        reader.start()
        reader.opened.wait(10)
    time.sleep(0.3)
    t = time.monotonic()
    assert daemon.stop(timeout=15) == 0
    assert time.monotonic() - t < 8
    for reader in readers:
        reader.join(5)
        assert not reader.is_alive() and reader.error is None  # ended, last chunk and all


def test_idle_streams_get_heartbeats(small_daemon: Daemon) -> None:
    with (
        httpx.Client(timeout=httpx.Timeout(10, read=5)) as http,
        http.stream("GET", f"{small_daemon.url}/v1/events") as response,
    ):
        started = time.monotonic()
        beats = 0
        for line in response.iter_lines():
            if line.startswith(":"):
                beats += 1
                if beats == 3:
                    break
    assert 0.6 < time.monotonic() - started < 3  # three comment lines, about 0.3 s apart


def test_a_session_tail_ends_when_the_session_is_deleted_and_a_trashed_one_is_404(
    daemon: Daemon,
) -> None:
    url = daemon.url
    sid = created(url)
    httpx.post(f"{url}/v1/sessions/{sid}/events", json=user("one")).raise_for_status()
    reader = Reader(f"{url}/v1/sessions/{sid}/events/stream")
    reader.start()
    reader.opened.wait(10)
    time.sleep(0.3)
    assert httpx.delete(f"{url}/v1/sessions/{sid}").status_code == 204
    reader.join(10)
    assert not reader.is_alive() and reader.error is None
    assert [e["data"]["content"] for e in reader.events] == ["one"]
    r = httpx.get(f"{url}/v1/sessions/{sid}/events/stream")
    assert r.status_code == 404
    assert r.headers["content-type"] == "application/problem+json"
    for bad in (b"\xb2", b"9" * 5000):  # a digit to Python, and too many digits
        r = httpx.get(
            f"{url}/v1/sessions/{created(url)}/events/stream", headers={"Last-Event-ID": bad}
        )
        assert r.status_code == 422, r.text
