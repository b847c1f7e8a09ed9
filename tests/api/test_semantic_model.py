"""The model behind search by meaning: read from its package with the network refused,
checked against the upstream's weights, another named by path, its vectors made again
when it changes; embedding off the catalog's thread; reranking that reorders the best
hits and never loses one."""

from __future__ import annotations

import shutil
import socket
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from fastapi.testclient import TestClient

from aster_persist.index import encoder
from aster_persist.index.encoder import Encoder, SemanticUnavailable
from aster_persist.index.rerank import Reranker, sentences

from ..conftest import FakeClock, make_client, new_session, user, wait_until

TURNS = [
    "The deploy to production failed because the database password had expired.",
    "We moved the release to Friday so the payments team can finish testing.",
    "Rotate the database credentials every ninety days.",
    "The payments test is flaky: it fails when the clock passes midnight.",
    "I fixed the login page layout on small screens.",
    "The cache keeps stale entries after a restart; clear it on deploy.",
    "Lunch with the team is on Thursday at noon.",
    "The production database ran out of disk during the nightly backup.",
]


def said(client: TestClient, *texts: str, repo_root: str = "/srv/app") -> str:
    sid = new_session(client, repo_root=repo_root)
    turns = [user(t) for t in texts]
    assert client.post(f"/v1/sessions/{sid}/events", json=turns).status_code == 201
    return sid


def pages(client: TestClient, q: str, limit: int, **params: Any) -> list[tuple[str, int]]:
    """Every hit of ``q``, page after page, in order."""
    seen: list[tuple[str, int]] = []
    cursor = None
    while True:
        asked = {"q": q, "kinds": "message", "limit": limit, **params}
        r = client.get("/v1/search", params=asked | ({"cursor": cursor} if cursor else {}))
        assert r.status_code == 200, r.text
        seen += [(h["session_id"], h["seq"]) for h in r.json()["items"]]
        cursor = r.json()["next_cursor"]
        if cursor is None:
            return seen


def embedded(client: TestClient) -> dict[str, Any]:
    info: dict[str, Any] = wait_until(
        lambda: (i := client.get("/v1/info").json()["semantic"]).get("pending") == 0 and i
    )
    return info


def test_an_empty_home_searches_by_meaning_with_the_network_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, clock: FakeClock
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the model tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setattr(encoder, "_loaded", {})  # read from the package again, here
    home = tmp_path / "empty"
    with make_client(home, clock, semantic=True) as c:
        said(c, *TURNS)
        hits = c.get("/v1/search", params={"q": "credentials that lapsed"}).json()["items"]
        assert hits[0]["snippet"] == TURNS[0] or hits[0]["snippet"] == TURNS[2]
        assert {h["snippet"] for h in hits[:2]} == {TURNS[0], TURNS[2]}
    assert not (tmp_path / "user").exists()  # no cache of anything written for the user


def test_weights_other_than_the_upstream_models_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    changed = dict(encoder.UPSTREAM, **{"model.safetensors": "0" * 64})
    monkeypatch.setattr(encoder, "UPSTREAM", changed)
    with pytest.raises(SemanticUnavailable, match="not the upstream model's"):
        Encoder()


def another_model(tmp_path: Path, name: str) -> Path:
    """The default model's files under another name (its config says so)."""
    folder = tmp_path / name
    folder.mkdir()
    source = encoder.default_folder()
    for file in ("model.safetensors", "tokenizer.json"):
        shutil.copyfile(source / file, folder / file)
    config = orjson.loads((source / "config.json").read_bytes())
    (folder / "config.json").write_bytes(orjson.dumps({**config, "_name_or_path": name}))
    return folder


def test_a_model_named_by_path_is_used_and_its_vectors_are_its_own(
    home: Path, clock: FakeClock, tmp_path: Path
) -> None:
    kept = home / "index" / "vectors.bin"
    with make_client(home, clock, semantic=True) as c:
        said(c, *TURNS)
        assert embedded(c)["vectors"] == len(TURNS)
    default = kept.read_bytes().split(b"\n", 1)[0]
    with make_client(home, clock, semantic=True, semantic_model=another_model(tmp_path, "m2")) as c:
        assert embedded(c)["vectors"] == len(TURNS)  # made again, with this model
        hits = c.get("/v1/search", params={"q": "credentials that lapsed"}).json()["items"]
        assert {h["snippet"] for h in hits[:2]} == {TURNS[0], TURNS[2]}
    named = kept.read_bytes().split(b"\n", 1)[0]
    assert orjson.loads(named)["model"] != orjson.loads(default)["model"]
    assert orjson.loads(named)["generation"] == orjson.loads(default)["generation"]


def test_a_model_folder_without_its_files_is_refused_at_start(home: Path, tmp_path: Path) -> None:
    from aster_persist.app import create_app
    from aster_persist.settings import Settings

    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text("{}")
    with pytest.raises(ValueError, match=r"has no model\.safetensors"):
        create_app(Settings(home=home, semantic=True, semantic_model=tmp_path / "half"))
    for name in ("model.safetensors", "tokenizer.json"):
        (tmp_path / "half" / name).write_bytes(b"not a model")
    with pytest.raises(ValueError, match="cannot be read"):
        create_app(Settings(home=home, semantic=True, semantic_model=tmp_path / "half"))


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Background embedding held on the model's thread until the event is set."""
    release = threading.Event()
    embed = Encoder.embed

    def slow(self: Encoder, texts: Sequence[str]) -> np.ndarray:
        if threading.current_thread().name.startswith("aster-embed"):
            release.wait(30)
        return embed(self, texts)

    monkeypatch.setattr(Encoder, "embed", slow)
    yield release
    release.set()


def test_embedding_runs_off_the_catalogs_thread(
    home: Path, clock: FakeClock, held: threading.Event
) -> None:
    with make_client(home, clock, semantic=True) as c:
        sid = said(c, *(f"{t} ({n})" for n in range(20) for t in TURNS))
        # a batch is being embedded (held); the catalog goes on: a search by words, the
        # session's listing, its summary
        phrase = c.get("/v1/search", params={"q": '"nightly backup"', "kinds": "message"})
        assert phrase.status_code == 200 and len(phrase.json()["items"]) == 20
        assert c.get("/v1/sessions", params={"repo_root": "/srv/app"}).json()["items"]
        assert c.get("/v1/info").json()["semantic"]["pending"] > 0
        held.set()
        assert embedded(c)["vectors"] == 20 * len(TURNS)
        assert c.get(f"/v1/sessions/{sid}").status_code == 200


def test_a_search_embeds_only_a_few_of_those_waiting(
    home: Path, clock: FakeClock, held: threading.Event
) -> None:
    with make_client(home, clock, semantic=True) as c:
        said(c, *(f"{t} ({n})" for n in range(40) for t in TURNS))
        r = c.get("/v1/search", params={"q": "expired credentials"})
        assert r.status_code == 200
        waiting = c.get("/v1/info").json()["semantic"]["pending"]
        assert waiting > 200  # the rest is left to the background, not waited for
        held.set()
        assert embedded(c)["vectors"] == 40 * len(TURNS)


def test_reranking_changes_the_order_and_never_loses_a_hit(home: Path, clock: FakeClock) -> None:
    with make_client(home, clock, semantic=True) as c:
        said(c, *(f"{t} Note {n}." for n in range(5) for t in TURNS))
        embedded(c)
        question = "why did the production deploy fail"
        fused = pages(c, question, 7, rerank="false")
        reranked = pages(c, question, 7)
        assert sorted(reranked) == sorted(fused) and len(set(reranked)) == len(reranked)
        assert reranked != fused  # the same hits, in another order
        assert pages(c, question, 100) == reranked  # pages go through one order
        first = c.get("/v1/search", params={"q": question, "limit": 100}).json()["items"]
        scores = [h["score"] for h in first]
        assert scores == sorted(scores, reverse=True)  # each takes its place's score
        cursor = c.get("/v1/search", params={"q": question, "limit": 3}).json()["next_cursor"]
        assert cursor == "r3"
        off = c.get("/v1/search", params={"q": question, "cursor": cursor, "rerank": "false"})
        assert [(h["session_id"], h["seq"]) for h in off.json()["items"]] == fused[3:23]


def test_reranking_keeps_what_it_weighs_and_fuses_its_order() -> None:
    reranker = Reranker(encoder.load(), depth=4)
    ranked = [(n, text) for n, text in enumerate(TURNS)]
    order = reranker.order("why did the production deploy fail", ranked)
    assert sorted(order[:4]) == [0, 1, 2, 3] and order[4:] == [4, 5, 6, 7]
    scores = reranker.scores("why did the production deploy fail", TURNS[:4])
    assert int(np.argmax(scores)) == 0  # the deploy that failed, word for word
    assert reranker.order("anything", ranked[:1]) == [0]


def test_a_hit_is_read_sentence_by_sentence_from_its_start() -> None:
    """Each sentence that starts in a hit's first 300 characters is read in its own
    context, and a question's word is matched with its nearest token among them all."""
    long = "x" * 280 + ". Then more."
    assert sentences(long) == ["x" * 280 + ".", "Then more."]
    assert sentences("y" * 700) == ["y" * 300]  # one sentence, cut
    assert sentences("A. B. ok. Sure!\n\nThe build is red.") == ["Sure!", "The build is red."]
    assert sentences("z" * 290 + ". " + "w" * 20 + ". Past it.") == [
        "z" * 290 + ".",
        "w" * 20 + ".",
    ]
    assert sentences("") == []

    model = encoder.load()
    reranker = Reranker(model)
    text = (
        "Can you suggest some healthy breakfast recipes to boost my energy? "
        "By the way, I adopted a puppy from the shelter last week."
    )
    question = "when did I adopt the puppy"
    asked = model.tokens([question], quick=True)[0][reranker.own_words(question)]

    def maxsim(read: list[np.ndarray]) -> float:
        return float((asked @ np.vstack(read).T).max(axis=1).mean())

    apart = maxsim(model.tokens(sentences(text), quick=True))
    whole = maxsim(model.tokens([text], quick=True))
    assert reranker.scores(question, [text, ""])[0] == pytest.approx(apart, abs=1e-6)
    assert reranker.scores(question, [text, ""])[1] == 0  # nothing read, nothing matched
    assert apart != pytest.approx(whole, abs=1e-4)  # not the turn read whole


def test_without_a_quick_session_reranking_uses_the_full_model(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import onnxruntime.quantization

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError("no temporary folder")

    monkeypatch.setattr(onnxruntime.quantization, "quantize_dynamic", refuse)
    model = Encoder()
    quick = model.tokens(TURNS[:2], 64, quick=True)
    full = model.tokens(TURNS[:2], 64)
    assert all(np.array_equal(a, b) for a, b in zip(quick, full, strict=True))
    assert "quick session cannot be made" in caplog.text


def test_with_reranking_off_the_order_is_the_fused_one(home: Path, clock: FakeClock) -> None:
    with make_client(home, clock, semantic=True) as c:
        said(c, *(f"{t} Note {n}." for n in range(5) for t in TURNS))
        embedded(c)
        fused = pages(c, "why did the production deploy fail", 7, rerank="false")
    with make_client(home, clock, semantic=True, rerank=False) as c:
        assert embedded(c)["rerank"] is False
        assert pages(c, "why did the production deploy fail", 7) == fused


def test_the_runtime_writes_nothing_outside_the_home_and_sends_nothing(tmp_path: Path) -> None:
    """ONNX Runtime keeps a device id and usage events under ~/.cache for Microsoft's
    collector unless told not to; a fresh process embeds and reranks, and the user's
    home it was given is left empty."""
    import os
    import subprocess
    import sys

    user = tmp_path / "user"
    user.mkdir()
    code = (
        "from aster_persist.index.encoder import Encoder\n"
        "m = Encoder()\n"
        "m.embed(['a small dog'])\n"
        "m.tokens(['a small dog'], 64, quick=True)\n"
    )
    env = {**os.environ, "HOME": str(user), "XDG_CACHE_HOME": str(user / ".cache")}
    env.pop("ORT_DISABLE_TELEMETRY", None)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert list(user.rglob("*")) == []
