"""No secret is kept in memory: every write path and every stored field refuses one (422
naming kind and place, never the secret, every file as it was), and a secret left in a
file by hand is journaled as such, withheld from prompts, tools and search, shown
flagged, and cleared by the edit that removes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from aster_persist.api.plumbing import running

from ..conftest import make_client, snapshot, wait_until

MD = {"content-type": "text/markdown"}
TOKEN = "ghp_" + "AIxNKu8iS2G8NPRVdD53X83RZJzzzzgEOzdm"
KEY = "sk_live_" + "q4i9DoV8gz4FkQ1okTBGzvAm"
PASSWORD = "Qx7pL2" + "vR9mKd"
SECRETS = (TOKEN, KEY, PASSWORD)


def existing(client: TestClient) -> None:
    r = client.post("/v1/memory/blocks", json={"name": "deploy", "content": "Deploy with make."})
    assert r.status_code == 201, r.text


Attempt = tuple[str, str, dict[str, Any]]

# (method, path, request keywords): each writes a secret in one field or another
ATTEMPTS: dict[str, Attempt] = {
    "block content": ("POST", "/v1/memory/blocks", {"json": {"name": "b", "content": TOKEN}}),
    "block description": (
        "POST",
        "/v1/memory/blocks",
        {"json": {"name": "b", "content": "ok", "description": f"uses {KEY}"}},
    ),
    "block tags": (
        "POST",
        "/v1/memory/blocks",
        {"json": {"name": "b", "content": "ok", "tags": ["ci", TOKEN]}},
    ),
    "block extra key": (
        "POST",
        "/v1/memory/blocks",
        {"json": {"name": "b", "content": "ok", "x_api_key": "dIKnT30fK0skBaHm" + "sWWdawFg"}},
    ),
    "block name": (
        "POST",
        "/v1/memory/blocks",
        {"json": {"name": "glpat-" + "w3qly7zkuvqdt7s8stqc", "content": "ok"}},
    ),
    "block title": (
        "POST",
        "/v1/memory/remember",
        {"json": {"note": "ok", "title": f"password={PASSWORD}"}},
    ),
    "put markdown body": (
        "PUT",
        "/v1/memory/blocks/deploy",
        {"content": f"---\ndescription: d\n---\nexport GITHUB_TOKEN={TOKEN}\n", "headers": MD},
    ),
    "put markdown frontmatter": (
        "PUT",
        "/v1/memory/blocks/deploy",
        {"content": f"---\ndescription: d\nstripe: {KEY}\n---\nbody\n", "headers": MD},
    ),
    "put frontmatter password": (
        "PUT",
        "/v1/memory/blocks/deploy",
        {"content": f"---\ndb_password: {PASSWORD}\n---\nbody\n", "headers": MD},
    ),
    "put json": (
        "PUT",
        "/v1/memory/blocks/deploy",
        {"json": {"content": "body", "tags": [KEY]}},
    ),
    "patch description": (
        "PATCH",
        "/v1/memory/blocks/deploy",
        {"json": {"description": f"token {TOKEN}"}},
    ),
    "patch tags": ("PATCH", "/v1/memory/blocks/deploy", {"json": {"tags": [KEY]}}),
    "core markdown": (
        "PUT",
        "/v1/memory/core",
        {"content": f"- PGPASSWORD={PASSWORD} psql\n", "headers": MD},
    ),
    "core json": ("PUT", "/v1/memory/core", {"json": {"content": f"- key {KEY}\n"}}),
    "core note": (
        "POST",
        "/v1/memory/core/notes",
        {"json": {"note": f"the password is {PASSWORD}"}},
    ),
    "remember note": ("POST", "/v1/memory/remember", {"json": {"note": f"use {TOKEN}"}}),
    "remember titled": (
        "POST",
        "/v1/memory/remember",
        {"json": {"note": f"PASSWORD: {PASSWORD}", "title": "db"}},
    ),
    "remember tags": (
        "POST",
        "/v1/memory/remember",
        {"json": {"note": "ok", "title": "t", "tags": [TOKEN]}},
    ),
    "procedure task": (
        "POST",
        "/v1/memory/procedures",
        {"json": {"outcome": "success", "task": f"deploy with {KEY}"}},
    ),
    "procedure result": (
        "POST",
        "/v1/memory/procedures",
        {"json": {"outcome": "success", "task": "deploy", "result": f"token={TOKEN}"}},
    ),
    "procedure error": (
        "POST",
        "/v1/memory/procedures",
        {"json": {"outcome": "failure", "task": "deploy", "error": f"401 for {KEY}"}},
    ),
    "procedure tools": (
        "POST",
        "/v1/memory/procedures",
        {"json": {"outcome": "success", "task": "deploy", "tools": [TOKEN]}},
    ),
}


# A session id is a ULID wherever it is named, so a secret can never be one: it is
# refused as a bad name before anything else is read, and never echoed.
SESSION_IDS = {
    "block session_id": (
        "POST",
        "/v1/memory/blocks",
        {"json": {"name": "b", "content": "ok", "session_id": TOKEN}},
    ),
    "core note session_id": (
        "POST",
        "/v1/memory/core/notes",
        {"json": {"note": "ok", "session_id": KEY}},
    ),
    "remember session_id": (
        "POST",
        "/v1/memory/remember",
        {"json": {"note": "ok", "title": "t", "session_id": TOKEN}},
    ),
    "procedure session_id": (
        "POST",
        "/v1/memory/procedures",
        {"json": {"outcome": "success", "task": "deploy", "session_id": KEY}},
    ),
    "recall session_id": (
        "GET",
        "/v1/memory/blocks/deploy",
        {"params": {"session_id": TOKEN}},
    ),
    "tool call session_id": (
        "POST",
        "/v1/memory/tools/call",
        {"json": {"name": "recall", "arguments": {"name": "deploy"}, "session_id": KEY}},
    ),
}


@pytest.mark.parametrize("attempt", sorted(SESSION_IDS))
def test_a_secret_given_as_a_session_id_is_refused_as_no_session_id(
    client: TestClient, home: Path, attempt: str
) -> None:
    existing(client)
    before = snapshot(home)
    method, path, request = SESSION_IDS[attempt]
    r = client.request(method, path, **request)
    assert r.status_code == 422 and r.json()["code"] == "invalid_name", r.text
    assert not any(secret in r.text for secret in SECRETS)
    assert snapshot(home) == before


@pytest.mark.parametrize("attempt", sorted(ATTEMPTS))
def test_every_write_path_and_field_refuses_a_secret(
    client: TestClient, home: Path, attempt: str
) -> None:
    existing(client)
    before = snapshot(home)
    method, path, request = ATTEMPTS[attempt]
    r = client.request(method, path, **request)
    assert r.status_code == 422, r.text
    problem = r.json()
    assert problem["code"] == "secret_detected"
    assert problem["errors"] and all(e["kind"] and e["loc"] for e in problem["errors"])
    assert not any(secret in r.text for secret in SECRETS)
    assert snapshot(home) == before, "nothing was written, the journal included"


def test_the_place_named_is_the_field(client: TestClient) -> None:
    existing(client)
    where = {
        "block description": "description",
        "block tags": "tags",
        "block extra key": "x_api_key",
        "block name": "name",
        "put markdown frontmatter": "stripe",
        "put frontmatter password": "db_password",
        "patch tags": "tags",
    }
    for attempt, loc in where.items():
        method, path, request = ATTEMPTS[attempt]
        r = client.request(method, path, **request)
        assert loc in {e["loc"] for e in r.json()["errors"]}, (attempt, r.text)


TOOL_CALLS = [
    {"name": "remember", "arguments": {"note": f"deploy token {TOKEN}"}},
    {"name": "remember", "arguments": {"note": f"DB_PASSWORD={PASSWORD}", "title": "db"}},
    {"name": "remember", "arguments": {"note": "ok", "title": f"key {KEY}"}},
    {"name": "remember", "arguments": json.dumps({"note": f"{KEY}"})},
]


@pytest.mark.parametrize("call", TOOL_CALLS, ids=lambda c: f"{c['name']}-{sorted(c)}")
def test_the_agent_tools_refuse_a_secret_in_words_for_the_model(
    client: TestClient, home: Path, call: dict[str, Any]
) -> None:
    existing(client)
    before = snapshot(home)
    r = client.post("/v1/memory/tools/call", json=call)
    assert r.status_code in (200, 422), r.text
    text = r.json().get("content") or r.json()["detail"]
    assert "secret" in text.lower()
    assert not any(secret in r.text for secret in SECRETS)
    assert snapshot(home) == before


def test_a_real_session_id_is_kept_as_provenance(client: TestClient, home: Path) -> None:
    sid = client.post("/v1/sessions", json={"repo_root": "/srv/app"}).json()["id"]
    r = client.post(
        "/v1/memory/blocks", json={"name": "p", "content": "Use make.", "session_id": sid}
    )
    assert r.status_code == 201, r.text
    assert f"source_session: {sid}" in (home / "memory" / "p.md").read_text()


# -- by hand ------------------------------------------------------------------------------


def hand_entries(client: TestClient, name: str, count: int) -> list[dict[str, Any]]:
    def entries() -> list[dict[str, Any]] | None:
        items = client.get("/v1/journal", params={"limit": 1000}).json()["items"]
        mine = [e for e in items if e["actor"] == "watcher" and e["name"] == name]
        return mine if len(mine) >= count else None

    return wait_until(entries)  # type: ignore[no-any-return]


def outside_the_file(home: Path, *files: str) -> bytes:
    """Every byte the daemon keeps (journal, search index, queue…) but the edited files."""
    return b"".join(
        data for rel, data in snapshot_all(home).items() if rel not in files and rel != ".lock"
    )


def snapshot_all(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in home.rglob("*") if p.is_file()}


def test_a_secret_left_by_hand_is_journaled_withheld_flagged_and_cleared(home: Path) -> None:
    with make_client(home) as client:
        wait_until(lambda: client.get("/v1/info").json().get("watching"))
        existing(client)
        client.post("/v1/memory/remember", json={"note": "Run the linter before pushing."})
        folder = home / "memory"
        block, core = folder / "deploy.md", folder / "ASTER.md"
        clean_block, clean_core = block.read_text(), core.read_text()
        block.write_text(clean_block + f"The CI uses {TOKEN} to push tags.\n")
        core.write_text(clean_core + f"- PASSWORD: {PASSWORD}\n")

        # journaled as such: kind and place, never the secret, the clean content before
        (edit,) = hand_entries(client, "deploy", 1)
        (core_edit,) = hand_entries(client, "ASTER.md", 1)
        assert [(s["kind"], s["loc"]) for s in edit["detail"]["secrets"]] == [
            ("GitHub token", "content")
        ]
        assert edit["detail"]["secrets"][0]["line"] == clean_block.count("\n") + 1
        assert [s["kind"] for s in core_edit["detail"]["secrets"]] == ["password assignment"]
        assert edit["before"]["content"] == clean_block
        journal = (home / "journal.jsonl").read_text()
        assert TOKEN not in journal and PASSWORD not in journal

        # shown flagged, so a person can find it
        listed = {b["name"]: b for b in client.get("/v1/memory/blocks").json()["items"]}
        assert listed["deploy"]["secrets"][0]["kind"] == "GitHub token"
        got = client.get("/v1/memory/blocks/deploy", params={"track": "false"}).json()
        assert got["secrets"] and TOKEN in got["content"]  # the person's own file
        assert client.get("/v1/memory/core").json()["secrets"][0]["line"] == 2

        # withheld from the prompt, the tools and search
        context = client.get("/v1/memory/context").json()
        assert TOKEN not in context["content"] and PASSWORD not in context["content"]
        assert "- deploy:" not in context["content"]
        assert "Run the linter" not in context["content"] and "withheld" in context["content"]
        assert {(w["name"], w["secrets"][0]["kind"]) for w in context["withheld"]} == {
            ("deploy", "GitHub token"),
            ("ASTER.md", "password assignment"),
        }
        queried = client.get("/v1/memory/context", params={"query": "CI tags push"}).json()
        assert TOKEN not in queried["content"]
        recall = client.post(
            "/v1/memory/tools/call", json={"name": "recall", "arguments": {"name": "deploy"}}
        ).json()["content"]
        assert "withheld" in recall and TOKEN not in recall
        for query in ("push tags", "Deploy make", TOKEN):
            search = client.get("/v1/search", params={"q": query, "kind": "memory"})
            assert search.status_code == 200 and TOKEN not in search.text
            assert "deploy" not in [h.get("name") for h in search.json()["items"]]
            similar = client.get("/v1/memory/search", params={"q": query})
            assert TOKEN not in similar.text and "deploy" not in similar.text
        tool_search = client.post(
            "/v1/memory/tools/call",
            json={"name": "search_memory", "arguments": {"query": "deploy push tags"}},
        ).json()["content"]
        assert "deploy" not in tool_search
        assert TOKEN.encode() not in outside_the_file(home, "memory/deploy.md", "memory/ASTER.md")
        assert PASSWORD.encode() not in outside_the_file(
            home, "memory/deploy.md", "memory/ASTER.md"
        )

        # nothing is written over it until a person removes it
        r = client.patch("/v1/memory/blocks/deploy", json={"tags": ["ci"]})
        assert r.status_code == 422 and "left there by hand" in r.json()["detail"]
        r = client.post("/v1/memory/core/notes", json={"note": "Another gotcha."})
        assert r.status_code == 422 and "left there by hand" in r.json()["detail"]
        told = client.post(
            "/v1/memory/tools/call",
            json={"name": "remember", "arguments": {"note": "Another gotcha."}},
        ).json()["content"]
        assert "left there by hand" in told and PASSWORD not in told

        # the edit that removes it clears the flag; the journal keeps no secret of it
        block.write_text(clean_block + "The CI pushes tags with its own token.\n")
        core.write_text(clean_core)
        fix = hand_entries(client, "deploy", 2)[-1]
        assert "content" not in fix["before"] and fix["before"]["secrets"]
        assert "secrets" not in fix["detail"]
        hand_entries(client, "ASTER.md", 2)
        listed = {b["name"]: b for b in client.get("/v1/memory/blocks").json()["items"]}
        assert listed["deploy"]["secrets"] == []
        assert client.get("/v1/memory/core").json()["secrets"] == []
        context = client.get("/v1/memory/context").json()
        assert "- deploy:" in context["content"] and "Run the linter" in context["content"]
        assert context["withheld"] == []
        wait_until(
            lambda: (
                "deploy"
                in [
                    h["name"]
                    for h in client.get("/v1/memory/search", params={"q": "tags"}).json()["items"]
                ]
            )
        )

        # the fix cannot be reverted into the secret; the hand edit can be reverted away
        r = client.post(f"/v1/journal/{fix['id']}/revert")
        assert r.status_code == 422 and r.json()["code"] == "secret_detected"
        assert TOKEN not in r.text and TOKEN not in block.read_text()
        r = client.post(f"/v1/journal/{edit['id']}/revert")
        assert r.status_code == 200, r.text
        assert block.read_text() == clean_block
        journal = (home / "journal.jsonl").read_text()
        assert TOKEN not in journal and PASSWORD not in journal


def test_a_secret_left_in_the_archive_comes_back_flagged(home: Path) -> None:
    with make_client(home, watch=False) as client:
        existing(client)
        assert client.post("/v1/memory/blocks/deploy/archive").status_code == 200
        archived = home / "memory" / ".archive" / "deploy.md"
        archived.write_text(archived.read_text() + f"key: {KEY}\n")
        r = client.post("/v1/memory/blocks/deploy/restore")
        assert r.status_code == 200 and r.json()["secrets"][0]["kind"] == "Stripe key"
        assert "- deploy:" not in client.get("/v1/memory/context").json()["content"]
        assert KEY not in (home / "journal.jsonl").read_text()


def test_a_revert_that_cannot_be_journaled_puts_a_flagged_file_back_exactly(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal withholds a flagged file's content, so undoing a failed revert must not
    rebuild the file from the journal's state."""
    with make_client(home, watch=False) as client:
        existing(client)
        path = home / "memory" / "deploy.md"
        path.write_text(path.read_text() + f"token {TOKEN}\n")
        flagged_bytes = path.read_bytes()
        assert client.portal is not None
        (edit,) = client.portal.call(running(client.app).memory.reconcile, [path])
        assert edit["detail"]["secrets"]
        journal = running(client.app).journal
        record = journal.record

        def failing(op: str, **fields: Any) -> Any:
            if op == "memory.revert":
                raise OSError(28, "No space left on device")
            return record(op, **fields)

        monkeypatch.setattr(journal, "record", failing)
        r = client.post(f"/v1/journal/{edit['id']}/revert")
        assert r.status_code == 507, r.text
        assert path.read_bytes() == flagged_bytes
        monkeypatch.setattr(journal, "record", record)
        assert client.post(f"/v1/journal/{edit['id']}/revert").status_code == 200
        assert TOKEN not in path.read_text()
