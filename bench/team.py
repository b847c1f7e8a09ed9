"""A team on a real three-node JetStream cluster on loopback (``--only team``): the
replication lag from an acknowledged append on one machine to its notice on another
machine's change feed, the local append throughput of a machine in a team against one
alone (rounds interleaved, an fsync probe beside), and how fast a machine back from
being stopped catches up (events copied a second, from its start).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import orjson
from tests.streams import Streams
from tests.team.cluster import Cluster

from bench.harness import RawClient, add, daemon, fsync_probe

EVENT = orjson.dumps({"type": "message", "role": "user", "content": "a turn for the team"})
LAG_N = 300
ROUNDS, PER_ROUND = 8, 200  # interleaved, each pair in turn order: the machine is noisy
CATCH_UP = 200  # appends of 10 events while a machine is stopped


def _session(client: RawClient) -> str:
    _, made = client.request("POST", "/v1/sessions", orjson.dumps({"repo_root": "/srv/team"}))
    return str(orjson.loads(made)["id"])


def _appends(client: RawClient, path: str, n: int, body: bytes = EVENT) -> float:
    started = time.perf_counter()
    for _ in range(n):
        client.request("POST", path, body)
    return n / (time.perf_counter() - started)


def _copied(client: RawClient, sid: str) -> int:
    try:
        _, found = client.request("GET", f"/v1/sessions/{sid}")
    except RuntimeError:  # not there yet
        return 0
    return int(orjson.loads(found)["last_seq"])


def bench_team(work: Path) -> None:
    cluster = Cluster(work / "team-nats")
    cluster.start()
    team = {"ASTER_TEAM_URL": cluster.urls, "ASTER_TEAM_PROJECTS": "/srv/team"}
    a = daemon(work / "team-a", ASTER_MACHINE="a", **team)
    b = daemon(work / "team-b", ASTER_MACHINE="b", **team)
    alone = daemon(work / "team-alone", ASTER_MACHINE="alone")
    try:
        writer, reader = RawClient(a.port), RawClient(b.port)
        sid = _session(writer)
        path = f"/v1/sessions/{sid}/events"
        feed = Streams(b.port, [("/v1/events", {})])
        feed.wait(lambda: feed.status(0) == 200)
        lags = []
        for seq in range(1, LAG_N + 1):
            writer.request("POST", path, EVENT)
            acked = time.perf_counter()
            while not any(last >= seq for _, last in feed.notices(0, sid)):
                time.sleep(0.0002)
            lags.append((time.perf_counter() - acked) * 1000)
        feed.close()
        lags.sort()
        p99 = lags[int(len(lags) * 0.99) - 1]
        add(
            f"team: an acknowledged append on one machine to its notice on another's feed ({LAG_N}, one at a time)",
            f"p50 {statistics.median(lags):.1f} ms, p99 {p99:.1f} ms",
            "",
            "target p50 < 100 ms",
        )

        # local throughput, in a team and alone, rounds interleaved
        solo = RawClient(alone.port)
        team_path, alone_path = path, f"/v1/sessions/{_session(solo)}/events"
        on, off = [], []
        for n in range(ROUNDS):
            if n % 2:
                off.append(_appends(solo, alone_path, PER_ROUND))
                on.append(_appends(writer, team_path, PER_ROUND))
            else:
                on.append(_appends(writer, team_path, PER_ROUND))
                off.append(_appends(solo, alone_path, PER_ROUND))
        ratio = statistics.median(on) / statistics.median(off)
        add(
            f"team: local appends a second, one at a time (fsync {fsync_probe(work):.2f} ms)",
            f"{statistics.median(on):.0f}/s in a team ({', '.join(f'{v:.0f}' for v in on)})",
            f"{statistics.median(off):.0f}/s alone ({', '.join(f'{v:.0f}' for v in off)})",
            f"{ratio:.2f}x (target >= 0.8x)",
        )

        # catch-up: b stopped while a writes, then started again
        total = _copied(writer, sid)
        while _copied(reader, sid) < total:
            time.sleep(0.05)
        b.stop()
        batch = orjson.dumps([orjson.loads(EVENT)] * 10)
        for _ in range(CATCH_UP):
            writer.request("POST", path, batch)
        total = _copied(writer, sid)
        begun = time.perf_counter()
        b = daemon(work / "team-b", ASTER_MACHINE="b", **team)
        started = time.perf_counter()  # ready: its catalog caught up, the team joining
        reader = RawClient(b.port)
        behind = CATCH_UP * 10
        while _copied(reader, sid) < total:
            time.sleep(0.01)
        took = time.perf_counter() - started
        add(
            f"team: a machine back from being stopped catches up ({behind} events behind)",
            f"{behind / took:.0f} events/s ({took:.2f} s once ready, "
            f"{started - begun:.2f} s to be ready)",
            "",
            "in order, each once",
        )
    finally:
        for server in (a, b, alone):
            server.stop()
        cluster.close()
