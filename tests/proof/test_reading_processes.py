"""The processes a daemon starts to read for it end with it, however it ended: a daemon
killed outright (kill -9) leaves no reading process behind, neither an import's nor a
catch-up's (each waits on a pipe whose writing end it holds itself, so nothing else
would ever end it)."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import orjson

from aster_persist.importers.pool import SMALLEST
from aster_persist.index.catalog.files import POOL_BYTES
from aster_persist.schemas.names import project_slug

from ..conftest import FIXTURES, Daemon, wait_until


def children(pid: int) -> set[int]:
    """The processes whose parent is ``pid``, read from /proc."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()  # after the command's name
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(entry))
    return found


def gone(pids: set[int]) -> bool:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return not alive


def test_an_import_s_reading_processes_end_with_a_daemon_killed(tmp_path: Path) -> None:
    source = max((FIXTURES / "claude-code").rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    assert source.stat().st_size >= SMALLEST  # read on a reading process
    daemon = Daemon(tmp_path / "home").start()
    assert daemon.proc is not None
    r = httpx.post(f"{daemon.url}/v1/sessions/import", content=source.read_bytes(), timeout=60)
    assert r.status_code == 201, r.text
    started = children(daemon.proc.pid)
    assert started  # the reading process (and the pool's helper)
    daemon.kill()
    wait_until(lambda: gone(started), timeout=15)


def test_a_catch_up_s_reading_processes_end_with_a_daemon_killed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = home / "sessions" / project_slug("/srv/catch-up")
    folder.mkdir(parents=True)
    text = "the walrus and the carpenter were walking close at hand " * 16
    for n in range(48):  # past what a catch-up reads in its own process
        sid = f"01J{n:023d}"
        lines = [{"seq": 0, "type": "session", "id": sid, "v": 1, "repo_root": "/srv/catch-up",
                  "created_at": "2026-01-01T00:00:00Z"}]  # fmt: skip
        lines += [
            {"seq": seq, "type": "message", "role": "user", "content": f"{seq}: {text}"}
            for seq in range(1, 1200)
        ]
        (folder / f"{sid}.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    assert sum(p.stat().st_size for p in folder.iterdir()) > POOL_BYTES
    daemon = Daemon(home).start(wait=False)  # a cold start: the catalog is built first
    assert daemon.proc is not None
    pid = daemon.proc.pid
    started = wait_until(lambda: children(pid) if len(children(pid)) >= 2 else None, timeout=60)
    daemon.kill()
    wait_until(lambda: gone(started), timeout=15)
