"""Memory across a team: a shared project's blocks and ``ASTER.md`` are one version on
every machine, with the same ETags; of two machines writing one version exactly one wins
and the other answers 412 with nothing written; a machine cut off from the cluster keeps
writing, and on reconnect what it wrote lands, or, when the team's version moved, becomes
a visible conflict with both versions kept; hand edits go the same way; global memory
stays on its machine."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import orjson
import pytest

from ..conftest import Daemon, make_client, wait_until
from ..streams import Streams
from .cluster import Cluster
from .test_bad_messages import publish_raw
from .test_failover import stream_leader
from .test_projects import repo
from .test_sessions import cli

SHARED = "/srv/shared"


def write(
    daemon: Daemon, name: str, content: str, root: str | None = SHARED, etag: str | None = None
) -> httpx.Response:
    params = {"repo_root": root} if root is not None else {}
    headers = {"If-Match": etag} if etag is not None else {}
    return httpx.put(
        f"{daemon.url}/v1/memory/blocks/{name}",
        params=params,
        json={"content": content},
        headers=headers,
        timeout=30,
    )


def block(daemon: Daemon, name: str, root: str | None = SHARED) -> tuple[str, str] | None:
    """A block's body and ETag on ``daemon``, or None."""
    params = {"track": "false", **({"repo_root": root} if root is not None else {})}
    r = httpx.get(f"{daemon.url}/v1/memory/blocks/{name}", params=params)
    return (str(r.json()["body"]).strip(), r.headers["ETag"]) if r.status_code == 200 else None


def block_file(daemon: Daemon, name: str) -> Path:
    """Where a shared block of ``SHARED`` lives in ``daemon``'s home."""
    found = httpx.get(
        f"{daemon.url}/v1/memory/blocks/{name}", params={"repo_root": SHARED, "track": "false"}
    ).json()
    return daemon.home / "memory" / "projects" / found["scope"].split(":", 1)[1] / f"{name}.md"


def body_of(daemon: Daemon, name: str, root: str | None = SHARED) -> str | None:
    found = block(daemon, name, root)
    return None if found is None else found[0]


def journal(daemon: Daemon, op: str) -> list[dict[str, Any]]:
    r = httpx.get(f"{daemon.url}/v1/journal", params={"op": op, "limit": 1000})
    return list(r.json()["items"])


def team(daemon: Daemon) -> dict[str, Any]:
    return dict(httpx.get(f"{daemon.url}/v1/team").json())


def _from(feed: Streams, machine: str) -> list[dict[str, Any]]:
    return [
        e["data"]
        for e in feed.events(0)
        if e["event"] == "journal" and (e["data"].get("detail") or {}).get("machine") == machine
    ]


def test_a_block_and_core_memory_written_on_one_machine_are_the_same_everywhere(
    machines: Callable[..., Daemon], tmp_path: Path
) -> None:
    on_a = repo(tmp_path / "a" / "proj", "git@github.com:team/proj.git")
    on_b = repo(tmp_path / "b" / "elsewhere", "https://github.com/team/proj")
    a, b = machines("laptop", projects=None), machines("workstation", projects=None)
    # b's change feed for its own path of the project, open before the write
    feed = Streams(b.port, [(f"/v1/events?{urlencode({'repo_root': str(on_b)})}", {})])
    feed.wait(lambda: feed.status(0) == 200)
    assert write(a, "deploys", "Deploy with `make ship`.", str(on_a)).status_code == 200
    r = httpx.put(
        f"{a.url}/v1/memory/core",
        params={"repo_root": str(on_a)},
        content="# Project\n- tests need docker\n",
        headers={"Content-Type": "text/markdown"},
    )
    assert r.status_code == 200, r.text
    # the same project at another path on another machine: the same block, the same ETag
    wait_until(lambda: block(b, "deploys", str(on_b)) == block(a, "deploys", str(on_a)))
    wait_until(
        lambda: (
            httpx.get(f"{b.url}/v1/memory/core", params={"repo_root": str(on_b)}).headers.get(
                "ETag"
            )
            == r.headers["ETag"]
        )
    )
    core = httpx.get(f"{b.url}/v1/memory/core", params={"repo_root": str(on_b)})
    assert "tests need docker" in core.text
    applied = [e for e in journal(b, "memory.write") if e["actor"] == "team"]
    assert {e["name"] for e in applied} == {"deploys", "ASTER.md"}
    assert all(e["detail"]["machine"] == "laptop" for e in applied)
    try:  # the feed carried them, naming the machine they came from
        feed.wait(lambda: len(_from(feed, "laptop")) >= 2, 5)
    finally:
        feed.close()
    assert {e["name"] for e in _from(feed, "laptop")} == {"deploys", "ASTER.md"}
    # archived, restored and forgotten the same way; a machine started later catches up
    archived = httpx.post(
        f"{a.url}/v1/memory/blocks/deploys/archive", params={"repo_root": str(on_a)}
    )
    assert archived.status_code == 200, archived.text
    wait_until(lambda: block(b, "deploys", str(on_b)) is None)
    c = machines("container", projects=None)  # joins later: catches up from the bucket
    on_c = repo(tmp_path / "c" / "proj", "git@github.com:team/proj")
    restored = httpx.post(
        f"{b.url}/v1/memory/blocks/deploys/restore", params={"repo_root": str(on_b)}
    )
    assert restored.status_code == 200, restored.text
    wait_until(lambda: block(a, "deploys", str(on_a)) == block(b, "deploys", str(on_b)))
    assert (
        httpx.delete(
            f"{a.url}/v1/memory/blocks/deploys", params={"repo_root": str(on_a)}
        ).status_code
        == 204
    )
    wait_until(lambda: block(b, "deploys", str(on_b)) is None)
    assert journal(b, "memory.delete")[-1]["actor"] == "team"
    # the machine that joined later comes to hold what is left: core memory, and no block
    # (the removal is the last change it takes in, perhaps after the core)
    wait_until(
        lambda: (
            "tests need docker"
            in httpx.get(f"{c.url}/v1/memory/core", params={"repo_root": str(on_c)}).text
        )
    )
    wait_until(lambda: block(c, "deploys", str(on_c)) is None)


def race(daemons: list[Daemon], etag: str, round_: int) -> dict[str, int]:
    """Each machine writes the block at ``etag`` at the same moment; its answer by name."""
    answers: dict[str, int] = {}
    start = threading.Barrier(len(daemons))

    def put(daemon: Daemon) -> None:
        label = daemon.env["ASTER_MACHINE"]
        start.wait()
        answers[label] = write(daemon, "style", f"{label} {round_}", etag=etag).status_code

    threads = [threading.Thread(target=put, args=(d,)) for d in daemons]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def test_two_machines_writing_one_version_give_one_200_and_one_412(
    machines: Callable[..., Daemon],
) -> None:
    a, b = machines("laptop"), machines("workstation")
    assert write(a, "style", "version 0").status_code == 200
    wait_until(lambda: body_of(b, "style") == "version 0")
    for round_ in range(1, 6):
        found_a, found_b = block(a, "style"), block(b, "style")
        assert found_a is not None and found_a == found_b  # one version, one ETag
        etag = found_a[1]
        answers = race([a, b], etag, round_)
        assert sorted(answers.values()) == [200, 412], answers
        winner = next(label for label, status in answers.items() if status == 200)
        # the loser wrote nothing: both machines hold the winner's version
        want = f"{winner} {round_}"
        wait_until(lambda w=want: body_of(a, "style") == body_of(b, "style") == w)
    refused = write(a, "style", "stale", etag='"not-the-etag"')
    assert refused.status_code == 412
    assert refused.headers["content-type"].startswith("application/problem+json")


@pytest.mark.slow
def test_a_machine_cut_off_keeps_writing_and_on_reconnect_its_writes_land_or_conflict(
    machines: Callable[..., Daemon], cluster: Cluster
) -> None:
    n1 = cluster.nodes[0]
    a = machines("laptop", ASTER_TEAM_URL=n1.url)  # reaches the cluster through n1 only
    b = machines("workstation", ASTER_TEAM_URL=",".join(n.url for n in cluster.nodes[1:]))
    assert write(a, "lease", "the lease ends in May").status_code == 200
    wait_until(lambda: body_of(b, "lease") == "the lease ends in May")
    cluster.kill(n1)  # a is cut off; b and two nodes go on
    wait_until(lambda: team(a)["connected"] is False)
    assert write(b, "lease", "the lease ends in June (b)").status_code == 200
    # in the team once a new leader is elected (it waits here meanwhile, as a's will)
    wait_until(lambda: team(b)["memory"]["pending"] == 0, timeout=60)
    assert write(a, "lease", "the lease ends in July (a)").status_code == 200  # pending
    assert write(a, "offline-note", "written while cut off").status_code == 200
    assert team(a)["memory"]["pending"] == 2
    cluster.start_node(n1)
    # what only a changed lands on b; the block both changed is a conflict on a
    wait_until(lambda: body_of(b, "offline-note") == "written while cut off", timeout=60)
    wait_until(lambda: body_of(a, "lease") == "the lease ends in June (b)", timeout=60)
    assert body_of(b, "lease") == "the lease ends in June (b)"
    conflicts = journal(a, "memory.conflict")
    assert [(e["name"], e["detail"]["machine"]) for e in conflicts] == [("lease", "workstation")]
    assert "the lease ends in July (a)" in conflicts[0]["before"]["content"]  # both kept
    review = httpx.get(f"{a.url}/v1/memory/review").json()["items"]
    assert [(i["origin"], i["item"]["title"]) for i in review] == [("team", "lease")]
    assert "July" in review[0]["item"]["content"]
    wait_until(lambda: team(a)["memory"]["pending"] == 0)
    assert team(a)["memory"]["conflicts"] == 1
    assert "0 files waiting to be set, 1 conflicts to review" in cli(
        "team", "status", "--url", a.url
    )
    # keeping this machine's version: it goes to the team like any write
    kept = httpx.post(f"{a.url}/v1/memory/review/{review[0]['id']}", json={"decision": "accept"})
    assert kept.status_code == 200, kept.text
    wait_until(lambda: body_of(b, "lease") == "the lease ends in July (a)")
    assert httpx.get(f"{a.url}/v1/memory/review").json()["items"] == []


def test_a_hand_edit_is_shared_and_global_memory_stays_home(
    machines: Callable[..., Daemon],
) -> None:
    a, b = machines("laptop"), machines("workstation")
    assert write(a, "editor", "use vim").status_code == 200
    assert write(a, "private", "my own", root=None).status_code == 200  # global memory
    wait_until(lambda: body_of(b, "editor") == "use vim")
    path = block_file(a, "editor")
    path.write_text(path.read_text().replace("use vim", "use helix"))  # by hand
    wait_until(lambda: body_of(b, "editor") == "use helix")
    assert block(a, "editor") == block(b, "editor")
    assert body_of(b, "private", root=None) is None
    assert not any(e["name"] == "private" for e in journal(b, "memory.write"))


@pytest.mark.slow
def test_the_bucket_leader_killed_mid_run_loses_no_memory_write(
    machines: Callable[..., Daemon], cluster: Cluster
) -> None:
    a, b = machines("laptop"), machines("workstation")
    assert write(a, "fact-0", "fact number 0").status_code == 200
    leader = wait_until(lambda: stream_leader(cluster, "KV_ASTER_MEMORY"), timeout=10)
    (node,) = [n for n in cluster.nodes if n.name == leader]
    for n in range(1, 16):
        if n == 5:
            cluster.kill(node)  # SIGKILL the bucket's leader while writes go on
        # answered at once or after a short wait: set in the team, or pending here
        assert write(a, f"fact-{n}", f"fact number {n}").status_code == 200
    cluster.start_node(node, wait=False)
    for n in range(16):
        wait_until(lambda n=n: block(b, f"fact-{n}") == block(a, f"fact-{n}"), timeout=60)
    wait_until(lambda: team(a)["memory"]["pending"] == 0, timeout=60)


def test_global_memory_is_shared_only_between_machines_whose_settings_share_it(
    machines: Callable[..., Daemon],
) -> None:
    a = machines("laptop", ASTER_TEAM_GLOBAL_MEMORY="true")
    b = machines("workstation", ASTER_TEAM_GLOBAL_MEMORY="true")
    c = machines("container")  # keeps its global memory, and takes in no one's
    assert write(a, "whoami", "I prefer short answers", root=None).status_code == 200
    assert write(c, "mine", "the container's own", root=None).status_code == 200
    wait_until(lambda: block(b, "whoami", root=None) == block(a, "whoami", root=None))
    assert write(a, "after", "a project block, after the global one").status_code == 200
    wait_until(lambda: body_of(c, "after") is not None)  # c has settled what a wrote since
    assert body_of(c, "whoami", root=None) is None
    assert body_of(a, "mine", root=None) is None and body_of(b, "mine", root=None) is None


def test_values_not_of_the_contract_and_secrets_are_never_taken_in(
    machines: Callable[..., Daemon], cluster: Cluster
) -> None:
    from aster_persist.team.bucket import PREFIX, key_for

    a, b = machines("laptop"), machines("workstation")
    assert write(a, "kept", "stays as it is").status_code == 200
    wait_until(lambda: body_of(b, "kept") == "stays as it is")
    held = block(b, "kept")
    project = "path:" + SHARED
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    leaked = {"project_key": project, "name": "leak", "machine": "ghost", "state": "live"}
    noise = [
        (PREFIX + key_for(project, "kept"), b"not json", {}),  # over a block both hold
        (PREFIX + key_for(project, "other"), orjson.dumps({**leaked, "text": "x"}), {}),
        (PREFIX + key_for(project, "leak"), orjson.dumps({**leaked, "text": secret}), {}),
    ]
    asyncio.run(publish_raw(cluster, noise))
    assert write(a, "after", "written after the noise").status_code == 200
    wait_until(lambda: body_of(b, "after") == "written after the noise")
    problems = wait_until(lambda: len(p := team(b)["memory"]["problems"]) == 2 and p)
    assert [p.split(":", 2)[0] for p in problems] == ["kept of project", "leak of project"]
    assert "not ours" in problems[0] and "secret" in problems[1]
    assert block(b, "kept") == held  # the foreign value left alone
    # one that names another key than its own is not taken in either
    assert body_of(b, "leak") is None and body_of(b, "other") is None
    # the next change here writes over what was not of the contract
    assert write(b, "kept", "changed after the noise").status_code == 200
    wait_until(lambda: body_of(a, "kept") == "changed after the noise")
    assert [p.split(" ")[0] for p in team(b)["memory"]["problems"]] == ["leak"]


def test_a_write_that_fails_here_after_the_team_took_it_is_undone_in_the_team(
    machines: Callable[..., Daemon],
    cluster: Cluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from aster_persist.storage import fs

    b = machines("workstation")
    settings = {"team_url": cluster.urls.split(","), "machine": "laptop"}
    with make_client(tmp_path / "home-laptop", team_projects=[SHARED], **settings) as a:
        url = f"/v1/memory/blocks/lease?repo_root={SHARED}"
        assert a.put(url, json={"content": "version 1"}).status_code == 200
        wait_until(lambda: body_of(b, "lease") == "version 1")
        wait_until(lambda: a.get("/v1/team").json()["memory"]["pending"] == 0)
        real = fs.write_temp

        def full(path: Path | str, data: bytes, **kw: Any) -> str:
            if str(path).endswith("lease.md"):  # the disk fills as the block is written
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(path, data, **kw)

        monkeypatch.setattr(fs, "write_temp", full)
        assert a.put(url, json={"content": "version 2"}).status_code == 507
        monkeypatch.setattr(fs, "write_temp", real)
        # the team was set back to what is here: b does not keep the write that failed
        # (it may have seen it for the moment the team held it)
        assert a.get(f"{url}&track=false").json()["body"].strip() == "version 1"
        wait_until(lambda: body_of(b, "lease") == "version 1")
        assert a.get("/v1/team").json()["memory"]["pending"] == 0
        # and the next write is not refused for it
        assert a.put(url, json={"content": "version 3"}).status_code == 200
        wait_until(lambda: body_of(b, "lease") == "version 3")


def test_a_machine_stopped_catches_up_and_sends_what_was_edited_by_hand_meanwhile(
    machines: Callable[..., Daemon],
) -> None:
    a, b = machines("laptop"), machines("workstation")
    assert write(a, "runbook", "restart the queue first").status_code == 200
    wait_until(lambda: body_of(b, "runbook") == "restart the queue first")
    path = block_file(b, "runbook")
    b.stop()
    path.write_text(path.read_text().replace("the queue", "the broker"))  # while it is down
    assert write(a, "while-away", "written while b was stopped").status_code == 200
    b.start()
    wait_until(lambda: body_of(b, "while-away") == "written while b was stopped")
    wait_until(lambda: body_of(a, "runbook") == "restart the broker first")
    assert block(a, "runbook") == block(b, "runbook")
    assert journal(a, "memory.conflict") == journal(b, "memory.conflict") == []


def test_a_secret_pasted_by_hand_stays_on_its_machine(machines: Callable[..., Daemon]) -> None:
    a, b = machines("laptop"), machines("workstation")
    assert write(a, "deploy-key", "the key is in the vault").status_code == 200
    wait_until(lambda: body_of(b, "deploy-key") == "the key is in the vault")
    path = block_file(a, "deploy-key")
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    original = path.read_text()
    path.write_text(original.replace("in the vault", f"{secret}"))  # pasted by hand
    problems = wait_until(lambda: team(a)["memory"]["problems"])
    assert "holds a secret" in problems[0] and team(a)["memory"]["pending"] == 0
    assert secret in path.read_text()  # kept here, whole
    assert body_of(b, "deploy-key") == "the key is in the vault"  # never sent
    path.write_text(original.replace("in the vault", "in the team vault"))  # taken out again
    wait_until(lambda: body_of(b, "deploy-key") == "the key is in the team vault")
    assert team(a)["memory"]["problems"] == []
