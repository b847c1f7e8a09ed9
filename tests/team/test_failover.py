"""A JetStream node killed with SIGKILL mid-run, the stream's leader itself, loses no
acknowledged line: the owner goes on appending (its appends never wait on the cluster),
publishing is retried with the same message ids while a new leader is elected, and the
other machine's copy ends exactly as the owner's transcript, without a gap or a double."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable

import httpx

from ..conftest import Daemon, wait_until
from .cluster import Cluster
from .test_sessions import append, create, events


def stream_leader(cluster: Cluster, stream_name: str = "ASTER_SESSIONS") -> str | None:
    """The name of the node that leads one of the team's streams (the sessions' stream,
    or ``KV_ASTER_MEMORY``, memory's bucket), as a live node reports it."""
    for node in cluster.nodes:
        if node.process is None:
            continue
        url = f"http://127.0.0.1:{node.monitor}/jsz?streams=true"
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                found = json.loads(r.read())
        except OSError:
            continue
        for account in found.get("account_details") or []:
            for stream in account.get("stream_detail") or []:
                if stream["name"] == stream_name and stream.get("cluster", {}).get("leader"):
                    return str(stream["cluster"]["leader"])
    return None


def test_the_stream_leader_killed_mid_run_loses_no_line(
    machines: Callable[..., Daemon], cluster: Cluster
) -> None:
    a, b = machines("laptop"), machines("workstation")
    sid = create(a)
    append(a, sid, "line 0").raise_for_status()
    wait_until(lambda: len(events(b, sid)) == 1, timeout=5)
    leader = wait_until(lambda: stream_leader(cluster), timeout=10)
    (node,) = [n for n in cluster.nodes if n.name == leader]
    for n in range(1, 60):
        if n == 20:
            cluster.kill(node)  # SIGKILL: what it had not synced is gone with it
        assert append(a, sid, f"line {n}").status_code == 201
    cluster.start_node(node, wait=False)
    want = [(e["seq"], e["content"]) for e in events(a, sid)]
    assert len(want) == 60
    wait_until(lambda: [(e["seq"], e["content"]) for e in events(b, sid)] == want, timeout=60)


def test_a_machine_cut_off_keeps_appending_and_its_lines_land_on_reconnect(
    machines: Callable[..., Daemon], cluster: Cluster
) -> None:
    a, b = machines("laptop"), machines("workstation")
    sid = create(a)
    append(a, sid, "before the outage").raise_for_status()
    wait_until(lambda: len(events(b, sid)) == 1, timeout=5)
    for node in cluster.nodes:
        cluster.kill(node)
    for n in range(5):  # the cluster gone: appends are still answered, and durable here
        assert append(a, sid, f"offline {n}").status_code == 201
    offline = httpx.get(f"{a.url}/v1/team").json()
    assert offline["connected"] is False and offline["pending"]["out"] >= 1
    cluster.start()
    want = [(e["seq"], e["content"]) for e in events(a, sid)]
    assert len(want) == 6
    wait_until(lambda: [(e["seq"], e["content"]) for e in events(b, sid)] == want, timeout=60)
    wait_until(lambda: httpx.get(f"{a.url}/v1/team").json()["pending"]["out"] == 0, timeout=10)
