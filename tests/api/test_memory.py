"""Memory over HTTP: core memory, blocks, duplicates, ETags, and byte-for-byte reverts."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from aster_persist.api.plumbing import running
from aster_persist.schemas.names import project_slug

from ..conftest import REPO, FakeClock

ODD = """---
name: hand-written
description: Written by a person   # with a comment
tags:
  - build
  - 'quoted tag'
importance: 0.4
x_owner: {team: infra, since: 2024}   # unknown keys are kept
# a comment between keys
pinned: no
---
Run `make` twice: the first build generates code.
"""


def block_path(home: Path, name: str, repo: str | None = None, archived: bool = False) -> Path:
    folder = home / "memory" if repo is None else home / "memory" / "projects" / project_slug(repo)
    return (folder / ".archive" if archived else folder) / f"{name}.md"


def files(home: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(home)): p.read_bytes() for p in sorted((home / "memory").rglob("*.md"))
    }


def test_remember_recall_forget(client: TestClient, home: Path) -> None:
    r = client.post(
        "/v1/memory/blocks",
        json={
            "title": "API conventions",
            "content": "Handlers return problem+json.",
            "tags": ["api"],
        },
    )
    assert r.status_code == 201 and r.json()["name"] == "api-conventions"
    assert block_path(home, "api-conventions").exists()
    got = client.get("/v1/memory/blocks/api-conventions")
    assert (
        got.json()["body"] == "Handlers return problem+json.\n"
        and got.headers["etag"] == r.headers["etag"]
    )
    assert (
        client.get("/v1/memory/blocks", params={"tag": "api"}).json()["items"][0]["name"]
        == "api-conventions"
    )
    assert client.get("/v1/memory/blocks", params={"tag": "nope"}).json()["items"] == []
    assert client.delete("/v1/memory/blocks/api-conventions").status_code == 204
    assert client.get("/v1/memory/blocks/api-conventions").status_code == 404
    ops = [e["op"] for e in client.get("/v1/journal", params={"op": "memory"}).json()["items"]]
    assert ops == ["memory.write", "memory.recall", "memory.delete"]


def test_duplicates_merge_and_name_conflicts(client: TestClient, home: Path) -> None:
    client.post(
        "/v1/memory/blocks",
        json={
            "name": "tabs",
            "content": "Use tabs, not spaces!",
            "tags": ["style"],
            "importance": 0.5,
        },
    )
    dup = client.post(
        "/v1/memory/blocks",
        json={
            "name": "other",
            "content": "use TABS not   spaces",
            "tags": ["go"],
            "session_id": "01J0000000000000000000ABCD",
        },
    )
    assert dup.status_code == 200 and dup.json()["merged"] is True and dup.json()["name"] == "tabs"
    assert dup.json()["tags"] == ["style", "go"] and dup.json()["importance"] == 0.6
    assert not block_path(home, "other").exists()
    taken = client.post("/v1/memory/blocks", json={"name": "tabs", "content": "Something else"})
    assert taken.status_code == 409 and taken.json()["code"] == "name_taken"
    replaced = client.post(
        "/v1/memory/blocks", json={"name": "tabs", "content": "Something else", "replace": True}
    )
    assert replaced.status_code == 201
    assert (
        client.get("/v1/memory/blocks/tabs", params={"track": "false"}).json()["body"]
        == "Something else\n"
    )


def test_core_memory_notes_and_etags(client: TestClient, home: Path) -> None:
    assert (
        client.post("/v1/memory/remember", json={"note": "Never push to main."}).status_code == 201
    )
    again = client.post("/v1/memory/core/notes", json={"note": "never push to   MAIN"})
    assert again.status_code == 200 and again.json()["duplicate"] is True
    core = client.get("/v1/memory/core")
    assert core.json()["content"] == "- Never push to main.\n"
    etag = core.headers["etag"]
    assert client.get("/v1/memory/core", headers={"If-None-Match": etag}).status_code == 304
    ok = client.put(
        "/v1/memory/core",
        content="- edited by hand\n",
        headers={"content-type": "text/markdown", "If-Match": etag},
    )
    assert ok.status_code == 200
    stale = client.put("/v1/memory/core", json={"content": "- agent"}, headers={"If-Match": etag})
    assert stale.status_code == 412
    assert (home / "memory" / "ASTER.md").read_text() == "- edited by hand\n"


def test_scopes_are_separate(client: TestClient, home: Path) -> None:
    client.post(
        "/v1/memory/blocks",
        params={"repo_root": REPO},
        json={"name": "local", "content": "project fact"},
    )
    client.post("/v1/memory/blocks", json={"name": "shared", "content": "global fact"})
    assert block_path(home, "local", REPO).exists()
    assert [
        b["name"]
        for b in client.get("/v1/memory/blocks", params={"repo_root": REPO}).json()["items"]
    ] == ["local"]
    assert [b["name"] for b in client.get("/v1/memory/blocks").json()["items"]] == ["shared"]
    assert client.get("/v1/memory/blocks/local").status_code == 404


def test_hand_written_block_survives_patch_byte_for_byte(client: TestClient, home: Path) -> None:
    path = block_path(home, "hand-written")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(ODD)
    assert client.portal is not None  # the watcher does this later; here it is done now
    client.portal.call(running(client.app).memory.reconcile, [path])
    r = client.patch(
        "/v1/memory/blocks/hand-written", json={"pinned": True, "tags": ["build", "codegen"]}
    )
    assert r.status_code == 200 and r.json()["pinned"] is True
    text = path.read_text()
    changed = {"pinned", "tags", "updated_at"}
    kept = [
        line
        for line in ODD.splitlines()
        if not any(line.startswith(k + ":") or line.startswith("  - ") for k in changed)
    ]
    for line in kept:
        assert line in text.splitlines(), line
    assert "tags: [build, codegen]" in text and "pinned: true" in text
    assert text.endswith("---\nRun `make` twice: the first build generates code.\n")


def test_patch_with_stale_etag_is_412(client: TestClient) -> None:
    r = client.post("/v1/memory/blocks", json={"name": "n", "content": "c"})
    client.patch("/v1/memory/blocks/n", json={"pinned": True})
    stale = client.patch(
        "/v1/memory/blocks/n", json={"pinned": False}, headers={"If-Match": r.headers["etag"]}
    )
    assert stale.status_code == 412 and stale.json()["code"] == "precondition_failed"


def test_every_change_reverts_byte_for_byte(client: TestClient, home: Path) -> None:
    steps = [
        lambda: client.post("/v1/memory/blocks", json={"name": "a", "content": "first"}),
        lambda: client.post(
            "/v1/memory/blocks", json={"name": "a", "content": "second", "replace": True}
        ),
        lambda: client.patch("/v1/memory/blocks/a", json={"importance": 0.9}),
        lambda: client.post(
            "/v1/memory/blocks", json={"name": "b", "content": "SECOND."}
        ),  # merge into a
        lambda: client.post("/v1/memory/blocks/a/archive"),
        lambda: client.post("/v1/memory/blocks/a/restore"),
        lambda: client.post("/v1/memory/remember", json={"note": "a note"}),
        lambda: client.put("/v1/memory/core", json={"content": "- rewritten\n"}),
        lambda: client.delete("/v1/memory/blocks/a"),
    ]
    states = [files(home)]
    for step in steps:
        assert step().status_code < 300
        states.append(files(home))
    changes = [
        e
        for e in client.get("/v1/journal", params={"op": "memory"}).json()["items"]
        if e["op"] != "memory.recall"
    ]
    assert len(changes) == len(steps)
    for i in reversed(range(len(steps))):
        r = client.post(f"/v1/journal/{changes[i]['id']}/revert")
        assert r.status_code == 200, r.text
        assert files(home) == states[i], f"reverting step {i} ({changes[i]['op']})"
    redo = client.get("/v1/journal", params={"op": "memory.revert"}).json()["items"][-1]
    client.post(f"/v1/journal/{redo['id']}/revert")
    assert files(home) == states[1]


def test_bad_names_and_bodies(client: TestClient, home: Path) -> None:
    before = files(home)
    for name in ("Upper", "-lead", "a" * 65, "..", "a.b"):
        r = client.post("/v1/memory/blocks", json={"name": name, "content": "x"})
        assert r.status_code == 422, name
    assert client.get("/v1/memory/blocks/..%2Fescape").status_code in (404, 422)
    assert client.patch("/v1/memory/blocks/x", json={"bogus": 1}).status_code == 422
    assert (
        client.put(
            "/v1/memory/blocks/x",
            content="---\n[not: a mapping\n---\nbody",
            headers={"content-type": "text/markdown"},
        ).status_code
        == 422
    )
    assert client.post("/v1/journal/01J0000000000000000000ABCD/revert").status_code == 404
    assert files(home) == before


def test_hot_routes_answer_like_the_documented_ones(client: TestClient, home: Path) -> None:
    """Remember and recall take a fast path for their plain form; every other form is
    answered by the framework, so both read the same."""
    made = client.post(
        "/v1/memory/blocks", params={"repo_root": REPO}, json={"name": "fast", "content": "x y"}
    )
    assert made.status_code == 201 and made.json()["scope"].startswith("project:")
    assert block_path(home, "fast", REPO).exists()
    plain = client.get("/v1/memory/blocks/fast", params={"repo_root": REPO, "track": "false"})
    # `track=no` and a repeated parameter are not the plain form: the framework answers.
    framework = client.get(f"/v1/memory/blocks/fast?repo_root={REPO}&track=no&track=no")
    assert plain.status_code == framework.status_code == 200
    assert plain.json() == framework.json()
    assert plain.headers["etag"] == framework.headers["etag"] == made.headers["etag"]
    markdown = client.get(
        "/v1/memory/blocks/fast", params={"repo_root": REPO}, headers={"accept": "text/markdown"}
    )
    assert markdown.headers["content-type"].startswith("text/markdown")
    assert markdown.text == plain.json()["content"]
    assert client.get("/v1/memory/blocks/fast?track=maybe").status_code == 422
    # A body that does not validate gets the framework's problem, fields named.
    bad = client.post("/v1/memory/blocks", json={"name": "b", "content": "x", "importance": 7})
    assert bad.status_code == 422
    assert bad.headers["content-type"] == "application/problem+json"
    assert "importance" in bad.text
    missing = client.get("/v1/memory/blocks/nope")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    ops = [e["op"] for e in client.get("/v1/journal", params={"op": "memory"}).json()["items"]]
    assert ops == ["memory.write", "memory.recall"]  # track=false/no reads are not journaled


def test_a_write_names_its_project_in_the_query_and_never_in_the_body(
    client: TestClient, home: Path
) -> None:
    """One place for the project: a body that names one is refused by name (it was
    once ignored, and the write went to the global scope), and nothing is written."""
    for path, body in (
        ("/v1/memory/blocks", {"name": "db", "content": "5433"}),
        ("/v1/memory/remember", {"note": "a note"}),
        ("/v1/memory/remember", {"note": "a block", "title": "titled"}),
        ("/v1/memory/core/notes", {"note": "another"}),
        ("/v1/memory/procedures", {"outcome": "success", "task": "deploy"}),
    ):
        before = files(home)
        r = client.post(path, json={**body, "repo_root": REPO})
        assert r.status_code == 422, (path, r.text)
        assert r.json()["errors"][0]["loc"] == "body.repo_root", path
        assert files(home) == before
        r = client.post(path, params={"repo_root": REPO}, json=body)
        assert r.status_code == 201, (path, r.text)
        assert r.json()["scope"] == f"project:{project_slug(REPO)}", path
    r = client.put("/v1/memory/core", json={"content": "- rule\n", "repo_root": REPO})
    assert r.status_code == 422 and "repo_root" in r.json()["detail"]
    assert not (home / "memory" / "ASTER.md").exists()
    assert "repo_root" not in block_path(home, "db", REPO).read_text()


def test_etags_guard_forget_and_answer_conditional_reads(client: TestClient, home: Path) -> None:
    first = client.post("/v1/memory/blocks", json={"name": "db", "content": "5433"})
    second = client.patch("/v1/memory/blocks/db", json={"pinned": True})
    r = client.get("/v1/memory/blocks/db", headers={"If-None-Match": second.headers["etag"]})
    assert r.status_code == 304 and r.headers["etag"] == second.headers["etag"]
    r = client.get("/v1/memory/blocks/db", headers={"If-None-Match": first.headers["etag"]})
    assert r.status_code == 200 and r.json()["pinned"] is True
    recalls = client.get("/v1/journal", params={"op": "memory.recall"}).json()["items"]
    assert len(recalls) == 1  # the 304 read nothing, so it recalled nothing
    r = client.delete("/v1/memory/blocks/db", headers={"If-Match": first.headers["etag"]})
    assert r.status_code == 412
    assert block_path(home, "db").exists()
    r = client.delete("/v1/memory/blocks/db", headers={"If-Match": second.headers["etag"]})
    assert r.status_code == 204
    assert not block_path(home, "db").exists()


def test_blocks_and_projects_are_listed_a_page_at_a_time(
    client: TestClient, clock: FakeClock
) -> None:
    for i in range(5):
        clock.advance(seconds=1)
        client.post("/v1/memory/blocks", json={"name": f"b{i}", "content": f"fact {i}"})
    seen, cursor = [], None
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = client.get("/v1/memory/blocks", params=params).json()
        seen.append([b["name"] for b in page["items"]])
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == [["b4", "b3"], ["b2", "b1"], ["b0"]]
    for repo in ("/srv/one", "/srv/two"):
        clock.advance(seconds=1)
        client.post("/v1/sessions", json={"repo_root": repo}).raise_for_status()
    first = client.get("/v1/projects", params={"limit": 1}).json()
    assert [p["repo_root"] for p in first["items"]] == ["/srv/two"]
    second = client.get("/v1/projects", params={"limit": 1, "cursor": first["next_cursor"]})
    assert [p["repo_root"] for p in second.json()["items"]] == ["/srv/one"]
    assert second.json()["next_cursor"] is None
    r = client.get("/v1/memory/blocks", params={"cursor": "not-ours"})
    assert r.status_code == 422 and "cursor" in r.json()["detail"]
