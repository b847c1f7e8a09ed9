"""`follow add` and `follow remove` change the list the running daemon reads, or refuse,
naming both homes: never "following" for a home no daemon reads."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..conftest import CLAUDE_SMALL, Daemon

SCRIPT = str(Path(sys.executable).with_name("aster-persist"))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Daemon]:
    daemon = Daemon(tmp_path / "home").start()
    yield daemon
    daemon.kill()


def follow(server: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ASTER_HOME"}
    return subprocess.run(
        [SCRIPT, "follow", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "ASTER_URL": server.url},
    )


def test_follow_add_for_another_home_than_the_daemons_is_refused(
    server: Daemon, tmp_path: Path
) -> None:
    folder = tmp_path / "claude"
    folder.mkdir()
    other = tmp_path / "other-home"
    done = follow(server, "add", str(folder), "--home", str(other))
    assert done.returncode == 1, done.stderr
    assert str(server.home) in done.stderr and str(other) in done.stderr
    assert "--home" in done.stderr and "Traceback" not in done.stderr
    assert not (other / "follow.json").exists() and not done.stdout
    gone = follow(server, "remove", str(folder), "--home", str(other))
    assert gone.returncode == 1 and str(server.home) in gone.stderr


def test_follow_add_for_the_daemons_home_is_followed_by_it(server: Daemon, tmp_path: Path) -> None:
    folder = tmp_path / "claude"
    folder.mkdir()
    shutil.copy(CLAUDE_SMALL, folder / CLAUDE_SMALL.name)
    done = follow(server, "add", str(folder), "--home", str(server.home))
    assert done.returncode == 0, done.stderr
    assert f"following {folder}" in done.stdout
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        items = httpx.get(f"{server.url}/v1/sessions").json()["items"]
        if items:
            break
        time.sleep(0.2)
    assert [item["source_tool"] for item in items] == ["claude-code"]
    done = follow(server, "remove", str(folder), "--home", str(server.home))
    assert done.returncode == 0 and f"no longer following {folder}" in done.stdout


def test_follow_add_with_no_daemon_writes_the_list_it_reads_at_start(tmp_path: Path) -> None:
    folder = tmp_path / "claude"
    folder.mkdir()
    home = tmp_path / "home"
    stopped = Daemon(home)  # never started: nothing answers at its port
    done = follow(stopped, "add", str(folder), "--home", str(home))
    assert done.returncode == 0, done.stderr
    assert str(folder) in (home / "follow.json").read_text()
