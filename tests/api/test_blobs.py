"""Large payloads: stored once under blobs/, referenced from the transcript, put back on read."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from fastapi.testclient import TestClient

from ..conftest import assistant, call, new_session, tool, user


def transcript(home: Path, sid: str) -> Path:
    return next((home / "sessions").rglob(f"{sid}.jsonl"))


def test_fifty_megabytes_of_tool_results_stay_small_on_disk(client: TestClient, home: Path) -> None:
    sid = new_session(client)
    outputs = []
    for n in range(10):
        output = "".join(
            f"line {i} of file {n}: {'x' * 80}\n" for i in range(n * 100, n * 100 + 60_000)
        )
        outputs.append(output)
        r = client.post(
            f"/v1/sessions/{sid}/events",
            json=[
                assistant(calls=[call(f"c{n}", "cat", json.dumps({"n": n}))]),
                tool(f"c{n}", output),
            ],
        )
        assert r.status_code == 201, r.text
    assert sum(len(o) for o in outputs) > 50_000_000
    assert transcript(home, sid).stat().st_size < 1_000_000
    events = client.get(f"/v1/sessions/{sid}/events", params={"type": "message"}).json()["events"]
    assert [e["content"] for e in events if e["role"] == "tool"] == outputs
    refs = client.get(f"/v1/sessions/{sid}/events", params={"inline": "false"}).json()["events"]
    ref = refs[1]["content"]
    digest = hashlib.sha256(outputs[0].encode()).hexdigest()
    assert ref == {
        "content_ref": f"sha256:{digest}",
        "bytes": len(outputs[0]),
        "preview": outputs[0][:1024],
    }
    assert (home / "blobs" / "sha256" / digest[:2] / digest[2:]).read_text() == outputs[0]
    exported = client.get(f"/v1/sessions/{sid}/export").content
    assert b"content_ref" not in exported and outputs[3].encode() in exported.replace(b"\\n", b"\n")
    messages = client.get(f"/v1/sessions/{sid}/messages", params={"view": "context"}).json()
    messages = messages["messages"]
    assert [m["content"] for m in messages if m["role"] == "tool"] == outputs


def test_the_same_payload_is_stored_once_and_found_by_its_preview(
    client: TestClient, home: Path
) -> None:
    big = "needle in the preview " + "y" * 100_000
    for _ in range(2):
        sid = new_session(client)
        client.post(f"/v1/sessions/{sid}/events", json=user(big)).raise_for_status()
    assert len(list((home / "blobs").rglob("*"))) == 3  # sha256/<2 hex>/<blob>: one blob
    hits = client.get("/v1/search", params={"q": "needle"}).json()["items"]
    assert len(hits) == 2


def test_an_export_with_blobs_round_trips(client: TestClient, home: Path, tmp_path: Path) -> None:
    from ..conftest import make_client

    sid = new_session(client)
    client.post(
        f"/v1/sessions/{sid}/events", json=[user("z" * 70_000), user("small")]
    ).raise_for_status()
    stored = transcript(home, sid).read_bytes()
    exported = client.get(f"/v1/sessions/{sid}/export").content
    with make_client(tmp_path / "elsewhere") as other:
        assert other.post("/v1/sessions/import", content=exported).status_code == 201
        assert transcript(tmp_path / "elsewhere", sid).read_bytes() == stored
        assert other.get(f"/v1/sessions/{sid}/export").content == exported


def test_a_blob_reference_from_a_client_is_refused(client: TestClient, home: Path) -> None:
    sid = new_session(client)
    big = "x" * 100_000
    client.post(f"/v1/sessions/{sid}/events", json=user(big)).raise_for_status()
    real = "sha256:" + hashlib.sha256(big.encode()).hexdigest()  # a blob that exists
    path = next((home / "sessions").rglob(f"{sid}.jsonl"))
    before = path.read_bytes()
    for ref in (real, "sha256:" + "0" * 64):
        for event in (
            {"type": "title", "title": "t", "content": {"content_ref": ref}},
            {"type": "eviction", "tool_call_id": "c", "content": {"content_ref": ref}},
        ):
            for body in (event, [event]):
                r = client.post(f"/v1/sessions/{sid}/events", json=body)
                assert r.status_code == 422, r.text
                assert "made by the server" in r.json()["detail"]
    assert path.read_bytes() == before
    assert client.get(f"/v1/sessions/{sid}/events").status_code == 200
