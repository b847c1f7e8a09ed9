"""A source imported again, grown since, adds exactly what it gained to the same session;
the same source again adds nothing; and an imported session lists by its own times."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient

from aster_persist.api.plumbing import running

from ..conftest import CLAUDE_SMALL as CLAUDE
from ..conftest import FIXTURES

CODEX = next((FIXTURES / "codex" / "codemie-code").glob("rollout-*.jsonl"))


def lines(home: Path, sid: str) -> list[dict]:
    [path] = home.glob(f"sessions/*/{sid}.jsonl")
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def imported(client: TestClient, data: bytes) -> dict:
    r = client.post("/v1/sessions/import", content=data)
    assert r.status_code in (200, 201), r.text
    return r.json()


@pytest.mark.parametrize("path", [CLAUDE, CODEX], ids=["claude-code", "codex"])
def test_a_grown_file_appends_only_its_new_records(
    client: TestClient, home: Path, path: Path
) -> None:
    whole = path.read_bytes()
    start = b"".join(whole.splitlines(keepends=True)[:15])
    first = imported(client, start)
    [made] = first["sessions"]
    assert made["status"] == "imported" and first["imported"] == 1
    sid = made["id"]
    before = lines(home, sid)
    grown = imported(client, whole)
    assert grown["sessions"][0]["id"] == sid and grown["updated"] == 1
    after = lines(home, sid)
    assert after[: len(before)] == before  # what was there is as it was
    assert grown["sessions"][0]["events"] == len(after) - len(before) > 0
    again = imported(client, whole)
    assert again["sessions"][0]["status"] == "already_imported" and again["updated"] == 0
    assert lines(home, sid) == after  # the same file again adds nothing
    assert client.get("/v1/sessions").json()["items"][0]["id"] == sid  # one session
    assert len(client.get("/v1/sessions").json()["items"]) == 1
    # what one import of the whole file makes, less the lines the first one kept whole
    keys = [line.get("idempotency_key") for line in after[1:]]
    assert all(keys) and len(set(keys)) == len(keys)


def test_an_imported_session_lists_and_prunes_by_its_own_times(
    client: TestClient, home: Path
) -> None:
    old = imported(client, CLAUDE.read_bytes())["sessions"][0]["id"]
    new = client.post("/v1/sessions", json={"repo_root": "/srv/now"}).json()["id"]
    listed = [s["id"] for s in client.get("/v1/sessions").json()["items"]]
    assert listed == [new, old]  # newest activity first: the import is from 2025
    summary = next(s for s in client.get("/v1/sessions").json()["items"] if s["id"] == old)
    detail = client.get(f"/v1/sessions/{old}").json()
    assert summary["updated_at"] == detail["updated_at"] < "2026"
    pruned = client.post("/v1/sessions/prune", json={"older_than_days": 90}).json()
    assert [s["id"] for s in pruned["trashed"]] == [old]  # by its time, not the import's


@pytest.mark.parametrize(
    "path",
    [CODEX, *sorted((FIXTURES / "claude-code").rglob("*.jsonl"))],
    ids=lambda p: p.name[:24],
)
def test_a_fallback_title_is_what_the_user_said_not_what_a_tool_put_in(
    client: TestClient, path: Path
) -> None:
    from aster_persist.storage.summary import INJECTED

    sid = imported(client, path.read_bytes())["sessions"][0]["id"]
    [summary] = [s for s in client.get("/v1/sessions").json()["items"] if s["id"] == sid]
    title = summary["title"] or ""
    assert title and not INJECTED.match(title), title
    for bad in ("<command-", "AGENTS.md instructions", "<environment_context>"):
        assert bad not in title
    if path == CLAUDE:  # the user typed a slash command, and nothing else
        assert title == "/init"


def test_a_file_without_times_is_dated_by_its_modification_time_never_a_fixed_date(
    client: TestClient, home: Path
) -> None:
    from ulid import ULID

    [path, *_] = sorted((FIXTURES / "swe-agent").rglob("*.traj"))
    data = path.read_bytes()
    when = "2024-05-06T07:08:09.000Z"
    r = client.post("/v1/sessions/import", params={"modified_at": when}, content=data)
    assert r.status_code == 201, r.text
    sid = r.json()["sessions"][0]["id"]
    events = lines(home, sid)
    assert events[0]["created_at"] == when and {e["ts"] for e in events[1:]} == {when}
    assert ULID.from_str(sid).datetime.year == 2024  # the id says the file's time too
    # copied (a new modification time) and imported again: the same session, nothing new
    again = client.post(
        "/v1/sessions/import", params={"modified_at": "2026-01-01T00:00:00Z"}, content=data
    )
    assert again.json()["sessions"][0] == {"id": sid, "status": "already_imported"}
    # no time given at all: the import's own time, not 2000-01-01
    other = sorted((FIXTURES / "swe-agent").rglob("*.traj"))[-1]
    made = imported(client, other.read_bytes())["sessions"][0]["id"]
    assert lines(home, made)[0]["created_at"] == "2026-01-02T03:04:05.678Z"
    bad = client.post("/v1/sessions/import", params={"modified_at": "yesterday"}, content=data)
    assert bad.status_code == 422 and "modified_at" in bad.json()["detail"]


def test_the_session_a_source_became_is_remembered_across_a_restart(home: Path) -> None:
    """A file with no times of its own, copied (another modification time, so another
    id would be worked out), is still the session the journal says it became."""
    from ..conftest import make_client

    [path, *_] = sorted((FIXTURES / "swe-agent").rglob("*.traj"))
    with make_client(home) as client:
        first = client.post(
            "/v1/sessions/import",
            params={"modified_at": "2024-01-01T00:00:00Z"},
            content=path.read_bytes(),
        ).json()["sessions"][0]
    with make_client(home) as client:  # a restart: the journal is read again
        again = client.post(
            "/v1/sessions/import",
            params={"modified_at": "2025-06-01T00:00:00Z"},
            content=path.read_bytes(),
        ).json()["sessions"][0]
        assert again == {"id": first["id"], "status": "already_imported"}
        assert len(client.get("/v1/sessions").json()["items"]) == 1


@pytest.mark.parametrize("path", [CLAUDE, CODEX], ids=["claude-code", "codex"])
def test_a_source_cut_short_adds_nothing_and_one_rewritten_is_kept_beside(
    client: TestClient, home: Path, path: Path
) -> None:
    whole = path.read_bytes()
    [made] = imported(client, whole)["sessions"]
    sid, stored = made["id"], lines(home, made["id"])
    cut = b"".join(whole.splitlines(keepends=True)[:12])  # the agent's file, truncated
    assert imported(client, cut)["sessions"] == [{"id": sid, "status": "already_imported"}]
    assert lines(home, sid) == stored
    if path == CODEX:
        return  # a rollout's records are known by their places: a rewrite is not seen
    # the same source, rewritten: none of its records is one the session holds
    rewritten = whole.replace(b'"uuid":"', b'"uuid":"new-')
    result = imported(client, rewritten)
    [beside] = result["sessions"]
    assert beside["status"] == "imported" and beside["rewrite_of"] == sid and beside["id"] != sid
    assert lines(home, sid) == stored  # never merged into the session it was
    header = lines(home, beside["id"])[0]
    assert header["x_import"]["rewrite_of"] == sid
    assert ":rewritten:" in header["x_import"]["fingerprint"]
    again = imported(client, rewritten)["sessions"]
    assert again == [{"id": beside["id"], "status": "already_imported", "rewrite_of": sid}]
    journal = client.get("/v1/journal", params={"op": "session.imported"}).json()["items"]
    sources = {e["session"]: e["detail"]["source"] for e in journal}
    assert sources[beside["id"]].startswith(sources[sid] + ":rewritten:")


def test_the_notices_of_an_import_name_its_source(client: TestClient) -> None:
    heard: list[dict] = []
    sessions = running(client.app).sessions
    sessions.listeners.append(lambda notice: heard.append(notice.wire()))
    whole = CLAUDE.read_bytes()
    start = b"".join(whole.splitlines(keepends=True)[:15])
    sid = imported(client, start)["sessions"][0]["id"]
    imported(client, whole)
    [made, grown] = [n for n in heard if n["session_id"] == sid]
    session_id = orjson.loads(whole.splitlines()[1])["sessionId"]
    assert made["source"] == grown["source"] == f"claude-code:source:{session_id}"
    assert grown["first_seq"] == made["last_seq"] + 1
    appended = client.post(f"/v1/sessions/{sid}/events", json={"type": "title", "title": "t"})
    assert appended.status_code == 201
    assert "source" not in heard[-1]  # an agent's own append came from no file


def test_an_export_imported_in_part_is_completed_by_importing_it_whole(
    home: Path, tmp_path: Path
) -> None:
    """A native import cut short (a crash between two of its batches, each made of
    whole appends) leaves a session that holds the start of the export: importing the
    export again writes the rest, and the session exports byte for byte as the original
    did."""
    from ..conftest import make_client

    with make_client(tmp_path / "first") as client:
        sid = client.post("/v1/sessions", json={"repo_root": "/srv/app"}).json()["id"]
        for n in range(30):
            batch = [
                {"type": "message", "role": "user", "content": f"turn {n}.{i}"} for i in range(40)
            ]
            headers = {"Idempotency-Key": f"k{n}"} if n % 2 else {}
            assert client.post(f"/v1/sessions/{sid}/events", json=batch, headers=headers).is_success
        export = client.get(f"/v1/sessions/{sid}/export").content
    with make_client(home) as client:
        part = b"".join(export.splitlines(keepends=True)[: 1 + 17 * 40])  # 17 appends
        first = client.post("/v1/sessions/import", content=part).json()
        assert first["sessions"][0] == {"id": sid, "status": "imported", "events": 680}
        rest = client.post("/v1/sessions/import", content=export).json()
        assert rest["sessions"][0] == {"id": sid, "status": "updated", "events": 1200 - 680}
        assert client.get(f"/v1/sessions/{sid}/export").content == export
        again = client.post("/v1/sessions/import", content=export).json()
        assert again["sessions"][0] == {"id": sid, "status": "already_imported"}


def test_a_resumed_session_is_known_as_a_fork_of_the_one_it_copies(
    client: TestClient, home: Path
) -> None:
    """Claude Code writes a resumed session to a new file, under a new session id, that
    begins with the records of the old one: imported, it says which session it forks."""
    records = [orjson.loads(line) for line in CLAUDE.read_bytes().splitlines()]
    old_id = next(r["sessionId"] for r in records if r.get("sessionId"))
    original = imported(client, CLAUDE.read_bytes())["sessions"][0]["id"]

    from .test_import_safety import resumed

    [fork] = imported(client, resumed(records, "5e55a0e0-0000-4000-8000-000000000001"))["sessions"]
    assert fork["status"] == "imported" and fork["fork_of"] == original
    assert lines(home, fork["id"])[0]["x_import"]["fork_of"] == original
    journal = client.get("/v1/journal", params={"op": "session.imported"}).json()["items"]
    assert {e["session"]: e["detail"].get("fork_of") for e in journal}[fork["id"]] == original
    assert lines(home, original)[0]["x_import"]["session_id"] == old_id  # it is as it was
    # a rollout's records are known by their places: another rollout is no fork of it
    codex = imported(client, CODEX.read_bytes())["sessions"][0]
    other = CODEX.read_bytes().replace(b"019e1625-789d", b"019e1625-aaaa")
    [second] = imported(client, other)["sessions"]
    assert "fork_of" not in codex and "fork_of" not in second and second["id"] != codex["id"]
