"""An import of a JSON Lines file written a batch at a time still never leaves half of
a session: a file refused part way leaves nothing; an export's keys are checked with
the rest; a rewritten source grows as one session of its own; and a fork is the later
of two sessions, whichever is imported first."""

from __future__ import annotations

from pathlib import Path

import orjson
from fastapi.testclient import TestClient

from ..conftest import CLAUDE_SMALL, make_client
from ..e2e.test_import_large import big_transcript


def test_a_file_refused_part_way_leaves_no_session(home: Path, tmp_path: Path) -> None:
    source = tmp_path / "big.jsonl"
    big_transcript(source, 2 << 20)
    records = source.read_bytes().splitlines(keepends=True)
    late = orjson.loads(records[-20])
    late["message"] = {"role": "user", "content": "x" * 3000}  # too large to store here
    records[-20] = orjson.dumps(late) + b"\n"
    with make_client(home, max_event_bytes=2560) as client:  # the fixture's turns fit
        for _again in range(2):
            r = client.post("/v1/sessions/import", content=b"".join(records))
            assert r.status_code == 413, r.text
            assert client.get("/v1/sessions").json()["items"] == []
        ops = [e["op"] for e in client.get("/v1/journal").json()["items"]]
        assert ops.count("session.imported") == ops.count("session.purged") == 2
        fine = client.post("/v1/sessions/import", content=b"".join(records[:-20]))
        assert fine.status_code == 201 and len(client.get("/v1/sessions").json()["items"]) == 1


def test_an_export_with_a_key_no_append_could_have_is_refused(client: TestClient) -> None:
    sid = client.post("/v1/sessions", json={"repo_root": "/srv/app"}).json()["id"]
    client.post(
        f"/v1/sessions/{sid}/events", json={"type": "message", "role": "user", "content": "a"}
    )
    header, line = client.get(f"/v1/sessions/{sid}/export").content.splitlines()
    client.delete(f"/v1/sessions/{sid}", params={"purge": "true"})
    bad = orjson.loads(line) | {"idempotency_key": ["not", "text"]}
    r = client.post("/v1/sessions/import", content=header + b"\n" + orjson.dumps(bad) + b"\n")
    assert r.status_code == 422 and "idempotency_key" in r.json()["detail"]


def imported(client: TestClient, data: bytes) -> dict:
    r = client.post("/v1/sessions/import", content=data)
    assert r.status_code in (200, 201), r.text
    return dict(r.json()["sessions"][0])


def test_a_rewritten_source_grows_as_one_session_of_its_own(client: TestClient) -> None:
    whole = CLAUDE_SMALL.read_bytes()
    original = imported(client, whole)["id"]
    rewritten = whole.replace(b'"uuid":"', b'"uuid":"new-').splitlines(keepends=True)
    start = imported(client, b"".join(rewritten[:15]))
    grown = imported(client, b"".join(rewritten))
    assert start["rewrite_of"] == grown["rewrite_of"] == original
    assert grown["id"] == start["id"] and grown["status"] == "updated"
    assert len(client.get("/v1/sessions").json()["items"]) == 2


def resumed(records: list[dict], session: str) -> bytes:
    """What Claude Code writes when a session is resumed: a new file, under a new session
    id, holding the old records, and the user going on."""
    copied = [{**r, "sessionId": session} if r.get("sessionId") else r for r in records]
    last = records[-1]
    more = {
        **{k: last[k] for k in ("cwd", "timestamp", "version") if k in last},
        "type": "user",
        "sessionId": session,
        "uuid": f"{session}-more",
        "parentUuid": last.get("uuid"),
        "message": {"role": "user", "content": "go on"},
    }
    return b"".join(orjson.dumps(r) + b"\n" for r in [*copied, more])


def test_the_later_session_is_the_fork_whichever_is_imported_first(home: Path) -> None:
    records = [orjson.loads(line) for line in CLAUDE_SMALL.read_bytes().splitlines()]
    with make_client(home) as client:
        fork = imported(client, resumed(records, "5e55a0e0-0000-4000-8000-000000000002"))
        # the resumed file first: nothing to fork yet
        original = imported(client, CLAUDE_SMALL.read_bytes())
        assert "fork_of" not in fork and "fork_of" not in original


def test_a_resumed_session_that_begins_with_a_summary_is_a_fork_too(client: TestClient) -> None:
    """Claude Code writes its summary records (no record id of their own) at the top of
    a file: the fork is known by the first record that has one."""
    path = CLAUDE_SMALL.parents[0] / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    records = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    assert records[0]["type"] == "summary" and "uuid" not in records[0]
    original = imported(client, path.read_bytes())["id"]
    fork = imported(client, resumed(records, "5e55a0e0-0000-4000-8000-000000000003"))
    assert fork["fork_of"] == original
