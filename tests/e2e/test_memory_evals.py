"""Memory evals: does memory learn across sessions? With a scripted model that reads
the turn it is given the way a real one would, through the real daemon end to end:

- a preference taught in session A is in the context of a fresh session B;
- a convention that was superseded no longer appears, its replacement does;
- prune archives what decayed and keeps what is protected.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx

from ..conftest import Daemon, assistant, user
from ..model_server import Reply, ScriptedModel
from .test_learning import settled, start

PROJECT_A = "/srv/evals/app"
PROJECT_B = "/srv/evals/other"


def reader(model: ScriptedModel) -> Any:
    """A model that extracts what the user states: a preference (global), or a switch of
    convention that supersedes the existing memory it was shown about it."""

    def answer(request: dict[str, Any]) -> Reply:
        prompt = model.prompt(request)
        turn = prompt.split("The turn:\n", 1)[1]
        said = re.search(r"User: (.*)", turn)
        text = said.group(1) if said else ""
        base = {"type": "semantic", "importance": 0.7, "confidence": 0.9, "tags": []}
        if text.startswith("I prefer"):
            item = {
                **base,
                "title": "Commit style",
                "content": "The user p" + text[3:],
                "scope": "global",
                "reason": "Every commit should follow it.",
            }
            return Reply({"items": [item]})
        if "switched" in text:
            shown = re.findall(r"^- ([a-z0-9-]+): .*test", prompt, re.M)
            item = {
                **base,
                "title": "Running tests",
                "content": "Run the tests with make test.",
                "scope": "project",
                "reason": "The old command no longer works.",
                "supersedes": shown,
            }
            return Reply({"items": [item]})
        return Reply({"items": []})

    return answer


def context(daemon: Daemon, repo_root: str) -> str:
    r = httpx.get(f"{daemon.url}/v1/memory/context", params={"repo_root": repo_root})
    return str(r.json()["content"])


def turn(daemon: Daemon, repo_root: str, said: str, reply: str) -> None:
    sid = httpx.post(
        f"{daemon.url}/v1/sessions", json={"repo_root": repo_root, "title": "eval"}
    ).json()["id"]
    r = httpx.post(f"{daemon.url}/v1/sessions/{sid}/events", json=[user(said), assistant(reply)])
    assert r.status_code == 201


def test_memory_learns_across_sessions(home: Path, model: ScriptedModel) -> None:
    model.responders["memory_items"] = reader(model)
    daemon = start(home, model)
    try:
        # 1. a preference taught in session A ...
        assert "commit-style" not in context(daemon, PROJECT_B)
        turn(daemon, PROJECT_A, "I prefer small commits with imperative messages.", "Will do.")
        settled(daemon, 1)
        # ... is in the context a fresh session B in another project starts with
        assert "- commit-style: Commit style" in context(daemon, PROJECT_B)
        recalled = httpx.get(f"{daemon.url}/v1/memory/blocks/commit-style").json()
        assert "small commits with imperative messages" in recalled["body"]

        # 2. a superseded convention no longer appears
        r = httpx.post(
            f"{daemon.url}/v1/memory/blocks",
            params={"repo_root": PROJECT_A},
            json={
                "name": "test-runner",
                "content": "Run the tests with pytest -x.",
                "description": "how to run the tests: pytest -x",
            },
        )
        assert r.status_code == 201
        assert "pytest -x" in context(daemon, PROJECT_A)
        turn(daemon, PROJECT_A, "We switched to make for the tests.", "Noted, make test it is.")
        settled(daemon, 2)
        now = context(daemon, PROJECT_A)
        assert "pytest -x" not in now and "- running-tests: Running tests" in now

        # 3. prune archives what decayed and keeps what is protected
        for name, extra in (
            ("decayed", {}),
            ("pinned-rule", {"pinned": True}),
            ("often-used", {}),
        ):
            r = httpx.post(
                f"{daemon.url}/v1/memory/blocks",
                params={"repo_root": PROJECT_A},
                json={"name": name, "content": f"{name} content", "importance": 0.2, **extra},
            )
            assert r.status_code == 201
        for _ in range(3):
            httpx.get(f"{daemon.url}/v1/memory/blocks/often-used", params={"repo_root": PROJECT_A})
        pruned = httpx.post(
            f"{daemon.url}/v1/memory/prune",
            params={"repo_root": PROJECT_A},
            json={"max_age_days": 0, "max_importance": 0.5, "dry_run": False},
        ).json()
        assert [item["name"] for item in pruned["archived"]] == ["decayed"]
        kept = {item["name"] for item in pruned["protected"]}
        assert {"pinned-rule", "often-used", "running-tests"} <= kept
        final = context(daemon, PROJECT_A)
        assert "decayed" not in final and "pinned-rule" in final and "often-used" in final
    finally:
        daemon.kill()
