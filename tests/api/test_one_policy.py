"""One rule, one answer: each memory policy is kept in one place, so every way in (REST,
the agent tools, the fast path, the client) gives the same answer."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from aster_persist.schemas.memory import NOTE_MAX, Block

from ..conftest import snapshot


def test_an_untitled_note_past_the_core_limit_is_refused_on_every_path(
    client: TestClient, home: Path
) -> None:
    long = "word " * (NOTE_MAX // 4)
    before = snapshot(home)
    r = client.post("/v1/memory/remember", json={"note": long})
    assert r.status_code == 422 and str(NOTE_MAX) in r.text
    r = client.post("/v1/memory/core/notes", json={"note": long})
    assert r.status_code == 422
    r = client.post("/v1/memory/tools/call", json={"name": "remember", "arguments": {"note": long}})
    assert r.status_code == 200, r.text
    assert "failed" in r.json()["content"] and str(NOTE_MAX) in r.json()["content"]
    assert snapshot(home) == before  # ASTER.md, in every prompt, did not grow
    titled = {"note": long, "title": "A long one"}
    r = client.post("/v1/memory/tools/call", json={"name": "remember", "arguments": titled})
    assert "Remembered as 'a-long-one'" in r.json()["content"]


def test_listed_blocks_carry_the_recall_counts_their_schema_declares(client: TestClient) -> None:
    client.post("/v1/memory/blocks", json={"name": "port", "content": "5433"}).raise_for_status()
    client.get("/v1/memory/blocks/port").raise_for_status()  # a recall
    item = client.get("/v1/memory/blocks").json()["items"][0]
    assert item["recall_count"] == 1 and item["last_recalled_at"]
    block = Block.model_validate(item)
    assert block.recall_count == 1
    schema = client.get("/openapi.json").json()["components"]["schemas"]["Block"]
    assert {"recall_count", "last_recalled_at"} <= set(schema["properties"])
    assert set(item) <= set(schema["properties"])


def test_a_missing_session_is_session_not_found_on_its_tail_as_on_its_siblings(
    client: TestClient,
) -> None:
    sid = "01J0000000000000000000ABCD"
    for url in (f"/v1/sessions/{sid}", f"/v1/sessions/{sid}/events"):
        assert client.get(url).json()["code"] == "session_not_found"
    tail = client.get(f"/v1/sessions/{sid}/events/stream")
    assert tail.status_code == 404 and tail.json()["code"] == "session_not_found"
