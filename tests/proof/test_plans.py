"""A consolidation pass is one change: checked whole before its first step (a name it
would take refused with every file as it was), and across a kill -9 at any step, the
next start puts every file back byte for byte and says so in the journal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..conftest import Daemon
from ..model_server import ScriptedModel
from .scale import record

ROOT = "/srv/plans"
KILLPOINT = Path(__file__).parents[1] / "e2e" / "killpoint"  # shared with tests/e2e
SOURCES = [f"note-{n:02d}" for n in range(11)]
NEW = {
    "type": "semantic",
    "title": "Style rules",
    "content": "Tabs; 100 columns.",
    "importance": 0.8,
    "confidence": 0.9,
    "scope": "project",
    "tags": ["style"],
    "reason": "Every edit follows it.",
}


def start(home: Path, model: ScriptedModel, kill: str = "") -> Daemon:
    env = {
        "ASTER_LLM_BASE_URL": model.url,
        "ASTER_LLM_MODEL": "scripted-1",
        "ASTER_LLM_API_KEY": "test-key",
        "ASTER_LLM_RETRIES": "1",
    }
    if kill:
        env |= {"ASTER_TEST_KILL": kill, "PYTHONPATH": str(KILLPOINT)}
    return Daemon(home, env=env).start()


def memory_files(home: Path) -> dict[str, bytes]:
    """Every memory file, live and archived, by its path in the home."""
    root = home / "memory"
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(root.rglob("*.md"))}


def journal(daemon: Daemon, op: str) -> list[dict[str, Any]]:
    r = httpx.get(f"{daemon.url}/v1/journal", params={"op": op, "limit": 500})
    return list(r.json()["items"])


def put(daemon: Daemon, name: str, content: str) -> None:
    r = httpx.post(
        f"{daemon.url}/v1/memory/blocks",
        params={"repo_root": ROOT},
        json={"name": name, "content": content},
    )
    assert r.status_code == 201, r.text


def consolidate(daemon: Daemon, proposal: dict[str, Any], timeout: float = 30) -> httpx.Response:
    return httpx.post(
        f"{daemon.url}/v1/memory/consolidate",
        params={"repo_root": ROOT, "apply": "true"},
        json={"proposal": proposal},
        timeout=timeout,
    )


def twelve(daemon: Daemon) -> dict[str, Any]:
    """Twelve blocks, and a pass merging eleven into the twelfth, archiving nothing else,
    and making one new block."""
    put(daemon, "target", "Indent with tabs.")
    for n, name in enumerate(SOURCES):
        put(daemon, name, f"Indentation fact number {n}.")
    return {
        "merges": [
            {
                "into": "target",
                "from": SOURCES,
                "content": "Indent with tabs; every fact in one place.",
                "reason": "the same rule, twelve times",
            }
        ],
        "new": [NEW],
    }


@pytest.fixture
def learning(home: Path, model: ScriptedModel) -> Iterator[Daemon]:
    daemon = start(home, model)
    yield daemon
    daemon.kill()


def test_a_pass_that_would_take_a_used_name_changes_nothing(learning: Daemon) -> None:
    put(learning, "alpha", "Use tabs.")
    put(learning, "beta", "Tabs, never spaces.")
    put(learning, "style-rules", "Something else entirely.")
    before = memory_files(learning.home)
    proposal = {
        "merges": [{"into": "alpha", "from": ["beta"], "content": "Use tabs.", "reason": "same"}],
        "new": [NEW],  # its name, style-rules, is taken
    }
    r = consolidate(learning, proposal)
    assert r.status_code == 409, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["code"] == "name_taken" and "style-rules" in r.json()["detail"]
    assert memory_files(learning.home) == before  # beta not archived, alpha not rewritten
    assert journal(learning, "memory.archive") == [] and journal(learning, "memory.plan") == []

    httpx.post(f"{learning.url}/v1/memory/blocks/style-rules/archive", params={"repo_root": ROOT})
    before = memory_files(learning.home)
    r = consolidate(learning, proposal)  # an archived block holds its name too
    assert r.status_code == 409 and "archived" in r.json()["detail"]
    assert memory_files(learning.home) == before


def test_a_whole_pass_is_journaled_as_one_plan_then_closed(learning: Daemon) -> None:
    proposal = twelve(learning)
    r = consolidate(learning, proposal)
    assert r.status_code == 200, r.text
    assert r.json()["done"] == [{"merged": SOURCES, "into": "target"}, {"created": "style-rules"}]
    [plan] = journal(learning, "memory.plan")
    [closed] = journal(learning, "memory.plan_done")
    assert closed["detail"] == {"plan": plan["id"], "done": 13}
    steps = plan["detail"]["steps"]
    assert [s["do"] for s in steps] == ["archive"] * 11 + ["write", "create"]
    archived = journal(learning, "memory.archive")
    assert {e["name"] for e in archived} == set(SOURCES)
    assert all(e["detail"]["plan"] == plan["id"] for e in archived)
    assert plan["id"] < min(e["id"] for e in archived) and closed["id"] > max(
        e["id"] for e in archived
    )


# Where the daemon is killed: before the first step (the plan journaled, nothing done),
# after the first source is archived, after the last, after the target is rewritten,
# and after the new block is written (every step made, the plan not closed); and within
# a step, its file changed and its journal line not written: the first archive, the
# rewrite, the new block.
FILES = "aster_persist.storage.memory.files:MemoryFiles"
KILLS = {
    "first-archive-unjournaled": f"{FILES}.move_file:1:after",
    "rewrite-unjournaled": f"{FILES}._swap_in:1:after",
    "new-block-unjournaled": f"{FILES}._swap_in:2:after",
    "plan-journaled": "aster_persist.storage.memory.plans:Plans._run:1:before",
    "first-archive": "aster_persist.storage.memory:MemoryStore.move:1:after",
    "last-archive": "aster_persist.storage.memory:MemoryStore.move:11:after",
    "target-rewritten": "aster_persist.storage.memory:MemoryStore.write_block:1:after",
    "every-step": "aster_persist.storage.memory:MemoryStore.write_block:2:after",
}


@pytest.mark.parametrize("where", sorted(KILLS))
def test_kill_9_at_any_step_of_a_pass_is_undone_at_start(
    home: Path, model: ScriptedModel, where: str
) -> None:
    setup = start(home, model)
    proposal = twelve(setup)
    before = memory_files(home)
    setup.stop()
    # a daemon killed at that step of the pass, and the pass never answered
    doomed = start(home, model, kill=KILLS[where])
    with pytest.raises(httpx.HTTPError):
        consolidate(doomed, proposal, timeout=10)
    assert doomed.proc is not None and doomed.proc.wait(10) == -9
    if where != "plan-journaled":
        assert memory_files(home) != before  # the pass was cut short half made

    again = start(home, model)
    try:
        assert memory_files(home) == before  # every file back, byte for byte
        [plan] = journal(again, "memory.plan")
        [closed] = journal(again, "memory.plan_done")
        assert closed["detail"]["plan"] == plan["id"] and closed["detail"]["undone"] is True
        blocks = httpx.get(f"{again.url}/v1/memory/blocks", params={"repo_root": ROOT}).json()
        assert {b["name"] for b in blocks["items"]} == {"target", *SOURCES}
        r = consolidate(again, proposal)  # and the pass can be made again, whole
        assert r.status_code == 200, r.text
        assert len(r.json()["done"]) == 2
    finally:
        again.kill()
    record(
        f"consolidation killed at {where}",
        rounds=1,
        faults=1,
        checked=len(before),
        lost=0,
        figure="every memory file byte-identical after the restart",
    )
