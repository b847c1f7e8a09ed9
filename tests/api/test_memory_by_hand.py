"""Memory as people leave it: odd values, other encodings, stray folders, links, files
changed or removed behind the daemon's back, and the races around them."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from aster_persist.schemas.names import project_slug

from ..conftest import REPO, make_client

MD = {"content-type": "text/markdown"}


def names(client: TestClient, **params: Any) -> list[str]:
    return [b["name"] for b in client.get("/v1/memory/blocks", params=params).json()["items"]]


def found(client: TestClient, query: str) -> list[str]:
    r = client.get("/v1/memory/search", params={"q": query})
    assert r.status_code == 200, r.text
    return [hit["name"] for hit in r.json()["items"]]


def wait_for(check: Any, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_number_that_is_not_finite_is_the_default_and_search_keeps_up(home: Path) -> None:
    with make_client(home, watch=False) as client:
        client.post("/v1/memory/blocks", json={"name": "old", "content": "kafka keeps 7 days"})
        assert found(client, "kafka") == ["old"]
        r = client.put(  # through the API, refused: the number is not one
            "/v1/memory/blocks/weird", content="---\nimportance: .nan\n---\nsomething\n", headers=MD
        )
        assert r.status_code == 422 and "importance" in r.json()["detail"], r.text
        client.post("/v1/memory/blocks", json={"name": "weird", "content": "something"})
        path = next(home.rglob("weird.md"))  # by hand, read as the default
        path.write_text(path.read_text().replace("importance: 0.5", "importance: .nan"))
        r = client.get("/v1/memory/blocks/weird", params={"track": "false"})
        assert r.status_code == 200 and r.json()["importance"] == 0.5, r.text
        assert ".nan" in r.json()["content"]
        assert client.delete("/v1/memory/blocks/old").status_code == 204
        client.post("/v1/memory/blocks", json={"name": "new", "content": "zookeeper is gone"})
        assert found(client, "kafka") == []
        assert found(client, "zookeeper") == ["new"]
        assert found(client, "something") == ["weird"]


def test_frontmatter_json_cannot_carry_is_read_back_in_a_form_it_can(home: Path) -> None:
    with make_client(home, watch=False) as client:
        client.post("/v1/memory/blocks", json={"name": "odd", "content": "Body."})
        path = next(home.rglob("odd.md"))
        odd = (
            "x_big: 123456789012345678901234567890\nx_when: 2026-01-02\n"
            "x_set: !!set {b: null, a: null}\nx_keys: {1: one}\n"
        )
        path.write_text(path.read_text().replace("---\n", "---\n" + odd, 1))
        for track in ("true", "false"):  # the fast path and the router
            r = client.get("/v1/memory/blocks/odd", params={"track": track})
            assert r.status_code == 200, r.text
            meta = r.json()["metadata"]
            assert meta["x_big"] == "123456789012345678901234567890"
            assert meta["x_when"] == "2026-01-02" and meta["x_set"] == ["a", "b"]
            assert meta["x_keys"] == {"1": "one"} and meta["name"] == "odd"


def test_files_in_another_encoding_are_replaced_journaled_and_reverted_exactly(
    home: Path,
) -> None:
    with make_client(home, watch=False) as client:
        folder = home / "memory"
        folder.mkdir(parents=True, exist_ok=True)
        latin1 = b"- caf\xe9 opens at 8\n"
        (folder / "ASTER.md").write_bytes(latin1)
        r = client.put("/v1/memory/core", content="- replaced\n", headers=MD)
        assert r.status_code == 200, r.text
        entries = client.get("/v1/journal", params={"op": "memory"}).json()["items"]
        # the hand edit (the file appeared) and then the replacement
        assert [e["op"] for e in entries][-1] == "memory.edit"
        r = client.post(f"/v1/journal/{entries[-1]['id']}/revert")
        assert r.status_code == 200, r.text
        assert (folder / "ASTER.md").read_bytes() == latin1


def test_put_with_the_same_body_honours_if_match_and_applies_its_frontmatter(
    client: TestClient, home: Path
) -> None:
    r = client.post(
        "/v1/memory/blocks",
        json={"name": "db", "content": "Postgres on 5433.", "description": "old"},
    )
    first = r.headers["etag"]
    second = client.patch("/v1/memory/blocks/db", json={"pinned": True}).headers["etag"]
    md = "---\ndescription: new description\nimportance: 0.1\n---\nPostgres on 5433.\n"
    before = (home / "memory" / "db.md").read_bytes()
    r = client.put("/v1/memory/blocks/db", content=md, headers={"If-Match": first, **MD})
    assert r.status_code == 412
    assert (home / "memory" / "db.md").read_bytes() == before
    r = client.put("/v1/memory/blocks/db", content=md, headers={"If-Match": second, **MD})
    assert r.status_code == 200, r.text
    assert (r.json()["description"], r.json()["importance"]) == ("new description", 0.1)
    stale = '"' + "0" * 64 + '"'  # an ETag of a block that does not exist
    r = client.put(
        "/v1/memory/blocks/other", content="Postgres on 5433.\n", headers={"If-Match": stale, **MD}
    )
    assert r.status_code == 412
    r = client.put(
        "/v1/memory/blocks/other", content="Postgres on 5433.\n", headers={"If-Match": '"x"', **MD}
    )
    assert r.status_code == 412  # a well-formed entity tag, of no version of this block
    assert not (home / "memory" / "other.md").exists()


def test_folders_under_projects_that_are_not_projects_are_left_alone(home: Path) -> None:
    stray = home / "memory" / "projects" / "old-notes"
    stray.mkdir(parents=True)
    (stray / "todo.md").write_text("- keep this\n")
    with make_client(home) as client:
        wait_for(lambda: client.get("/readyz").status_code == 200)
        wait_for(lambda: client.get("/v1/info").json()["watching"])
        r = client.post(
            "/v1/memory/blocks", params={"repo_root": REPO}, json={"name": "a", "content": "one"}
        )
        assert r.status_code == 201
        assert names(client, repo_root=REPO) == ["a"]
    assert (stray / "todo.md").read_text() == "- keep this\n"


def test_a_block_removed_by_hand_is_not_found_rather_than_an_error(home: Path) -> None:
    with make_client(home, watch=False) as client:
        client.post("/v1/memory/blocks", json={"name": "gone", "content": "deleted by hand"})
        (home / "memory" / "gone.md").unlink()
        assert client.get("/v1/memory/blocks/gone").status_code == 404
        assert client.delete("/v1/memory/blocks/gone").status_code == 404
        assert "gone" not in names(client)
        ops = [e["op"] for e in client.get("/v1/journal", params={"op": "memory"}).json()["items"]]
        assert ops == ["memory.write", "memory.delete"]  # the removal, journaled once


def test_the_watcher_sees_removals_before_it_started_and_whole_folders_moved_away(
    home: Path, tmp_path: Path
) -> None:
    with make_client(home, watch=False) as client:
        client.post("/v1/memory/blocks", json={"name": "early", "content": "removed early"})
        client.post("/v1/memory/blocks", json={"name": "stays", "content": "stays put"})
    (home / "memory" / "early.md").unlink()  # while the daemon was down
    with make_client(home) as client:
        wait_for(lambda: client.get("/v1/info").json()["watching"])
        wait_for(lambda: names(client) == ["stays"])
        gone = client.get("/v1/journal", params={"op": "memory.delete"}).json()["items"]
        assert [(e["name"], e["actor"]) for e in gone] == [("early", "watcher")]  # at start
        client.post(
            "/v1/memory/blocks", params={"repo_root": REPO}, json={"name": "p1", "content": "x"}
        )
        time.sleep(0.6)  # the daemon's own write has been seen
        shutil.move(home / "memory" / "projects" / project_slug(REPO), tmp_path / "moved")
        wait_for(lambda: names(client, repo_root=REPO) == [])
        assert client.get("/v1/memory/blocks/p1", params={"repo_root": REPO}).status_code == 404


def test_reverts_work_when_the_home_is_reached_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    with make_client(tmp_path / "link" / "home", watch=False) as client:
        client.post("/v1/memory/blocks", json={"name": "x", "content": "one"})
        assert client.delete("/v1/memory/blocks/x").status_code == 204
        entry = client.get("/v1/journal", params={"op": "memory.delete"}).json()["items"][-1]
        r = client.post(f"/v1/journal/{entry['id']}/revert")
        assert r.status_code == 200, r.text
        assert names(client) == ["x"]


def test_a_hand_edit_not_yet_seen_is_journaled_before_a_write_checks_its_etag(
    home: Path,
) -> None:
    with make_client(home, watch=False) as client:
        r = client.post("/v1/memory/blocks", json={"name": "n", "content": "v1"})
        stale = r.headers["etag"]
        path = home / "memory" / "n.md"
        path.write_text(path.read_text().replace("v1", "v2 by hand"))
        got = client.get("/v1/memory/blocks/n", params={"track": "false"})
        assert "v2 by hand" in got.json()["content"]
        assert got.headers["etag"] != stale
        r = client.put("/v1/memory/blocks/n", content="v3\n", headers={"If-Match": stale, **MD})
        assert r.status_code == 412
        r = client.put(
            "/v1/memory/blocks/n", content="v3\n", headers={"If-Match": got.headers["etag"], **MD}
        )
        assert r.status_code == 200, r.text
        entries = client.get("/v1/journal", params={"op": "memory"}).json()["items"]
        assert [(e["op"], e["actor"]) for e in entries] == [
            ("memory.write", "api"),
            ("memory.edit", "watcher"),
            ("memory.edit", "api"),
        ]
        assert "v2 by hand" in entries[2]["before"]["content"]


def write_by_hand(home: Path, name: str, text: str) -> None:
    folder = home / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(text)


def test_dates_written_without_a_zone_rank_like_utc(home: Path) -> None:
    write_by_hand(home, "dated", "---\nupdated_at: 2025-05-01\n---\nthe release train leaves\n")
    with make_client(home, watch=False) as client:
        assert found(client, "release train") == ["dated"]
        r = client.get("/v1/memory/context", params={"query": "release train"})
        assert r.status_code == 200, r.text
        assert r.json()["order"] == "relevance"


def test_a_flow_list_going_on_at_column_zero_is_replaced_whole(home: Path) -> None:
    write_by_hand(
        home, "ci", "---\ndescription: ci notes\ntags: [ci,\ndocker]\nowner: me\n---\nRun make.\n"
    )
    with make_client(home, watch=False) as client:
        r = client.patch("/v1/memory/blocks/ci", json={"tags": ["ci", "make"]})
        assert r.status_code == 200, r.text
        assert r.json()["tags"] == ["ci", "make"]
    text = (home / "memory" / "ci.md").read_text()
    assert "docker]" not in text
    assert text.startswith("---\ndescription: ci notes\ntags: [ci, make]\nowner: me\n")


def test_a_conflict_that_cannot_be_marked_is_refused_before_anything_is_written(
    home: Path,
) -> None:
    write_by_hand(home, "b", "---\ndescription: [unclosed\n---\nbody b\n")
    with make_client(home, watch=False) as client:
        r = client.post(
            "/v1/memory/blocks", json={"name": "a", "content": "body a", "conflicts_with": ["b"]}
        )
        assert r.status_code == 422
        assert "conflicts_with names 'b'" in r.json()["detail"]
        assert not (home / "memory" / "a.md").exists()
        assert client.get("/v1/journal", params={"name": "a"}).json()["items"] == []


def test_reverting_an_archive_never_overwrites_a_file_made_since(home: Path) -> None:
    with make_client(home, watch=False) as client:
        client.post("/v1/memory/blocks", json={"name": "x", "content": "original"})
        client.post("/v1/memory/blocks/x/archive")
        entry = client.get("/v1/journal", params={"op": "memory.archive"}).json()["items"][-1]
        write_by_hand(home, "x", "written by hand since, precious\n")
        r = client.post(f"/v1/journal/{entry['id']}/revert")
        assert r.status_code == 409
        assert "exists again" in r.json()["detail"]
        assert (home / "memory" / "x.md").read_text() == "written by hand since, precious\n"
        assert "original" in (home / "memory" / ".archive" / "x.md").read_text()


def test_a_long_note_without_a_title_is_refused_with_a_reason(
    client: TestClient, home: Path
) -> None:
    r = client.post("/v1/memory/remember", json={"note": "word " * 1000})
    assert r.status_code == 422
    assert r.headers["content-type"] == "application/problem+json"
    assert "give it a title" in r.json()["detail"]
    assert not (home / "memory" / "ASTER.md").exists()
