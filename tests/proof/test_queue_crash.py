"""SIGKILL while the extraction queue works: every job completes once, no memory twice."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import httpx

from ..conftest import Daemon, assistant, user
from ..e2e.test_learning import GOOD, journal, settled, start
from ..model_server import Reply, ScriptedModel
from .scale import record, rounds

KILLS = rounds(5, 50)
TURNS = 12


def test_kill_9_again_and_again_while_jobs_run(home: Path, model: ScriptedModel) -> None:
    def answer(request: dict[str, Any]) -> Reply:
        n = model.prompt(request).split("fact number ")[1].split()[0]
        item = {**GOOD, "title": f"Fact {n}", "content": f"Fact {n} holds."}
        return Reply({"items": [item]}, delay=0.05)

    model.responders["memory_items"] = answer
    daemon = start(home, model)
    sid = httpx.post(
        f"{daemon.url}/v1/sessions", json={"repo_root": "/srv/q", "title": "t"}
    ).json()["id"]
    for n in range(TURNS):
        r = httpx.post(
            f"{daemon.url}/v1/sessions/{sid}/events",
            json=[user(f"fact number {n} matters"), assistant(f"noted {n}")],
        )
        assert r.status_code == 201
    rng = random.Random(5)
    for _ in range(KILLS):
        time.sleep(rng.uniform(0.0, 0.15))
        daemon.kill()
        daemon = Daemon(home, port=daemon.port, env=daemon.env).start()
    try:
        settled(daemon, 0)  # the queue is empty: everything it held is done

        def names() -> set[str]:
            items = httpx.get(f"{daemon.url}/v1/memory/blocks", params={"repo_root": "/srv/q"})
            return {b["name"] for b in items.json()["items"]}

        deadline = time.monotonic() + 60
        while len(names()) < TURNS and time.monotonic() < deadline:
            time.sleep(0.1)
        assert names() == {f"fact-{n}" for n in range(TURNS)}
        writes = [e["name"] for e in journal(daemon, "memory.write")]
        assert sorted(writes) == sorted({f"fact-{n}" for n in range(TURNS)})  # each once
    finally:
        daemon.kill()
    record("SIGKILL while the extraction queue runs", rounds=KILLS, faults=KILLS,
           checked=TURNS, lost=TURNS - len(set(writes)))  # fmt: skip
