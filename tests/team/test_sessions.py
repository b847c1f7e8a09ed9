"""Sessions across a team: an append on one machine is listed, searchable and tailable
on the others (in about 10 ms: bench/team.py measures it), as a read-only copy under the same id and seqs; an append to
another machine's session is refused naming its owner; only the shared projects leave,
their secrets redacted; a machine stopped while others write catches up exactly when it
starts again."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from ..conftest import Daemon, wait_until
from ..streams import Streams
from .cluster import Cluster

SHARED = "/srv/shared"


def create(daemon: Daemon, repo_root: str = SHARED) -> str:
    r = httpx.post(f"{daemon.url}/v1/sessions", json={"repo_root": repo_root})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def append(daemon: Daemon, sid: str, *texts: str) -> httpx.Response:
    events = [{"type": "message", "role": "user", "content": t} for t in texts]
    return httpx.post(f"{daemon.url}/v1/sessions/{sid}/events", json=events)


def events(daemon: Daemon, sid: str) -> list[dict[str, Any]]:
    r = httpx.get(f"{daemon.url}/v1/sessions/{sid}/events", params={"limit": 1000})
    return list(r.json()["events"]) if r.status_code == 200 else []


def summary(daemon: Daemon, sid: str) -> dict[str, Any] | None:
    r = httpx.get(f"{daemon.url}/v1/sessions/{sid}")
    return dict(r.json()) if r.status_code == 200 else None


def test_an_append_reaches_the_other_machines_as_a_read_only_copy(
    machines: Callable[..., Daemon],
) -> None:
    a, b, c = machines("laptop"), machines("workstation"), machines("container")
    sid = create(a)
    feed = Streams(b.port, [("/v1/events", {})])  # b's change feed, open before the append
    feed.wait(lambda: feed.status(0) == 200)
    assert append(a, sid, "The flaky deploy test needs a longer timeout.").status_code == 201
    # the same id, seqs and text on both other machines (how soon: `make bench --only team`,
    # about 10 ms; never a timed assertion here)
    mine = [(e["seq"], e["content"]) for e in events(a, sid)]
    for other in (b, c):
        wait_until(lambda o=other: [(e["seq"], e["content"]) for e in events(o, sid)] == mine)
        copy = summary(other, sid)
        assert copy is not None and copy["machine"] == "laptop" and copy["read_only"] is True
    listed = httpx.get(f"{b.url}/v1/sessions", params={"repo_root": SHARED}).json()["items"]
    assert [s["id"] for s in listed] == [sid]
    hits = httpx.get(f"{c.url}/v1/search", params={"q": "flaky deploy timeout"}).json()["items"]
    assert [(h["session_id"], h["seq"]) for h in hits] == [(sid, 1)]
    # b's feed told of the copy's append, naming the machine it came from
    try:
        feed.wait(lambda: any(e["event"] == "session.appended" for e in feed.events(0)), 5)
    finally:
        feed.close()
    (notice,) = [e["data"] for e in feed.events(0) if e["event"] == "session.appended"]
    assert notice["session_id"] == sid and notice["machine"] == "laptop"
    # b's tail of the copy gets a later append as it comes
    tail = Streams(b.port, [(f"/v1/sessions/{sid}/events/stream", {})])
    try:
        tail.wait(lambda: tail.status(0) == 200)
        append(a, sid, "And the retry count to three.").raise_for_status()
        tail.wait(lambda: "three" in str(tail.events(0)), 2)
    finally:
        tail.close()
    # the owner's own summary says it is its own
    own = summary(a, sid)
    assert own is not None and own["machine"] is None and own["read_only"] is False


def test_a_copy_refuses_appends_private_projects_stay_home_and_secrets_stay_with_the_owner(
    machines: Callable[..., Daemon],
) -> None:
    a, b = machines("laptop"), machines("workstation")
    sid = create(a)
    private = create(a, "/srv/private")
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    append(a, private, "only here").raise_for_status()
    append(a, sid, f"the token is {secret} for the deploy").raise_for_status()
    copied = wait_until(lambda: events(b, sid), timeout=5)
    # the secret redacted in what was published; the owner keeps it exact
    assert secret not in str(copied) and "[redacted: " in copied[0]["content"]
    assert events(a, sid)[0]["content"] == f"the token is {secret} for the deploy"
    # a session outside the shared projects stays on its machine
    assert summary(b, private) is None
    # an append to the copy is refused, naming the owner, and writes nothing
    refused = append(b, sid, "from the wrong machine")
    assert refused.status_code == 409, refused.text
    problem = refused.json()
    assert problem["code"] == "session_owned_elsewhere" and "laptop" in problem["detail"]
    assert len(events(b, sid)) == 1
    append(a, sid, "second").raise_for_status()  # the owner goes on
    wait_until(lambda: [e["content"] for e in events(b, sid)][1:] == ["second"], timeout=5)


def test_a_machine_stopped_while_others_write_catches_up_exactly(
    machines: Callable[..., Daemon], cluster: Cluster, home: Path
) -> None:
    a = machines("laptop")
    with_token = ",".join(  # a token in the address is passed on, never shown
        url.replace("nats://", "nats://s3cret-token@") for url in cluster.urls.split(",")
    )
    b = machines("workstation", ASTER_TEAM_URL=with_token)
    sid = create(a)
    append(a, sid, "before").raise_for_status()
    wait_until(lambda: len(events(b, sid)) == 1, timeout=5)
    b.stop()
    for n in range(30):
        append(a, sid, f"while away {n}").raise_for_status()
    later = create(a)
    append(a, later, "a new session meanwhile").raise_for_status()
    b.start()
    want = [(e["seq"], e["content"]) for e in events(a, sid)]
    wait_until(lambda: [(e["seq"], e["content"]) for e in events(b, sid)] == want, timeout=10)
    wait_until(lambda: len(events(b, later)) == 1, timeout=10)
    status = httpx.get(f"{b.url}/v1/team").json()
    assert status["connected"] and status["machine"] == "workstation"
    assert status["servers"] == cluster.urls.split(",")  # without the token
    assert {m["machine"] for m in status["machines"]} == {"laptop"}
    # and on the command line
    shown = cli("team", "status", "--url", b.url)
    assert "workstation: connected" in shown and "laptop" in shown
    alone = Daemon(home).start()
    try:
        assert "alone" in cli("team", "status", "--url", alone.url)
        status = httpx.get(f"{alone.url}/v1/team").json()
        assert status["enabled"] is False and status["connected"] is False
    finally:
        alone.kill()


def cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "aster_persist", *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
