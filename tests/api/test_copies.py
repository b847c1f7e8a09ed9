"""Copies stored once: a resumed Claude Code session refers to the events of the session
it resumes instead of holding them again, shows the whole conversation on every route,
and is given those events before the original is deleted for good."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from aster_persist.cli import main

from ..conftest import CLAUDE_SMALL, FIXTURES, FakeClock, make_client, new_session
from .test_import_safety import resumed

RECORDS = [orjson.loads(line) for line in CLAUDE_SMALL.read_bytes().splitlines()]
RESUMED = "5e55a0e0-0000-4000-8000-00000000c0b1"


def imported(client: TestClient, data: bytes) -> dict[str, Any]:
    r = client.post("/v1/sessions/import", content=data)
    assert r.status_code in (200, 201), r.text
    [session] = r.json()["sessions"]
    return session


def transcript(home: Path, sid: str) -> Path:
    [path] = [p for p in (home / "sessions").rglob(f"{sid}.jsonl*") if ".trash" not in p.parts]
    return path


def views(client: TestClient, sid: str) -> dict[str, Any]:
    """What a reader sees of a session, keys that only say where a line is kept aside
    (and which session a copy forks) aside."""
    export = [
        {k: v for k, v in orjson.loads(line).items() if k != "idempotency_key"}
        for line in client.get(f"/v1/sessions/{sid}/export").content.splitlines()
    ]
    export[0]["x_import"].pop("fork_of", None)
    detail = client.get(f"/v1/sessions/{sid}").json()
    return {
        "events": client.get(f"/v1/sessions/{sid}/events?raw=false").json(),
        "messages": client.get(f"/v1/sessions/{sid}/messages").json(),
        "export": export,
        "summary": {k: v for k, v in detail.items() if k not in ("bytes", "header", "file_mtime")},
    }


def copy_of(records: list[dict[str, Any]], more: int = 1) -> bytes:
    """A resumed session's file: the old records, then ``more`` new ones (a day later)."""
    data = resumed(records, RESUMED)
    *old, extra = [orjson.loads(line) for line in data.splitlines()]
    extra["timestamp"] = "2025-09-04T00:00:00.000Z"
    data = b"".join(orjson.dumps(r) + b"\n" for r in [*old, extra])
    for n in range(1, more):
        data += (
            orjson.dumps(
                {
                    **extra,
                    "uuid": f"{RESUMED}-more-{n}",
                    "message": {"role": "user", "content": f"and then {n}"},
                }
            )
            + b"\n"
        )
    return data


@pytest.fixture
def whole(tmp_path: Path) -> dict[str, Any]:
    """The resumed file imported into a home of its own: the copy as it is when nothing
    is shared, what every view of the shared one must show."""
    with make_client(tmp_path / "alone") as client:
        sid = imported(client, copy_of(RECORDS))["id"]
        return {"id": sid, **views(client, sid)}


def test_a_resumed_copy_holds_only_its_own_events_and_shows_all(
    home: Path, whole: dict[str, Any]
) -> None:
    with make_client(home) as client:
        original = imported(client, CLAUDE_SMALL.read_bytes())["id"]
        copy = imported(client, copy_of(RECORDS))
        assert copy["id"] == whole["id"] and copy["fork_of"] == original
        assert copy["events"] == whole["summary"]["events"]
        stored = transcript(home, copy["id"])
        lines = [orjson.loads(line) for line in stored.read_bytes().splitlines()]
        through = len(transcript(home, original).read_bytes().splitlines()) - 1
        assert lines[0]["base"] == {"session": original, "through_seq": through}
        assert [line["seq"] for line in lines] == [0, through + 1]
        # a tenth of its bytes at most: the shared start is not stored again
        assert stored.stat().st_size <= 0.1 * len(copy_of(RECORDS))
        assert {k: v for k, v in views(client, copy["id"]).items()} == {
            k: v for k, v in whole.items() if k != "id"
        }

        # a search in the copy finds what it shares as its own; one across sessions finds
        # a shared turn once, in the session that holds it
        def search(q: str, **params: str) -> list[tuple[str, int]]:
            hits = client.get("/v1/search", params={"q": q, **params}).json()["items"]
            return [(h["session_id"], h["seq"]) for h in hits]

        assert search("go on", session_id=copy["id"])[:1] == [(copy["id"], through + 1)]
        shared = search("CLAUDE.md", session_id=copy["id"])
        assert shared and {sid for sid, seq in shared} == {copy["id"]}
        assert {seq <= through for _sid, seq in shared} == {True}
        assert [seq for _sid, seq in search("CLAUDE.md")] == [seq for _sid, seq in shared]
        assert {sid for sid, _seq in search("CLAUDE.md")} == {original}
        # the original is as it was
        assert views(client, original)["summary"]["events"] == through


def test_the_original_imported_after_its_resumed_copy_refers_to_the_copy(
    home: Path, tmp_path: Path
) -> None:
    """A tree is imported in no particular order: the session resumed later may be stored
    first, and then holds all the earlier one says; that one refers to it in turn."""
    with make_client(tmp_path / "alone") as client:
        sid = imported(client, CLAUDE_SMALL.read_bytes())["id"]
        alone = views(client, sid)
    with make_client(home) as client:
        copy = imported(client, copy_of(RECORDS))["id"]
        original = imported(client, CLAUDE_SMALL.read_bytes())
        assert original["id"] == sid and "fork_of" not in original
        stored = transcript(home, sid)
        header = orjson.loads(stored.read_bytes().splitlines()[0])
        assert header["base"]["session"] == copy
        assert stored.stat().st_size <= 0.1 * CLAUDE_SMALL.stat().st_size
        assert views(client, sid) == alone
        assert client.delete(f"/v1/sessions/{copy}").status_code == 204
        assert "base" not in orjson.loads(stored.read_bytes().splitlines()[0])
        assert views(client, sid) == alone


def test_a_copy_of_a_copy_refers_on_and_the_original_after_them_too(
    home: Path, tmp_path: Path
) -> None:
    """Resumed twice (and the two resumed files imported before the first): what each
    shows of a copy names the source that copy was first written from (in the records
    it keeps beside its tool calls), and still counts as stored."""
    original = (FIXTURES / "claude-code" / "spotter" / "tool_heavy.jsonl").read_bytes()
    records = [orjson.loads(line) for line in original.splitlines()]
    files = [resumed(records, f"5e55a0e0-0000-4000-8000-00000000c0c{n}") for n in range(2)]
    files.append(original)

    def shown(client: TestClient, sid: str) -> list[Any]:
        return [
            client.get(f"/v1/sessions/{sid}/events?raw=false").json(),
            client.get(f"/v1/sessions/{sid}/messages").json(),
        ]

    alone = []
    for n, data in enumerate(files):
        with make_client(tmp_path / f"alone-{n}") as client:
            alone.append(shown(client, imported(client, data)["id"]))
    with make_client(home) as client:
        ids = [imported(client, data)["id"] for data in files]
        bases = [
            orjson.loads(transcript(home, sid).read_bytes().splitlines()[0]).get("base")
            for sid in ids
        ]
        assert bases[0] is None
        assert bases[1]["session"] == ids[0] and bases[2]["session"] in ids[:2]
        for sid, data in zip(ids[1:], files[1:], strict=True):
            assert transcript(home, sid).stat().st_size <= 0.1 * len(data)
        assert [shown(client, sid) for sid in ids] == alone
        for sid in ids[:2]:  # each deleted in turn: what refers to it is made whole first
            assert client.delete(f"/v1/sessions/{sid}").status_code == 204
        assert shown(client, ids[2]) == alone[2]


def test_a_copy_that_grows_keeps_referring_and_takes_only_what_is_new(home: Path) -> None:
    with make_client(home) as client:
        imported(client, CLAUDE_SMALL.read_bytes())
        first = imported(client, copy_of(RECORDS))
        sid = first["id"]
        size = transcript(home, sid).stat().st_size
        grown = imported(client, copy_of(RECORDS, more=3))
        assert grown == {"id": sid, "status": "updated", "events": 2}
        again = imported(client, copy_of(RECORDS, more=3))
        assert again == {"id": sid, "status": "already_imported"}
        assert transcript(home, sid).stat().st_size < 3 * size
        events = client.get(f"/v1/sessions/{sid}/events").json()["events"]
        assert [e["seq"] for e in events] == list(range(1, first["events"] + 3))
        # an append goes on after them
        r = client.post(f"/v1/sessions/{sid}/events", json=[{"type": "title", "title": "t"}])
        assert r.json()["first_seq"] == events[-1]["seq"] + 1


def test_the_original_deleted_gives_the_copy_its_events_first(
    home: Path, whole: dict[str, Any]
) -> None:
    """Deleted to the trash (from where it may be purged at any time), the original
    first writes the events a copy refers to into the copy, journaled."""
    with make_client(home) as client:
        original = imported(client, CLAUDE_SMALL.read_bytes())["id"]
        sid = imported(client, copy_of(RECORDS))["id"]
        assert client.delete(f"/v1/sessions/{original}").status_code == 204
        lines = [orjson.loads(x) for x in transcript(home, sid).read_bytes().splitlines()]
        assert "base" not in lines[0]
        assert [line["seq"] for line in lines] == list(range(len(lines)))
        assert views(client, sid) == {k: v for k, v in whole.items() if k != "id"}
        journal = client.get("/v1/journal").json()["items"]
        ops = [(e["op"], e["session"]) for e in journal]
        assert ops.index(("session.made_whole", sid)) < ops.index(("session.deleted", original))
        made = next(e for e in journal if e["op"] == "session.made_whole")
        assert made["detail"]["base"] == original
        assert client.post(f"/v1/journal/{made['id']}/revert").status_code == 409
        assert client.delete(f"/v1/sessions/{original}?purge=true").status_code == 204
        assert views(client, sid) == {k: v for k, v in whole.items() if k != "id"}
    with make_client(home) as client:  # and so it is after a restart, from the files alone
        assert views(client, sid) == {k: v for k, v in whole.items() if k != "id"}


def test_a_copy_in_the_trash_is_given_its_events_when_the_original_goes(
    home: Path, whole: dict[str, Any]
) -> None:
    with make_client(home) as client:
        original = imported(client, CLAUDE_SMALL.read_bytes())["id"]
        sid = imported(client, copy_of(RECORDS))["id"]
        assert client.delete(f"/v1/sessions/{sid}").status_code == 204
        [trashed] = (home / "sessions").rglob(f".trash/{sid}.jsonl")
        assert "base" in orjson.loads(trashed.read_bytes().split(b"\n")[0])
        assert client.delete(f"/v1/sessions/{original}?purge=true").status_code == 204
        assert "base" not in orjson.loads(trashed.read_bytes().split(b"\n")[0])
        assert client.post(f"/v1/sessions/{sid}/restore").status_code == 200
        assert views(client, sid) == {k: v for k, v in whole.items() if k != "id"}


def test_prune_gives_the_copies_of_what_it_trashes_their_events(
    home: Path, clock: FakeClock, whole: dict[str, Any]
) -> None:
    with make_client(home, clock) as client:
        original = imported(client, CLAUDE_SMALL.read_bytes())["id"]
        sid = imported(client, copy_of(RECORDS))["id"]
        r = client.post("/v1/sessions/prune", json={"dry_run": False, "keep_latest": 1})
        assert r.status_code == 200 and [s["id"] for s in r.json()["trashed"]] == [original]
        assert "base" not in orjson.loads(transcript(home, sid).read_bytes().splitlines()[0])
        assert views(client, sid) == {k: v for k, v in whole.items() if k != "id"}


def test_a_copy_of_a_compressed_original_reads_it_through_its_compressed_form(
    home: Path, clock: FakeClock, whole: dict[str, Any]
) -> None:
    with make_client(home, clock) as client:
        original = imported(client, CLAUDE_SMALL.read_bytes())["id"]
        sid = imported(client, copy_of(RECORDS))["id"]
        r = client.post("/v1/sessions/compress", json={"older_than_days": 30, "dry_run": False})
        assert original in [s["id"] for s in r.json()["compressed"]], r.text
        assert transcript(home, original).name.endswith(".jsonl.zst")
        assert views(client, sid) == {k: v for k, v in whole.items() if k != "id"}
        # the copy compressed too refers on; deleting the original makes it whole and plain
        assert client.delete(f"/v1/sessions/{original}").status_code == 204
        path = transcript(home, sid)
        assert path.suffix == ".jsonl" and "base" not in orjson.loads(
            path.read_bytes().split(b"\n")[0]
        )
        assert views(client, sid) == {k: v for k, v in whole.items() if k != "id"}


def test_a_copy_whose_original_was_removed_by_hand_is_damaged_not_lost(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with make_client(home) as client:
        original = imported(client, CLAUDE_SMALL.read_bytes())["id"]
        sid = imported(client, copy_of(RECORDS))["id"]
    transcript(home, original).unlink()  # behind the daemon's back
    with make_client(home) as client:
        detail = client.get(f"/v1/sessions/{sid}").json()
        assert detail["state"] == "damaged"
        events = client.get(f"/v1/sessions/{sid}/events").json()["events"]
        assert [e["content"] for e in events] == ["go on"]  # its own events, still served
    with pytest.raises(SystemExit):  # what it found is not repairable: it says so
        main(["doctor", "--home", str(home), "--json"])
    report = orjson.loads(capsys.readouterr().out)
    found = [f for f in report["findings"] if f["kind"] == "missing_base"]
    assert len(found) == 1 and sid in found[0]["path"] and original in found[0]["detail"]


def test_a_client_cannot_make_a_session_refer_to_another(client: TestClient) -> None:
    other = new_session(client)
    r = client.post(
        "/v1/sessions",
        json={"repo_root": "/srv/repo-a", "base": {"session": other, "through_seq": 1}},
    )
    assert r.status_code == 422 and "base" in r.json()["detail"]
    assert len(client.get("/v1/sessions").json()["items"]) == 1


def test_the_catalog_rebuilt_from_the_files_counts_what_a_copy_refers_to(home: Path) -> None:
    with make_client(home) as client:
        imported(client, CLAUDE_SMALL.read_bytes())
        sid = imported(client, copy_of(RECORDS))["id"]
        before = client.get(f"/v1/sessions/{sid}").json()
    for path in (home / "index").iterdir():
        path.unlink()
    with make_client(home) as client:
        after = client.get(f"/v1/sessions/{sid}").json()
        listed = {s["id"]: s for s in client.get("/v1/sessions").json()["items"]}[sid]
    assert after == before
    assert listed["events"] == before["events"] == before["last_seq"] > 2


def test_a_copy_whose_records_name_the_new_session_still_refers(home: Path, tmp_path: Path) -> None:
    """Claude Code's copy of an old record names the new session: in the records an
    import keeps beside a turn too. Those are the stored events still, and the copy shows
    them as they were stored (naming the session they were first written in)."""
    source = FIXTURES / "claude-code" / "spotter" / "tool_heavy.jsonl"
    records = [orjson.loads(line) for line in source.read_bytes().splitlines()]
    data = resumed(records, RESUMED)
    assert b'"sessionId":"' + RESUMED.encode() in data  # in records an import keeps
    with make_client(tmp_path / "alone") as client:
        sid = imported(client, data)["id"]
        alone = client.get(f"/v1/sessions/{sid}/events?raw=false").json()
    with make_client(home) as client:
        original = imported(client, source.read_bytes())["id"]
        copy = imported(client, data)
        assert copy["id"] == sid
        stored = transcript(home, sid)
        assert orjson.loads(stored.read_bytes().split(b"\n")[0])["base"]["session"] == original
        assert stored.stat().st_size <= 0.1 * len(data)
        assert client.get(f"/v1/sessions/{sid}/events?raw=false").json() == alone
        through = orjson.loads(stored.read_bytes().split(b"\n")[0])["base"]["through_seq"]
        shared = client.get(f"/v1/sessions/{sid}/export").content.splitlines()[1 : through + 1]
        old = next(r["sessionId"] for r in records if r.get("sessionId"))
        assert any(old.encode() in line for line in shared)
        assert not any(RESUMED.encode() in line for line in shared)


def test_a_copy_made_whole_in_the_middle_of_an_append_keeps_every_event(
    home: Path, tmp_path: Path
) -> None:
    """A long source is written in appends of many events, the first line of each saying
    how many; a copy that shares only the start of one is made whole without that mark,
    which at the end of the copy's shared part would read as an append cut short."""
    from ..e2e.test_import_large import big_transcript

    source = tmp_path / "long.jsonl"
    big_transcript(source, 1_500_000)
    records = [orjson.loads(line) for line in source.read_bytes().splitlines()]
    with make_client(home) as client:
        original = imported(client, source.read_bytes())
        assert original["events"] > 1100
        cut = records[: len(records) * 3 // 4]  # inside its second append
        copy = imported(client, resumed(cut, RESUMED))
        stored = orjson.loads(transcript(home, copy["id"]).read_bytes().split(b"\n")[0])
        through = stored["base"]["through_seq"]
        events = client.get(f"/v1/sessions/{original['id']}/events?limit=5000").json()
        marks = [(e["seq"], e["batch_size"]) for e in events["events"] if e.get("batch_size")]
        assert any(seq <= through < seq + size - 1 for seq, size in marks)  # mid-append

        def shown() -> list[dict[str, Any]]:  # (the mark is how it was written, not what)
            url = f"/v1/sessions/{copy['id']}/events?raw=false&limit=5000"
            return [
                {k: v for k, v in e.items() if k != "batch_size"}
                for e in client.get(url).json()["events"]
            ]

        before = shown()
        assert client.delete(f"/v1/sessions/{original['id']}?purge=true").status_code == 204
        assert shown() == before and len(before) == copy["events"]
        assert client.get(f"/v1/sessions/{copy['id']}").json()["state"] == "ok"
    with make_client(home) as client:  # read again from the file alone
        assert shown() == before
