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
        follower = subprocess.Popen(
            cli("journal", "--follow", "--json", "--after", newest, "--url", daemon.url),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "ASTER_HOME": str(home)},
        )
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
