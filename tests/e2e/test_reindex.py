"""`aster-persist reindex`: an offline rebuild of the index from the files alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from aster_persist.storage.home import Home

from ..api.test_search import results, search_memory, seed
from ..conftest import FakeClock, make_client


def reindex(home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aster_persist", "reindex", "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ASTER_HOME": ""},
    )


def test_reindex_rebuilds_from_the_files(home: Path, clock: FakeClock) -> None:
    queries = ["tokenizer", "docker release", "kind:summary emoji"]
    with make_client(home, clock) as client:
        seed(client)
        client.post("/v1/memory/blocks", json={"name": "m", "content": "Walrus facts."})
        before = results(client, queries)
    index = home / "index" / "catalog.sqlite3"
    index.write_bytes(b"not a database at all")
    done = reindex(home)
    assert done.returncode == 0, done.stderr
    assert "reindexed 3 sessions (10 documents) and 1 memory files" in done.stdout
    with make_client(home, clock) as client:
        assert results(client, queries) == before
        assert [h["name"] for h in search_memory(client, "walrus")] == ["m"]
    again = subprocess.run(
        [sys.executable, "-m", "aster_persist", "reindex", "--home", str(home), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(again.stdout)
    assert (report["files"], report["documents"], report["memory"]) == (3, 10, 1)


def test_reindex_refuses_while_the_home_is_in_use(home: Path) -> None:
    held = Home.open(home)
    try:
        done = reindex(home)
    finally:
        held.close()
    assert done.returncode == 3  # a daemon holds it: the same as doctor
    assert str(home) in done.stderr and str(os.getpid()) in done.stderr
