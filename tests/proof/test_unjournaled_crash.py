"""kill -9 between a memory change and its journal line, for every kind of change: the
next start journals what the kill left, once, so every memory file is as the journal
last says; the entry holds the bytes the change replaced, and reverting it puts every
file back byte for byte."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..conftest import Daemon
from .scale import record

KILLPOINT = Path(__file__).parents[1] / "e2e" / "killpoint"  # shared with tests/e2e
FILES = "aster_persist.storage.memory.files:MemoryFiles"
MD = {"content-type": "text/markdown"}


def memory_files(home: Path) -> dict[str, bytes]:
    """Every memory file, live and archived, by its path in the home (no temporary one)."""
    root = home / "memory"
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(root.rglob("*.md"))}


def journal(daemon: Daemon) -> list[dict[str, Any]]:
    r = httpx.get(f"{daemon.url}/v1/journal", params={"op": "memory", "limit": 500})
    return list(r.json()["items"])


def as_journaled(entries: list[dict[str, Any]]) -> dict[str, str]:
    """The hash of every file the journal says is there, by its path, from its entries
    alone: the state each change left in ``after``, a path left behind gone."""
    said: dict[str, str | None] = {}
    for entry in entries:
        if entry["before"]:
            said[entry["before"]["path"]] = None
        if entry["after"]:
            said[entry["after"]["path"]] = entry["after"]["sha256"]
    return {path: sha for path, sha in said.items() if sha is not None}


def journaled_changes(home: Path) -> int:
    """The memory entries in the journal's file, read without a daemon."""
    lines = (home / "journal.jsonl").read_bytes().splitlines()
    return sum(b'"op":"memory.' in line for line in lines)


def block(url: str, name: str, content: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/memory/blocks", json={"name": name, "content": content})


def revert_last_edit(url: str) -> httpx.Response:
    edits = httpx.get(f"{url}/v1/journal", params={"op": "memory.edit"}).json()["items"]
    return httpx.post(f"{url}/v1/journal/{edits[-1]['id']}/revert", timeout=10)


Call = Callable[[str], httpx.Response]
# each change: what is made before it, the change, and where its daemon is killed
# (a call counted in the doomed daemon's life, which makes no other change first)
CASES: dict[str, tuple[Call, Call, str]] = {
    "a block made": (
        lambda url: block(url, "port", "The API listens on 5433."),
        lambda url: block(url, "style", "Tabs."),
        f"{FILES}._swap_in:1:after",
    ),
    "a block replaced": (
        lambda url: block(url, "port", "The API listens on 5433."),
        lambda url: httpx.put(
            f"{url}/v1/memory/blocks/port", content="It listens on 5434.\n", headers=MD
        ),
        f"{FILES}._swap_in:1:after",
    ),
    "a note added to ASTER.md": (
        lambda url: httpx.post(f"{url}/v1/memory/core/notes", json={"note": "Use tabs."}),
        lambda url: httpx.post(f"{url}/v1/memory/core/notes", json={"note": "100 columns."}),
        f"{FILES}._swap_in:1:after",
    ),
    "a block forgotten": (
        lambda url: block(url, "port", "The API listens on 5433."),
        lambda url: httpx.delete(f"{url}/v1/memory/blocks/port"),
        f"{FILES}.move_file:1:after",
    ),
    "a block archived": (
        lambda url: block(url, "port", "The API listens on 5433."),
        lambda url: httpx.post(f"{url}/v1/memory/blocks/port/archive"),
        f"{FILES}.move_file:1:after",
    ),
    "a block restored": (
        lambda url: [
            block(url, "port", "The API listens on 5433."),
            httpx.post(f"{url}/v1/memory/blocks/port/archive"),
        ][-1],
        lambda url: httpx.post(f"{url}/v1/memory/blocks/port/restore"),
        f"{FILES}.move_file:1:after",
    ),
    "an edit reverted": (
        lambda url: [
            block(url, "port", "The API listens on 5433."),
            httpx.put(f"{url}/v1/memory/blocks/port", content="Port 5434.\n", headers=MD),
        ][-1],
        revert_last_edit,
        "aster_persist.storage.journal:Journal.record:1:before",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_kill_9_before_the_journal_line_is_journaled_at_the_next_start(
    home: Path, case: str
) -> None:
    setup, change, kill = CASES[case]
    daemon = Daemon(home).start()
    assert setup(daemon.url).status_code < 300
    made = len(journal(daemon))
    daemon.stop()
    before = memory_files(home)

    env = {"ASTER_TEST_KILL": kill, "PYTHONPATH": str(KILLPOINT)}
    doomed = Daemon(home, env=env).start()
    with pytest.raises(httpx.HTTPError):
        change(doomed.url)  # never answered
    assert doomed.proc is not None and doomed.proc.wait(10) == -9
    cut = memory_files(home)
    assert cut != before  # the change was made on disk
    assert journaled_changes(home) == made  # and not journaled

    again = Daemon(home).start()
    try:
        entries = journal(again)
        [found] = entries[made:]  # the change, journaled once, as found at start
        assert found["actor"] == "watcher" and found["detail"]["by"].startswith("found at start")
        on_disk = {path: hashlib.sha256(data).hexdigest() for path, data in cut.items()}
        assert as_journaled(entries) == on_disk  # every file as the journal last says
        assert memory_files(home) == cut  # nothing else changed at start
        r = httpx.post(f"{again.url}/v1/journal/{found['id']}/revert")
        assert r.status_code == 200, r.text
        assert memory_files(home) == before  # the change undone, byte for byte
        again.stop()
        again.start()
        assert len(journal(again)) == made + 2  # the next start finds nothing more
    finally:
        again.kill()
    record(
        f"kill -9 before the journal line: {case}",
        rounds=1,
        faults=1,
        checked=len(before),
        lost=0,
        figure="journaled once at the next start; reverted byte for byte",
    )
