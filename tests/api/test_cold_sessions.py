"""Cold sessions through the API: kept compressed when idle (on request, and by the
daemon itself at start), read the same by every route, made plain again by an append,
journaled both ways; bad requests change nothing."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ..conftest import CLAUDE_SMALL, FakeClock, assistant, make_client, new_session, user


def tree(home: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in sorted((home / "sessions").rglob("*"))
        if p.is_file()
    }


def until(condition: Callable[[], bool], seconds: float = 30) -> None:
    """Wait for what the daemon does on its own threads (the catalog, its sweeps)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.02)


def views(client: TestClient, sid: str) -> dict[str, object]:
    """What a reader sees of a session, route by route."""
    return {
        "events": client.get(f"/v1/sessions/{sid}/events").json(),
        "messages": client.get(f"/v1/sessions/{sid}/messages").json(),
        "export": client.get(f"/v1/sessions/{sid}/export").content,
        "detail": {
            k: v
            for k, v in client.get(f"/v1/sessions/{sid}").json().items()
            if k not in ("file_mtime",)
        },
        "search": [
            (h["session_id"], h["seq"], h["snippet"])
            for h in client.get("/v1/search?q=kestrel&limit=100").json()["items"]
        ],
    }


def test_idle_sessions_compressed_on_request_read_the_same_and_plain_again_on_append(
    home: Path, clock: FakeClock
) -> None:
    with make_client(home, clock) as client:
        old = new_session(client)
        events = [user("where is the kestrel deploy key kept?"), assistant("in the vault")] * 20
        assert client.post(f"/v1/sessions/{old}/events", json=events).status_code == 201
        clock.advance(days=20)
        fresh = new_session(client)
        assert (
            client.post(f"/v1/sessions/{fresh}/events", json=[user("kestrel")]).status_code == 201
        )
        plain = next((home / "sessions").rglob(f"{old}.jsonl"))
        data = plain.read_bytes()
        until(lambda: len(views(client, old)["search"]) == 21)  # type: ignore[arg-type]
        seen = views(client, old)

        before = tree(home)
        dry = client.post("/v1/sessions/compress", json={}).json()  # a dry run by default
        assert [s["id"] for s in dry["compressed"]] == [old] and dry["older_than_days"] == 14
        assert dry["bytes"] == len(data) and 0 < dry["compressed_bytes"] < len(data) / 4
        assert tree(home) == before  # nothing written

        done = client.post("/v1/sessions/compress", json={"dry_run": False}).json()
        assert [s["id"] for s in done["compressed"]] == [old] and done["dry_run"] is False
        packed = plain.with_name(plain.name + ".zst")
        assert not plain.exists() and packed.stat().st_size == done["compressed_bytes"]
        assert subprocess.run(["zstdcat", packed], capture_output=True).stdout == data
        assert views(client, old) == seen  # every route reads the compressed form
        again = client.post("/v1/sessions/compress", json={"dry_run": False}).json()
        assert again["compressed"] == []  # once

        appended = client.post(f"/v1/sessions/{old}/events", json=[user("and the kestrel?")])
        assert appended.status_code == 201 and appended.json()["first_seq"] == 41
        assert not packed.exists() and plain.read_bytes().startswith(data)
        seqs = [e["seq"] for e in client.get(f"/v1/sessions/{old}/events").json()["events"]]
        assert seqs == list(range(1, 42))
        ops = [
            e["op"]
            for e in client.get(f"/v1/journal?session={old}").json()["items"]
            if e["op"].startswith("session.")
        ]
        assert ops[-2:] == ["session.compressed", "session.decompressed"]  # oldest first
        entries = client.get(f"/v1/journal?session={old}&op=session.compressed").json()["items"]
        assert entries[0]["detail"]["bytes"] == len(data) and entries[0]["actor"] == "api"
        assert entries[0]["revertible"] is False
        refused = client.post(f"/v1/journal/{entries[0]['id']}/revert")
        assert refused.status_code == 409 and "cannot be reverted" in refused.json()["detail"]


def test_the_daemon_compresses_what_it_finds_cold_at_start(home: Path) -> None:
    """An import of months-old history is kept compressed by the daemon itself, once the
    catalog has caught up at its next start (the default: 14 days)."""
    with make_client(home) as client:
        imported = client.post(
            "/v1/sessions/import?format=claude-code&repo_root=/srv/repo-a",
            content=CLAUDE_SMALL.read_bytes(),
        )
        assert imported.status_code == 201, imported.text
        sid = imported.json()["sessions"][0]["id"]
        exported = client.get(f"/v1/sessions/{sid}/export").content
    with make_client(home) as client:
        until(lambda: not list((home / "sessions").rglob(f"{sid}.jsonl")))
        assert list((home / "sessions").rglob(f"{sid}.jsonl.zst"))
        assert client.get(f"/v1/sessions/{sid}/export").content == exported
        entry = client.get("/v1/journal?op=session.compressed").json()["items"][0]
        assert entry["actor"] == "consolidator" and entry["session"] == sid
    with make_client(home, compress_after_days=0) as client:  # 0: never, and nothing undone
        assert client.get(f"/v1/sessions/{sid}/export").content == exported


def test_a_bad_compress_request_is_refused_and_changes_nothing(
    home: Path, clock: FakeClock
) -> None:
    with make_client(home, clock) as client:
        new_session(client)
        clock.advance(days=30)
        before = tree(home)
        for body in ({"older_than_days": -1}, {"dry_run": "no"}, {"older": 3}, []):
            r = client.post("/v1/sessions/compress", json=body)
            assert r.status_code == 422, body
            assert r.headers["content-type"] == "application/problem+json"
        assert tree(home) == before


def test_a_compressed_transcript_that_does_not_read_back_is_listed_damaged(
    home: Path, clock: FakeClock
) -> None:
    with make_client(home, clock) as client:
        sid = new_session(client)
        assert client.post(f"/v1/sessions/{sid}/events", json=[user("hello")]).status_code == 201
        clock.advance(days=30)
        done = client.post("/v1/sessions/compress", json={"dry_run": False}).json()
        assert [s["id"] for s in done["compressed"]] == [sid]
    packed = next((home / "sessions").rglob(f"{sid}.jsonl.zst"))
    packed.write_bytes(packed.read_bytes()[:-6])  # its last bytes lost
    (home / "index" / "catalog.sqlite3").unlink()  # read again from the files
    for suffix in ("-wal", "-shm"):
        (home / "index" / f"catalog.sqlite3{suffix}").unlink(missing_ok=True)
    with make_client(home, clock) as client:
        until(lambda: client.get("/readyz").status_code == 200)  # caught up from the files
        [listed] = client.get("/v1/sessions").json()["items"]
        assert listed["id"] == sid and listed["state"] == "damaged"
        r = client.get(f"/v1/sessions/{sid}/events")
        assert r.status_code >= 500 and r.headers["content-type"] == "application/problem+json"
        assert "compressed transcript" in r.json()["detail"]


def test_info_says_what_the_home_takes_and_what_could_be_freed(
    home: Path, clock: FakeClock
) -> None:
    with make_client(home, clock) as client:
        noise = [user(f"turn {n}: the same words again and again") for n in range(60)]
        ids = [new_session(client, root) for root in ("/srv/a", "/srv/a", "/srv/b")]
        for sid in ids:
            assert client.post(f"/v1/sessions/{sid}/events", json=noise).status_code == 201
        assert client.delete(f"/v1/sessions/{ids[2]}").status_code == 204
        clock.advance(days=20)
        assert "space" not in client.get("/v1/info").json()  # only when asked
        space = client.get("/v1/info?space=true").json()["space"]
        files = {p.name: p.stat().st_size for p in (home / "sessions").rglob("*") if p.is_file()}
        live = [files[f"{sid}.jsonl"] for sid in ids[:2]]
        assert space["kinds"]["plain"] == sum(live)
        assert space["projects"] == [
            {"repo_root": "/srv/a", "slug": space["projects"][0]["slug"], "sessions": 2,
             "bytes": sum(live)}
        ]  # fmt: skip
        assert space["tools"] == [{"tool": "api", "sessions": 2, "bytes": sum(live)}]
        trashed = files[f"{ids[2]}.jsonl"] + files[f"{ids[2]}.jsonl.trashed"]
        assert space["trash"] == {"sessions": 1, "bytes": trashed}
        cold = space["compression"]
        assert cold["sessions"] == 2 and cold["bytes"] == sum(live) and cold["after_days"] == 14
        assert cold["sampled_bytes"] == sum(live) and 0 < cold["ratio"] < 0.2

        done = client.post("/v1/sessions/compress", json={"dry_run": False}).json()
        assert done["freed_bytes"] == pytest.approx(cold["would_free"], rel=0.01)
        after = client.get("/v1/info?space=true").json()["space"]
        assert after["kinds"]["plain"] == 0
        assert after["kinds"]["compressed"] == done["compressed_bytes"]
        assert after["compression"]["sessions"] == 0 and after["compression"]["would_free"] == 0
