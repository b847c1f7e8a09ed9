"""Following a folder on a real daemon: a new file and a line appended to it are imported
within a second or two, as one session that grows; a deleted source leaves the session
as it was; a restart reads again only what changed; the CLI keeps the list."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

from ..conftest import CLAUDE_SMALL, Daemon, wait_until

FIXTURE = CLAUDE_SMALL


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASTER_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "aster_persist", "follow", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def sessions(url: str) -> list[dict[str, Any]]:
    return list(httpx.get(f"{url}/v1/sessions").json()["items"])


def taken_in(home: Path, source: Path) -> int | None:
    """How many bytes of ``source`` the daemon has imported, as its follow state says."""
    try:
        state = orjson.loads((home / "follow-state.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    seen = state.get(str(source))
    return seen[0] if seen else None


def test_a_followed_folder_is_imported_as_it_grows(tmp_path: Path) -> None:
    home, agent = tmp_path / "home", tmp_path / "agent" / "projects" / "demo"
    agent.mkdir(parents=True)
    daemon = Daemon(home).start()
    try:
        added = cli(home, "add", str(agent.parents[0]))
        assert added.returncode == 0 and "following" in added.stdout, added.stderr
        listed = cli(home, "list", "--json")
        assert str(agent.parents[0]) in listed.stdout
        whole = FIXTURE.read_bytes().splitlines(keepends=True)
        source = agent / FIXTURE.name
        source.write_bytes(b"".join(whole[:10]))
        started = time.monotonic()
        [made] = wait_until(lambda: sessions(daemon.url))
        first_seen = time.monotonic() - started
        first = made["events"]
        with source.open("ab") as handle:  # the agent goes on writing
            handle.write(b"".join(whole[10:]))
        # a read may catch the write half done: wait until the whole file was taken in
        try:
            wait_until(lambda: taken_in(home, source) == source.stat().st_size)
        except AssertionError:
            raise AssertionError(f"not taken in; the daemon said: {daemon.output()}") from None
        grown = [s for s in sessions(daemon.url) if s["events"] > first]
        assert [s["id"] for s in grown] == [made["id"]]  # one session, grown
        assert first_seen < 10
        events = grown[0]["events"]

        source.unlink()  # gone from its source: what was imported stays, and says so

        def journal() -> list[dict[str, Any]]:
            found = httpx.get(f"{daemon.url}/v1/journal", params={"op": "session"}).json()
            return list(found["items"])

        wait_until(lambda: len(journal()) == 2)
        [kept] = sessions(daemon.url)
        assert kept["events"] == events
        ops = {e["op"]: e for e in journal()}
        assert set(ops) == {"session.imported", "session.source_gone"}
        gone = ops["session.source_gone"]
        assert gone["session"] == made["id"] and gone["detail"]["path"] == str(source)
        assert gone["actor"] == "watcher"
        assert "detected" not in daemon.output()  # the watcher's every change is not logged
    finally:
        daemon.stop()

    again = Daemon(home, port=daemon.port).start()  # a restart: nothing changed, nothing read
    try:
        time.sleep(1.5)
        [same] = sessions(again.url)
        assert same["events"] == events
        source.write_bytes(b"".join(whole))  # a file the agent wrote again, whole
        time.sleep(2.0)
        [still] = sessions(again.url)
        assert still["events"] == events  # its records are all there: nothing appended
        assert cli(home, "remove", str(agent.parents[0])).returncode == 0
        assert cli(home, "list", "--json").stdout.count(str(agent.parents[0])) == 0
    finally:
        again.stop()
