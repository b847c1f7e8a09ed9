"""Secrets on a real daemon: a block a person left a secret in (found by the watcher) is
withheld from every MCP tool, resource and prompt and never shown to the model by
consolidation; MCP writes and the learner's extraction refuse secrets like the API does."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from ..conftest import Daemon, assistant, user, wait_until
from ..model_server import ScriptedModel
from .test_learning import GOOD, start

TOKEN = "ghp_" + "AIxNKu8iS2G8NPRVdD53X83RZJzzzzgEOzdm"
KEY = "sk_live_" + "q4i9DoV8gz4FkQ1okTBGzvAm"


def leave_a_secret(url: str, home: Path) -> None:
    """Two blocks; one is then edited by hand to hold a token, and the watcher sees it."""
    wait_until(lambda: httpx.get(f"{url}/v1/info").json()["watching"])
    for name, content in (("deploy", "Deploy with make."), ("ports", "Postgres is on 5433.")):
        r = httpx.post(f"{url}/v1/memory/blocks", json={"name": name, "content": content})
        assert r.status_code == 201, r.text
    path = home / "memory" / "deploy.md"
    path.write_text(path.read_text() + f"CI pushes tags with {TOKEN}.\n")

    def flagged() -> bool:
        items = httpx.get(f"{url}/v1/journal", params={"limit": 1000}).json()["items"]
        return any(e["actor"] == "watcher" and e["detail"].get("secrets") for e in items)

    wait_until(flagged)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def mcp(daemon: Daemon) -> AsyncIterator[Client]:
    async with Client(f"{daemon.url}/mcp", mode="legacy") as client:
        yield client


@pytest.mark.anyio
async def test_mcp_withholds_a_block_left_with_a_secret_and_refuses_new_ones(
    mcp: Client, daemon: Daemon, home: Path
) -> None:
    leave_a_secret(daemon.url, home)
    recalled = await mcp.call_tool("recall", {"name": "deploy"})
    assert "withheld" in recalled.content[0].text and TOKEN not in str(recalled)
    with pytest.raises(MCPError) as refused:
        await mcp.read_resource("aster://memory/global/deploy")
    assert TOKEN not in str(refused.value) and "withheld" in str(refused.value)
    assert "Postgres" in (await mcp.read_resource("aster://memory/global/ports")).contents[0].text
    context = (await mcp.read_resource("aster://memory/context")).contents[0].text
    assert "- ports:" in context and "deploy" not in context and TOKEN not in context
    prompt = await mcp.get_prompt("memory_context", {})
    assert TOKEN not in str(prompt) and "deploy" not in str(prompt)
    found = await mcp.call_tool("search_memory", {"query": "deploy make tags"})
    assert "deploy" not in str(found) and TOKEN not in str(found)

    before = (home / "journal.jsonl").read_bytes()
    for arguments in (
        {"note": f"the stripe key is {KEY}"},
        {"note": f"key {KEY}", "title": "stripe"},
    ):
        said = await mcp.call_tool("remember", arguments)
        assert "secret" in said.content[0].text.lower() and KEY not in str(said)
    # a session id is a ULID, so a secret is never one: refused as no session id
    said = await mcp.call_tool("remember", {"note": "fine", "title": "fine", "session_id": KEY})
    assert said.is_error and "ULID" in said.content[0].text and KEY not in str(said)
    assert (home / "journal.jsonl").read_bytes() == before
    assert KEY.encode() not in b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())


@pytest.fixture
def learning(home: Path, model: ScriptedModel) -> Iterator[Daemon]:
    daemon = start(home, model)
    yield daemon
    daemon.kill()


def test_the_learner_never_shows_or_keeps_a_secret(
    learning: Daemon, model: ScriptedModel, home: Path
) -> None:
    leave_a_secret(learning.url, home)
    model.then("consolidation", {"merges": [], "archives": [], "new": []})
    dry = httpx.post(f"{learning.url}/v1/memory/consolidate").json()
    assert dry["applied"] is False
    shown = model.prompt(model.of("consolidation")[0])
    assert "Postgres is on 5433." in shown and "deploy" not in shown and TOKEN not in shown

    items = [
        {**GOOD, "title": "Stripe", "content": "Payments go through Stripe.", "tags": [KEY]},
        {**GOOD, "title": "Push", "content": "Push tags.", "reason": f"the key is {KEY}"},
        {**GOOD, "title": "Tabs"},
    ]
    model.then("memory_items", {"items": items})
    sid = httpx.post(f"{learning.url}/v1/sessions", json={"repo_root": "/srv/learning"})
    session_id = sid.json()["id"]
    r = httpx.post(
        f"{learning.url}/v1/sessions/{session_id}/events",
        json=[user("how do we take payments?"), assistant("Through Stripe.")],
    )
    assert r.status_code == 201, r.text

    def rejected() -> list[dict[str, Any]]:
        params = {"op": "memory.rejected", "limit": 100}
        return list(httpx.get(f"{learning.url}/v1/journal", params=params).json()["items"])

    def kept() -> list[str]:
        params = {"repo_root": "/srv/learning"}
        items = httpx.get(f"{learning.url}/v1/memory/blocks", params=params).json()["items"]
        return [b["name"] for b in items]

    entries = wait_until(lambda: len(rejected()) == 2 and rejected())
    assert all("secret" in e["detail"]["reason"] for e in entries)
    assert wait_until(lambda: "tabs" in kept())
    assert "stripe" not in kept() and "push" not in kept()
    assert KEY not in json.dumps(entries)
    assert KEY.encode() not in b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
