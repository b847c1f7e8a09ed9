"""The prompt context, the agent tools, procedures, relations, prune and secrets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from aster_persist.schemas.names import project_slug
from aster_persist.secrets import scan_text

from ..conftest import REPO, FakeClock

FIXTURES = Path(__file__).parents[1] / "fixtures"


def remember(
    client: TestClient, name: str, content: str, repo: str | None = None, **meta: object
) -> dict:
    params = {"repo_root": repo} if repo else {}
    r = client.post(
        "/v1/memory/blocks", params=params, json={"name": name, "content": content, **meta}
    )
    assert r.status_code == 201, r.text
    return r.json()


def test_context_caps_the_index_at_60_newest_first(client: TestClient, clock: FakeClock) -> None:
    for i in range(500):
        clock.advance(seconds=1)
        remember(client, f"block-{i:03d}", f"fact number {i}", description=f"fact {i}")
    client.post("/v1/memory/remember", json={"note": "Always run the linter."})
    got = client.get("/v1/memory/context").json()
    text = got["content"]
    assert text.startswith("- Always run the linter.\n\n### Recallable memory\n")
    index = [line for line in text.splitlines() if line.startswith("- block-")]
    assert index == [f"- block-{i:03d}: fact {i}" for i in range(499, 439, -1)]
    assert "440 more blocks are not listed" in text and "search_memory" in text
    assert got["counts"] == {
        "blocks": 500,
        "shown": 60,
        "hidden": 440,
        "global_core_bytes": 25,
        "project_core_bytes": 0,
    }
    assert got["tokens"] == (len(text) + 3) // 4


def test_project_blocks_shadow_global_ones(client: TestClient, clock: FakeClock) -> None:
    remember(client, "style", "global style", description="global style")
    clock.advance(seconds=1)
    remember(client, "style", "project style", REPO, description="project style")
    remember(client, "only-global", "g", description="only global")
    client.post(
        "/v1/memory/core/notes", params={"repo_root": REPO}, json={"note": "Project gotcha."}
    )
    text = client.get("/v1/memory/context", params={"repo_root": REPO}).json()["content"]
    assert "- style: project style" in text and "global style" not in text
    assert "- only-global: only global" in text and "Project gotcha." in text
    assert "- style: global style" in client.get("/v1/memory/context").json()["content"]


def test_tools_definitions_and_calls(client: TestClient) -> None:
    tools = client.get("/v1/memory/tools").json()["tools"]
    assert [t["function"]["name"] for t in tools] == [
        "remember",
        "recall",
        "forget",
        "search_memory",
    ]
    for tool in tools:
        assert tool["type"] == "function" and len(tool["function"]["description"]) > 80
        assert tool["function"]["parameters"]["type"] == "object"
    call = lambda name, args: client.post(  # noqa: E731
        "/v1/memory/tools/call",
        json={
            "name": name,
            "arguments": args,
            "session_id": "01J0000000000000000000ABCD",
            "repo_root": REPO,
        },
    ).json()["content"]
    assert call(
        "remember", {"note": "Tests need Docker running.", "title": "Tests need Docker"}
    ).startswith("Remembered as 'tests-need-docker'")
    assert "Already remembered" in call(
        "remember", json.dumps({"note": "tests need docker running", "title": "Dup"})
    )
    assert call("remember", {"note": "Prefer small commits."}) == "Added to core memory."
    assert call("recall", {"name": "tests-need-docker"}).endswith("Tests need Docker running.\n")
    assert "No memory block is named 'ghost'" in call("recall", {"name": "ghost"})
    assert "secret" in call(
        "remember", {"note": "token ghp_1234567890abcdefghijklmnopqrstuvwxyzAB", "title": "t"}
    )
    text = client.get(
        "/v1/memory/blocks/tests-need-docker", params={"repo_root": REPO, "track": "false"}
    ).json()
    assert "source_session: 01J0000000000000000000ABCD" in text["content"]
    call("remember", {"note": "The staging database is on port 5433.", "title": "Staging db"})
    assert call("search_memory", {"query": "which port does staging use"}) == (
        f"- staging-db (project:{project_slug(REPO)}): The staging database is on port 5433."
    )
    assert call("search_memory", {"query": "kubernetes"}) == "No memory matches that."
    out_of_bounds = {"name": "search_memory", "arguments": {"query": "port", "k": 0}}
    r = client.post("/v1/memory/tools/call", json=out_of_bounds)  # the bound is the schema's
    assert r.status_code == 422 and "k must be from 1 to 50" in r.json()["detail"]
    assert call("forget", {"name": "tests-need-docker"}).startswith("Forgot 'tests-need-docker'")
    block_entries = client.get("/v1/journal", params={"op": "memory.write"}).json()["items"]
    assert block_entries and all(
        e["actor"] == "tool" and e["session"] == "01J0000000000000000000ABCD" for e in block_entries
    )
    assert (
        client.post("/v1/memory/tools/call", json={"name": "nope", "arguments": {}}).status_code
        == 422
    )


def test_procedures_are_procedural_blocks(client: TestClient) -> None:
    failure = {
        "outcome": "failure",
        "task": "provider verification",
        "tools": ["bash"],
        "error": "missing PROVIDER_BASE_URL",
    }
    r = client.post("/v1/memory/procedures", json=failure)
    assert r.status_code == 201
    block = r.json()
    assert block["type"] == "procedural" and block["tags"] == ["failure", "bash"]
    body = client.get(f"/v1/memory/blocks/{block['name']}", params={"track": "false"}).json()[
        "body"
    ]
    assert "**Task:** provider verification" in body and "missing PROVIDER_BASE_URL" in body
    again = client.post("/v1/memory/procedures", json=failure)
    assert again.status_code == 200 and again.json()["merged"] is True
    ok = client.post(
        "/v1/memory/procedures",
        json={
            "outcome": "success",
            "task": "release preflight",
            "tools": ["bash", "grep"],
            "result": "checks passed",
        },
    )
    assert ok.json()["name"] == "release-preflight-success"
    assert [
        b["name"]
        for b in client.get("/v1/memory/blocks", params={"type": "procedural"}).json()["items"]
    ] == ["release-preflight-success", "provider-verification-failure"]


def test_relations(client: TestClient) -> None:
    remember(client, "old-rule", "use npm")
    remember(client, "other", "deploy on fridays")
    remember(client, "new-rule", "use pnpm", supersedes=["old-rule"], conflicts_with=["other"])
    names = {
        b["name"]: b
        for b in client.get("/v1/memory/blocks", params={"include_archived": "true"}).json()[
            "items"
        ]
    }
    assert names["old-rule"]["archived"] is True
    assert names["other"]["conflicts_with"] == ["new-rule"] and names["new-rule"][
        "conflicts_with"
    ] == ["other"]
    text = client.get("/v1/memory/context").json()["content"]
    assert "old-rule" not in text and "- other: deploy on fridays (conflicts with new-rule)" in text
    bad = client.post(
        "/v1/memory/blocks", json={"name": "x", "content": "y", "supersedes": ["ghost"]}
    )
    assert bad.status_code == 404 and "ghost" in bad.json()["detail"]  # named, not there
    itself = {"name": "x", "content": "y", "conflicts_with": ["x"]}
    assert client.post("/v1/memory/blocks", json=itself).status_code == 422


def test_prune_archives_stale_unimportant_blocks_and_protects_the_rest(
    client: TestClient, clock: FakeClock
) -> None:
    remember(client, "stale", "old and minor", importance=0.1)
    remember(client, "pinned", "old but pinned", importance=0.1, pinned=True)
    remember(client, "recalled", "old but used", importance=0.1)
    remember(client, "important", "old but important", importance=0.9)
    remember(client, "related", "old with relation", importance=0.1, conflicts_with=["important"])
    remember(client, "replaced", "an old rule", importance=0.1)
    remember(client, "rule", "the rule now", importance=0.1, supersedes=["replaced"])
    remember(client, "twice", "said twice", importance=0.1)
    client.post("/v1/memory/blocks", json={"name": "again", "content": "Said  twice"})  # merged
    made = "---\nimportance: 0.1\nconsolidated: true\n---\nMerged by consolidation.\n"
    client.put(
        "/v1/memory/blocks/distilled", content=made, headers={"Content-Type": "text/markdown"}
    )
    for _ in range(3):
        client.get("/v1/memory/blocks/recalled")
    clock.advance(days=200)
    remember(client, "fresh", "new and minor", importance=0.1)
    dry = client.post("/v1/memory/prune", json={"max_age_days": 90, "max_importance": 0.3}).json()
    assert dry["dry_run"] is True and [a["name"] for a in dry["archived"]] == ["stale"]
    assert {p["name"]: p["reason"] for p in dry["protected"]} == {
        "pinned": "pinned",
        "recalled": "recalled 3 times",
        "related": "related: conflicts with important",
        "important": "related: conflicts with related",
        "rule": "related: replaces replaced",
        "twice": "absorbed 1 duplicate",
        "distilled": "consolidated",
    }
    assert client.get("/v1/memory/blocks/stale", params={"track": "false"}).status_code == 200
    done = client.post("/v1/memory/prune", json={"max_age_days": 90, "dry_run": False}).json()
    assert [a["name"] for a in done["archived"]] == ["stale"]
    assert client.get("/v1/memory/blocks/stale", params={"track": "false"}).status_code == 404
    archives = client.get("/v1/journal", params={"op": "memory.archive"}).json()["items"]
    why = {e["name"]: e["detail"] for e in archives}
    assert why["replaced"] == {"reason": "superseded by rule", "trigger": "rule written by api"}
    assert why["stale"]["reason"].startswith("not updated or recalled for 200 days")
    assert why["stale"]["trigger"] == "prune asked for"
    listed = client.get("/v1/memory/blocks").json()["items"]
    assert {b["name"]: b["recall_count"] for b in listed}["recalled"] == 3


FAKE_SECRETS = {
    "OpenAI API key": "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5",
    "Anthropic API key": "sk-ant-api03-" + "x7Yz9Ab3dE5gH7jK9mN1pQ3sT5vW7y",
    "AWS access key": "AKIA" + "IOSFODNN7EXAMPLQ",
    "GitHub token": "ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a",
    "Slack token": "xoxb-" + "2048-9999-AbCdEfGhIjKlMnOp",
    "Google API key": "AIza" + "SyA-1234567890abcdefghijklmnopqrstu",
    "Stripe key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "JSON Web Token": "eyJhbGciOiJIUzI1NiJ9."
    + "eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "bearer token": "Authorization: Bearer " + "abcDEF123456ghiJKL789012mnoPQR",
    "password assignment": 'DB_PASSWORD = "' + 'hunter2-correct-horse"',
    "private key": "-----BEGIN RSA "
    + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    "Hugging Face token": "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
}


@pytest.mark.parametrize("kind", sorted(FAKE_SECRETS))
def test_secrets_are_refused_everywhere_without_echo(
    client: TestClient, home: Path, kind: str
) -> None:
    secret = FAKE_SECRETS[kind]
    text = f"Deploy notes.\nThe credential is {secret} for now."
    attempts = [
        client.post("/v1/memory/blocks", json={"name": "deploy", "content": text}),
        client.post("/v1/memory/remember", json={"note": text}),
        client.put("/v1/memory/core", json={"content": text}),
        client.post(
            "/v1/memory/blocks", json={"name": "deploy", "content": "ok", "description": text}
        ),
    ]
    for r in attempts:
        assert r.status_code == 422 and r.json()["code"] == "secret_detected", r.text
        assert secret not in r.text and secret.split()[-1] not in r.text
        assert r.json()["errors"][0]["line"] in (1, 2)
    assert not list((home / "memory").rglob("*.md"))


def test_ordinary_notes_and_code_are_not_refused() -> None:
    """Real conversation turns, tool results and tool arguments from the fixtures."""
    notes: list[str] = []
    for record in json.loads((FIXTURES / "openai-chat/tau-bench/gpt-4o-airline.json").read_text()):
        for message in record["traj"]:
            if isinstance(message.get("content"), str) and message["content"].strip():
                notes.append(message["content"])
    transcript = (
        FIXTURES / "claude-code/claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    )
    for line in transcript.read_text().splitlines():
        for part in json.loads(line).get("message", {}).get("content", []) or []:
            if (
                isinstance(part, dict)
                and part.get("type") == "tool_result"
                and isinstance(part.get("content"), str)
            ):
                notes.append(part["content"][:2000])
            if isinstance(part, dict) and part.get("type") == "tool_use":
                notes.append(json.dumps(part.get("input"))[:2000])
    assert len(notes) >= 1000
    refused = [n for n in notes if scan_text(n)]
    assert len(refused) <= len(notes) // 100, refused[:5]


def test_scheduled_prune_is_off_by_default_and_runs_when_set(home: Path, clock: FakeClock) -> None:
    import time

    from ..conftest import make_client

    with make_client(home, clock) as client:
        remember(client, "stale", "old and minor", importance=0.1)
        clock.advance(days=200)
        time.sleep(0.3)
        assert client.get("/v1/memory/blocks/stale", params={"track": "false"}).status_code == 200
    with make_client(home, clock, memory_prune_every_hours=0.00005) as client:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if client.get("/v1/memory/blocks/stale", params={"track": "false"}).status_code == 404:
                break
            time.sleep(0.05)
        assert client.get("/v1/memory/blocks/stale", params={"track": "false"}).status_code == 404
        archived = client.get("/v1/journal", params={"op": "memory.archive"}).json()["items"]
        assert archived[0]["actor"] == "consolidator"
