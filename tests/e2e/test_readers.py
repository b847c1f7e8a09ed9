"""Readers against a real daemon on loopback: with every stream slot taken, every feed
subscriber and every tail is told of every acknowledged append once and in order; a new
tail of a long session reads only what follows its Last-Event-ID (the daemon's own count
of bytes read says so); a tail left behind what memory keeps catches up from the file
with no gap and no repeat."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from ..conftest import Daemon, new_session, user
from ..streams import Streams

LONG = "context " * 60  # about 500 bytes an event


def bytes_read(daemon: Daemon) -> int:
    """What the daemon has read with read(2) and its kin so far (files and sockets)."""
    assert daemon.proc is not None
    for line in Path(f"/proc/{daemon.proc.pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/<pid>/io")


def open_streams(url: str) -> int:
    return int(httpx.get(f"{url}/v1/info", timeout=30).json()["streams"]["open"])


def write(url: str, sid: str, writer: int, requests: int) -> list[tuple[int, int, list[str]]]:
    """Appends of one to three events; what each was acknowledged as."""
    done = []
    with httpx.Client(base_url=url, timeout=30) as http:
        for n in range(requests):
            texts = [f"w{writer}-{n}-{k}" for k in range(n % 3 + 1)]
            r = http.post(f"/v1/sessions/{sid}/events", json=[user(t) for t in texts])
            assert r.status_code == 201, r.text
            body = r.json()
            done.append((body["first_seq"], body["last_seq"], texts))
    return done


def appended(events: list[dict[str, Any]], sid: str) -> list[tuple[int, int]]:
    return [
        (e["data"]["first_seq"], e["data"]["last_seq"])
        for e in events
        if e["event"] == "session.appended" and e["data"]["session_id"] == sid
    ]


def covers(notices: list[tuple[int, int]], last: int) -> bool:
    """Whether append notices tell of 1..last, each seq once, in order."""
    expected = 1
    for first, end in notices:
        if first != expected or end < first:
            return False
        expected = end + 1
    return expected == last + 1


def test_with_every_slot_taken_every_follower_gets_every_append_once_in_order(
    home: Path,
) -> None:
    daemon = Daemon(home, env={"ASTER_MAX_SUBSCRIBERS": "8"}).start()
    try:
        with httpx.Client(base_url=daemon.url) as http:
            sid = new_session(http)
        stream = f"/v1/sessions/{sid}/events/stream"
        streams = Streams(daemon.port, [("/v1/events", {})] * 4 + [(stream, {})] * 4)
        try:
            streams.wait(lambda: open_streams(daemon.url) == 8)
            assert httpx.get(daemon.url + stream).status_code == 503  # every slot is taken
            results: list[list[tuple[int, int, list[str]]]] = [[] for _ in range(4)]

            def run(n: int) -> None:
                results[n] = write(daemon.url, sid, n, 40)

            writers = [threading.Thread(target=run, args=(n,)) for n in range(4)]
            for thread in writers:
                thread.start()
            for thread in writers:
                thread.join()
            sent = {
                seq: text
                for result in results
                for first, last, texts in result
                for seq, text in zip(range(first, last + 1), texts, strict=True)
            }
            last = max(sent)
            assert sorted(sent) == list(range(1, last + 1))
            streams.wait(
                lambda: all(covers(appended(streams.events(n), sid), last) for n in range(4))
            )
            streams.wait(
                lambda: all(
                    [int(e["id"]) for e in streams.events(n)] == list(range(1, last + 1))
                    for n in range(4, 8)
                )
            )
            for n in range(4, 8):
                events = streams.events(n)
                assert [(e["event"], e["data"]["seq"]) for e in events] == [
                    ("event", seq) for seq in range(1, last + 1)
                ]
                assert [e["data"]["content"] for e in events] == [sent[s] for s in sorted(sent)]
        finally:
            streams.close()
    finally:
        daemon.kill()


def transcript_size(home: Path, sid: str) -> int:
    return next(home.glob(f"sessions/*/{sid}.jsonl")).stat().st_size


def read_by_a_new_tail(
    daemon: Daemon, sid: str, after: int, expected: list[int], then: Callable[[], object]
) -> int:
    """The bytes the daemon reads from opening a tail at ``after`` (``then`` done once
    it answered) until the tail has had ``expected``."""
    before = bytes_read(daemon)
    stream = f"/v1/sessions/{sid}/events/stream"
    streams = Streams(daemon.port, [(stream, {"Last-Event-ID": str(after)})])
    try:
        streams.wait(lambda: streams.status(0) == 200)
        then()
        streams.wait(lambda: [int(e["id"]) for e in streams.events(0)] == expected)
        return bytes_read(daemon) - before
    finally:
        streams.close()
        streams.wait(lambda: open_streams(daemon.url) == 0)


def test_a_new_tail_of_a_long_session_reads_only_what_follows_its_last_event_id(
    home: Path,
) -> None:
    daemon = Daemon(home).start()
    try:
        with httpx.Client(base_url=daemon.url, timeout=60) as http:
            sid = new_session(http)
            for batch in range(20):  # 20,000 events, about 10 MB
                events = [user(f"{batch}-{n} {LONG}") for n in range(1000)]
                assert http.post(f"/v1/sessions/{sid}/events", json=events).status_code == 201
            http.get("/v1/search", params={"q": "context"})  # the index has read it all
            size = transcript_size(home, sid)
            near_end = read_by_a_new_tail(daemon, sid, 19_997, [19_998, 19_999, 20_000], list)
            at_end = read_by_a_new_tail(
                daemon,
                sid,
                20_000,
                [20_001],
                lambda: http.post(f"/v1/sessions/{sid}/events", json=user("one more")),
            )
        assert size > 10_000_000
        for read in (near_end, at_end):
            assert read < 256 * 1024, f"{read:,} bytes read of a {size:,} byte transcript"
    finally:
        daemon.kill()


def test_a_tail_left_behind_the_window_gets_everything_from_the_file(home: Path) -> None:
    daemon = Daemon(home, env={"ASTER_SUBSCRIBER_QUEUE": "1"}).start()  # a window of one read
    try:
        with httpx.Client(base_url=daemon.url, timeout=60) as http:
            sid = new_session(http)
            stream = f"/v1/sessions/{sid}/events/stream"
            streams = Streams(daemon.port, [(stream, {}), (stream, {"x-stalled": "1"})])
            try:
                streams.wait(lambda: open_streams(daemon.url) == 2)
                for batch in range(80):  # 8 MB while the second one reads nothing
                    events = [user(f"{batch}-{n} {LONG * 2}") for n in range(100)]
                    assert http.post(f"/v1/sessions/{sid}/events", json=events).status_code == 201
                streams.wait(lambda: len(streams.events(0)) == 8000, timeout=60)
                http.get("/v1/search", params={"q": "context"})  # the index has read it all
                before = bytes_read(daemon)
                streams.resume(1)
                streams.wait(lambda: len(streams.events(1)) >= 8000, timeout=60)
                read_again = bytes_read(daemon) - before
                for n in (0, 1):
                    assert [int(e["id"]) for e in streams.events(n)] == list(range(1, 8001))
            finally:
                streams.close()
        size = transcript_size(home, sid)
        # what memory kept was a small part of it: the slow tail read most of it again
        assert read_again > size // 2, f"{read_again:,} bytes read again of {size:,}"
    finally:
        daemon.kill()
