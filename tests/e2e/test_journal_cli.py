"""`aster-persist journal [--follow]`: the feed in a terminal, resuming after a restart."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from ..conftest import Daemon, free_port


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "aster_persist", *args]


def lines_of(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    out: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return out


def following(home: Path, *args: str) -> subprocess.Popen[str]:
    """`journal --follow` running, its lines on a pipe."""
    return subprocess.Popen(
        cli("journal", "--follow", *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "ASTER_HOME": str(home)},
    )


def remember(url: str, name: str) -> None:
    r = httpx.post(f"{url}/v1/memory/blocks", json={"name": name, "content": f"{name} facts"})
    assert r.status_code == 201, r.text


def test_journal_prints_and_follows_across_a_restart(home: Path) -> None:
    daemon = Daemon(home).start()
    try:
        remember(daemon.url, "before")
        done = subprocess.run(
            cli("journal", "--url", daemon.url), capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 0, done.stderr
        assert "memory.write" in done.stdout and "before" in done.stdout
        newest = httpx.get(f"{daemon.url}/v1/journal").json()["items"][-1]["id"]
        follower = following(home, "--json", "--after", newest, "--url", daemon.url)
        lines = lines_of(follower)
        try:
            remember(daemon.url, "during")  # before or after it connects: either way, once
            first = json.loads(lines.get(timeout=10))
            assert (first["op"], first["name"]) == ("memory.write", "during")
            assert daemon.stop() == 0
            restarted = Daemon(home, port=daemon.port)  # same address, new process
            restarted.start()
            daemon = restarted
            remember(daemon.url, "after-restart")
            second = json.loads(lines.get(timeout=15))
            assert (second["op"], second["name"]) == ("memory.write", "after-restart")
            assert lines.empty()  # nothing repeated
        finally:
            follower.kill()
            follower.wait()
            assert follower.stdout is not None
            follower.stdout.close()
    finally:
        daemon.kill()


def test_journal_says_when_the_daemon_is_not_running() -> None:
    done = subprocess.run(
        cli("journal", "--url", f"http://127.0.0.1:{free_port()}"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 3  # the documented code for "not running"
    assert "not running" in done.stderr


def run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASTER_HOME": str(home)}
    return subprocess.run(cli(*args), capture_output=True, text=True, timeout=30, env=env)


@pytest.mark.slow
def test_journal_filters_and_revert_with_a_dry_run(home: Path) -> None:
    daemon = Daemon(home).start()
    try:
        for name in ("one", "two", "three"):
            remember(daemon.url, name)
        sid = httpx.post(f"{daemon.url}/v1/sessions", json={"repo_root": "/srv/j"}).json()["id"]
        httpx.patch(f"{daemon.url}/v1/sessions/{sid}", json={"title": "Named"})
        url = ("--url", daemon.url)

        newest = run("journal", "--limit", "2", "--json", *url, home=home).stdout.splitlines()
        assert [json.loads(x)["op"] for x in newest] == ["session.created", "session.renamed"]
        mine = run("journal", "--session", sid, "--json", *url, home=home).stdout.splitlines()
        assert {json.loads(x)["session"] for x in mine} == {sid} and len(mine) == 2
        memory = run("journal", "--op", "memory", "--json", *url, home=home).stdout.splitlines()
        assert [json.loads(x)["name"] for x in memory] == ["one", "two", "three"]
        assert run("journal", "--since", "2999-01-01", *url, home=home).stdout == ""
        assert "one" in run("journal", "--since", "2000-01-01", *url, home=home).stdout
        bad = run("journal", "--since", "yesterday", *url, home=home)
        assert bad.returncode == 2 and "not a date" in bad.stderr

        entries = httpx.get(f"{daemon.url}/v1/journal").json()["items"]
        write = next(e for e in entries if e["name"] == "two")
        plan = run("journal", "revert", write["id"], "--dry-run", *url, home=home)
        assert plan.returncode == 0 and "would remove global/two" in plan.stdout
        assert httpx.get(f"{daemon.url}/v1/memory/blocks/two").status_code == 200  # unchanged
        done = run("journal", "revert", write["id"], *url, home=home)
        assert done.returncode == 0 and f"reverted {write['id']}" in done.stdout
        assert httpx.get(f"{daemon.url}/v1/memory/blocks/two").status_code == 404
        undo = httpx.get(f"{daemon.url}/v1/journal").json()["items"][-1]
        plan = run("journal", "revert", undo["id"], "--dry-run", "--json", *url, home=home)
        assert json.loads(plan.stdout)["content"].endswith("two facts\n")

        rename = next(e for e in entries if e["op"] == "session.renamed")
        said = run("journal", "revert", rename["id"], "--dry-run", *url, home=home)
        assert said.returncode == 1  # as the revert itself would be refused
        assert "cannot be reverted: the session had no title before" in said.stdout
        deleted = httpx.delete(f"{daemon.url}/v1/sessions/{sid}")
        assert deleted.status_code == 204
        trashed = httpx.get(f"{daemon.url}/v1/journal", params={"op": "session.deleted"})
        entry = trashed.json()["items"][-1]["id"]
        back = run("journal", "revert", entry, *url, home=home)
        assert back.returncode == 0 and back.stdout.strip() == f"reverted {entry}: session {sid}"
        missing = run("journal", "revert", "01J0000000000000000000ABCD", *url, home=home)
        assert missing.returncode == 4 and "no journal entry" in missing.stderr
        for bad in ("nope", "0" * 26 + "0", "8" + "0" * 25):  # no ULID, too long, overflows
            assert run("journal", "revert", bad, *url, home=home).returncode == 2, bad
        assert run("journal", "--session", "nope", *url, home=home).returncode == 2
        assert run("journal", "--after", "nope", *url, home=home).returncode == 2
        lower = run("journal", "revert", undo["id"].lower(), "--dry-run", *url, home=home)
        assert lower.returncode == 0 and "would" in lower.stdout  # ids in any case
    finally:
        daemon.kill()


def test_journal_follow_shows_appends_too(home: Path) -> None:
    daemon = Daemon(home).start()
    try:
        sid = httpx.post(f"{daemon.url}/v1/sessions", json={"repo_root": "/srv/f"}).json()["id"]
        newest = httpx.get(f"{daemon.url}/v1/journal").json()["items"][-1]["id"]
        follower = following(home, "--after", newest, "--session", sid, "--url", daemon.url)
        lines = lines_of(follower)
        try:
            for _ in range(50):  # appended until the follower is there to see one
                httpx.post(
                    f"{daemon.url}/v1/sessions/{sid}/events",
                    json={"type": "message", "role": "user", "content": "hi"},
                )
                try:
                    line = lines.get(timeout=0.3)
                    break
                except queue.Empty:
                    continue
            assert "session.appended" in line and sid in line
        finally:
            follower.kill()
            follower.wait()
            assert follower.stdout is not None
            follower.stdout.close()
    finally:
        daemon.kill()
