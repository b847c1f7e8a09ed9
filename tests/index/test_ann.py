"""The graph for search by meaning at scale (usearch's HNSW over the real model's
vectors): it finds what the exact search finds, is built a step at a time once there
are enough vectors, is searched only once it holds them all, is kept beside the catalog
and taken up again only when it is the vectors' own, and leaves a search inside one
session, or one whose filters keep almost nothing, to the exact search."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from aster_persist.index import ann, encoder
from aster_persist.index.ann import Ann
from aster_persist.index.encoder import Encoder
from aster_persist.index.semantic import Vectors

from ..conftest import FakeClock, make_client, new_session, user, wait_until

TOPICS = [
    "the build failed because the compiler crashed",
    "my dog loves running in the park",
    "we deployed the service to production on friday",
    "the database migration dropped an index",
    "a flaky test in the payments module",
    "rewrite the login page in the new framework",
    "the cache keeps stale entries after a restart",
    "lunch plans with the team next week",
]


@pytest.fixture(scope="module")
def embedder() -> Encoder:
    return encoder.load()


def corpus(embedder: Encoder, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` real sentences' vectors: each topic with one of many details."""
    texts = [f"{TOPICS[i % len(TOPICS)]} ({i // len(TOPICS)} {i * 7919 % 1000})" for i in range(n)]
    return np.arange(1, n + 1, dtype=np.int64), embedder.embed(texts)


def test_the_graph_finds_what_the_exact_search_finds(embedder: Encoder, tmp_path: Path) -> None:
    rowids, vectors = corpus(embedder, 2000)
    graph = Ann(embedder.dim)
    graph.add(rowids, vectors)
    queries = embedder.embed(["the compiler crashed", "a puppy in the park", "friday deploy"])
    for query in queries:
        exact = rowids[np.argsort(-(vectors @ query), kind="stable")[:10]]
        found, similarity = graph.search(query, 10)
        assert len(set(found) & set(exact)) >= 9
        assert np.all(np.diff(similarity) <= 1e-3)  # best first
    stamp = {"generation": "g", "last": 2000, "size": 2000}
    graph.save(tmp_path / "vectors.ann", stamp)
    again = Ann(embedder.dim)
    assert again.load(tmp_path / "vectors.ann", stamp)
    assert list(again.search(queries[0], 10)[0]) == list(graph.search(queries[0], 10)[0])
    other = Ann(embedder.dim)  # another catalog's, or vectors since: not taken up
    assert not other.load(tmp_path / "vectors.ann", {**stamp, "last": 2001})
    assert len(other) == 0


def test_search_by_meaning_goes_through_the_graph_once_it_holds_every_vector(
    home: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "SMALLEST", 40)
    monkeypatch.setattr(ann, "STEP", 16)
    turns = [user(f"{TOPICS[i % len(TOPICS)]}, case {i}") for i in range(64)]

    def hits(client: TestClient, q: str, **params: str) -> list[tuple[str, int]]:
        r = client.get("/v1/search", params={"q": q, **params})
        assert r.status_code == 200, r.text
        return [(h["session_id"], h["seq"]) for h in r.json()["items"]]

    def said(client: TestClient, q: str) -> list[str]:
        """What was found, in order (a turn said in both sessions is found twice, the
        two in either order: they are as near as each other)."""
        r = client.get("/v1/search", params={"q": q})
        return [h["snippet"] for h in r.json()["items"]]

    with make_client(home, clock, semantic=True, semantic_weight=1.0) as client:
        sid = new_session(client)
        other = new_session(client, repo_root="/srv/other")
        assert client.post(f"/v1/sessions/{sid}/events", json=turns).status_code == 201
        assert client.post(f"/v1/sessions/{other}/events", json=turns[:8]).status_code == 201

        def semantic() -> dict[str, int]:
            return dict(client.get("/v1/info").json()["semantic"])

        wait_until(lambda: semantic()["vectors"] == 72)
        exact = said(client, "puppy in the park")  # the same answers, by every vector
        wait_until(lambda: semantic()["graph"] == 72)  # built on the catalog thread
        scans: list[int] = []  # searches that weigh every vector
        every = Vectors._best_first

        def counted(similarity: np.ndarray, first: int) -> Iterator[np.ndarray]:
            scans.append(len(similarity))
            return every(similarity, first)

        monkeypatch.setattr(Vectors, "_best_first", staticmethod(counted))
        assert said(client, "puppy in the park") == exact
        assert scans == []  # through the graph
        # a search in one session, and one a filter leaves few to, go on exactly
        assert {s for s, _ in hits(client, "puppy in the park", session_id=other)} == {other}
        assert scans  # a search in one session weighs its few vectors exactly
        assert {s for s, _ in hits(client, "puppy in the park", repo_root="/srv/other")} == {other}
    assert (home / "index" / "vectors.ann").exists()
    with make_client(home, clock, semantic=True, semantic_weight=1.0) as client:
        info = wait_until(lambda: client.get("/v1/info").json()["semantic"].get("vectors"))
        assert info and client.get("/v1/info").json()["semantic"]["graph"] == 72  # taken up
        assert said(client, "puppy in the park") == exact
