"""kill -9 during rapid rewrites of one block: the file is always one whole version."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import httpx
import pytest

from aster_persist.schemas import frontmatter

from ..conftest import Daemon
from .scale import record, rounds

KILLS = rounds(5, 200)


def version(body: str) -> int:
    return int(body.split(":")[0].split()[1])


@pytest.mark.slow
def test_block_rewrites_survive_sigkill(tmp_path: Path) -> None:
    home = tmp_path / "home"
    daemon = Daemon(home).start()
    path = home / "memory" / "rewritten.md"
    count = max(400, KILLS * 40)
    bodies = {f"version {i}: " + "x" * (i * 37 % 3000) + "\n" for i in range(count)}
    order = sorted(bodies, key=version)
    written = 0
    stop = threading.Event()

    def writer() -> None:
        nonlocal written
        i = 0
        with httpx.Client(timeout=2) as http:
            while not stop.is_set() and i < len(order):
                try:
                    r = http.put(
                        f"{daemon.url}/v1/memory/blocks/rewritten",
                        json={"content": order[i], "description": f"v{i}"},
                    )
                    if r.status_code < 300:
                        written += 1
                        i += 1
                except httpx.HTTPError:
                    time.sleep(0.02)

    thread = threading.Thread(target=writer)
    thread.start()
    rng = random.Random(7)
    kills = 0
    try:
        while thread.is_alive() and kills < KILLS:
            time.sleep(rng.uniform(0.05, 0.3))
            acknowledged = written  # versions 0..written-1 were acknowledged before the kill
            daemon.kill()
            kills += 1
            if path.exists():
                doc = frontmatter.parse(path.read_text())
                assert doc.body in bodies and doc.meta["name"] == "rewritten"
                assert version(doc.body) >= acknowledged - 1, "an acknowledged rewrite was lost"
            daemon.start()
        deadline = time.monotonic() + 60
        while written < 200 and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(30)
        daemon.kill()
    assert written >= 200 and kills >= min(5, KILLS)
    record("SIGKILL during block rewrites", rounds=kills, faults=kills, checked=written, lost=0)
    doc = frontmatter.parse(path.read_text())
    assert doc.body in bodies
    daemon.start()
    got = httpx.get(f"{daemon.url}/v1/memory/blocks/rewritten", params={"track": "false"}).json()
    assert got["body"] == doc.body
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".aster-tmp-")]
    daemon.stop()
