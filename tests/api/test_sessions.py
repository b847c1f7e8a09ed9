"""The sessions API end to end through the real app and real files."""

from __future__ import annotations

from pathlib import Path

import orjson
from fastapi.testclient import TestClient

from aster_persist.schemas.names import project_slug

from ..conftest import REPO, FakeClock, assistant, call, make_client, new_session, tool, user


def session_file(home: Path, sid: str, repo: str = REPO) -> Path:
    return home / "sessions" / project_slug(repo) / f"{sid}.jsonl"


def lines(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_create_writes_header_line(client: TestClient, home: Path) -> None:
    r = client.post("/v1/sessions", json={"repo_root": REPO, "model": "m1", "x_custom": {"a": 1}})
    assert r.status_code == 201
    header = r.json()
    assert r.headers["location"] == f"/v1/sessions/{header['id']}"
    assert header["type"] == "session" and header["seq"] == 0 and header["v"] == 1
    assert header["created_at"] == "2026-01-02T03:04:05.678Z"
    assert header["x_custom"] == {"a": 1}
    stored = lines(session_file(home, header["id"]))
    assert stored == [header]


def test_append_assigns_gapless_seq_and_ts(
    client: TestClient, home: Path, clock: FakeClock
) -> None:
    sid = new_session(client)
    r = client.post(f"/v1/sessions/{sid}/events", json=user("hi"))
    assert r.status_code == 201 and r.json() == {
        "first_seq": 1,
        "last_seq": 1,
        "count": 1,
        "replayed": False,
    }
    clock.advance(seconds=1)
    batch = [
        assistant(None, [call("c1")]),
        tool("c1", "fn main() {}"),
        assistant("done", ts=None) if False else assistant("done"),
    ]
    r = client.post(f"/v1/sessions/{sid}/events", json={"events": batch})
    assert r.json() == {"first_seq": 2, "last_seq": 4, "count": 3, "replayed": False}
    assert r.headers["etag"] == '"4"'
    stored = lines(session_file(home, sid))
    assert [line["seq"] for line in stored] == [0, 1, 2, 3, 4]
    assert stored[1]["ts"] == "2026-01-02T03:04:05.678Z"
    assert stored[2]["ts"] == "2026-01-02T03:04:06.678Z"


def test_unknown_fields_kept_verbatim_and_client_ts_kept(client: TestClient, home: Path) -> None:
    sid = new_session(client)
    event = user("hi", ts="2025-05-05T05:05:05.000Z", x_meta={"nested": [1, 2.5, None]}, name="bob")
    client.post(f"/v1/sessions/{sid}/events", json=event)
    stored = lines(session_file(home, sid))[1]
    assert stored["ts"] == "2025-05-05T05:05:05.000Z"
    assert stored["x_meta"] == {"nested": [1, 2.5, None]} and stored["name"] == "bob"


def test_batch_is_all_or_nothing(client: TestClient, home: Path) -> None:
    sid = new_session(client)
    before = session_file(home, sid).read_bytes()
    r = client.post(
        f"/v1/sessions/{sid}/events",
        json=[user("ok"), {"type": "message", "role": "tool", "content": "x"}],
    )
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"] == "events[1].tool_call_id"
    assert session_file(home, sid).read_bytes() == before


def test_idempotency_key_header_and_body(client: TestClient, home: Path) -> None:
    sid = new_session(client)
    first = client.post(
        f"/v1/sessions/{sid}/events",
        json=[user("a"), user("b")],
        headers={"Idempotency-Key": "k-1"},
    )
    again = client.post(
        f"/v1/sessions/{sid}/events",
        json=[user("a"), user("b")],
        headers={"Idempotency-Key": "k-1"},
    )
    assert first.status_code == 201 and again.status_code == 200
    assert again.headers["idempotent-replayed"] == "true"
    assert first.json() == {"first_seq": 1, "last_seq": 2, "count": 2, "replayed": False}
    assert again.json() == {"first_seq": 1, "last_seq": 2, "count": 2, "replayed": True}
    body = {"events": [user("c")], "idempotency_key": "k-2"}
    assert client.post(f"/v1/sessions/{sid}/events", json=body).json()["first_seq"] == 3
    assert client.post(f"/v1/sessions/{sid}/events", json=body).json()["first_seq"] == 3
    # the key of one event goes in the header or in {"events", "idempotency_key"}: a
    # field of an event it is not (the document says so of every event)
    single = user("d", idempotency_key="k-3")
    refused = client.post(f"/v1/sessions/{sid}/events", json=single)
    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"][0]["loc"].endswith("idempotency_key")
    assert [line["seq"] for line in lines(session_file(home, sid))] == [0, 1, 2, 3]


def test_idempotency_survives_restart(home: Path, clock: FakeClock) -> None:
    with make_client(home, clock) as c:
        sid = new_session(c)
        c.post(f"/v1/sessions/{sid}/events", json=user("a"), headers={"Idempotency-Key": "once"})
    with make_client(home, clock) as c:
        r = c.post(
            f"/v1/sessions/{sid}/events", json=user("a"), headers={"Idempotency-Key": "once"}
        )
        assert r.status_code == 200 and r.json()["first_seq"] == 1
        assert c.get(f"/v1/sessions/{sid}").json()["events"] == 1


def test_if_match_on_append(client: TestClient, home: Path) -> None:
    sid = new_session(client)
    assert (
        client.post(
            f"/v1/sessions/{sid}/events", json=user("a"), headers={"If-Match": '"0"'}
        ).status_code
        == 201
    )
    stale = client.post(f"/v1/sessions/{sid}/events", json=user("b"), headers={"If-Match": '"0"'})
    assert stale.status_code == 412 and stale.json()["code"] == "precondition_failed"
    assert stale.headers["etag"] == '"1"'
    assert (
        client.post(
            f"/v1/sessions/{sid}/events", json=user("b"), headers={"If-Match": '"1"'}
        ).status_code
        == 201
    )
    bad = client.post(f"/v1/sessions/{sid}/events", json=user("b"), headers={"If-Match": "nope"})
    assert bad.status_code == 422
    assert len(lines(session_file(home, sid))) == 3


def test_list_newest_activity_first_with_cursor(client: TestClient, clock: FakeClock) -> None:
    ids = []
    for i in range(5):
        clock.advance(seconds=1)
        ids.append(new_session(client, title=f"s{i}"))
    clock.advance(seconds=1)
    client.post(f"/v1/sessions/{ids[0]}/events", json=user("bump"))
    seen = []
    cursor = None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/sessions", params=params).json()
        seen += [item["id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [ids[0], ids[4], ids[3], ids[2], ids[1]]
    assert client.get("/v1/sessions", params={"cursor": "garbage!"}).status_code == 422


def test_list_filters_by_repo_root_and_state(client: TestClient, home: Path) -> None:
    a = new_session(client, "/srv/a")
    b = new_session(client, "/srv/b")
    items = client.get("/v1/sessions", params={"repo_root": "/srv/b"}).json()["items"]
    assert [i["id"] for i in items] == [b]
    assert items[0]["project"] == project_slug("/srv/b")
    damaged = session_file(home, a, "/srv/a")
    with damaged.open("ab") as f:
        f.write(b"not json\n" + orjson.dumps(user("x") | {"seq": 2}) + b"\n")
    # the catalog learns of hand damage at the next start (the watcher comes later)
    assert client.get("/v1/sessions", params={"state": "damaged"}).json()["items"] == []


def test_title_resolution(client: TestClient, clock: FakeClock) -> None:
    sid = new_session(client)
    assert client.get(f"/v1/sessions/{sid}").json()["title"] is None
    long = "word " * 40
    client.post(f"/v1/sessions/{sid}/events", json=user(long))
    got = client.get("/v1/sessions").json()["items"][0]
    assert got["title_source"] == "first_message" and got["title"] == " ".join(long.split())[:80]
    titled = new_session(client, title="From header")
    got = client.get(f"/v1/sessions/{titled}").json()
    assert (got["title"], got["title_source"]) == ("From header", "header")
    client.post(
        f"/v1/sessions/{titled}/events",
        json={"type": "title", "title": "Model title", "source": "model"},
    )
    r = client.patch(f"/v1/sessions/{titled}", json={"title": "Mine"})
    assert (
        r.status_code == 200 and r.json()["title"] == "Mine" and r.json()["title_source"] == "event"
    )
    events = client.get(f"/v1/sessions/{titled}/events", params={"type": "title"}).json()["events"]
    assert [(e["title"], e["source"]) for e in events] == [
        ("Model title", "model"),
        ("Mine", "user"),
    ]


def test_latest_by_activity(client: TestClient, clock: FakeClock) -> None:
    old = new_session(client)
    clock.advance(seconds=5)
    new_session(client)
    clock.advance(seconds=5)
    client.post(f"/v1/sessions/{old}/events", json=user("again"))
    assert client.get("/v1/sessions/latest", params={"repo_root": REPO}).json()["id"] == old
    missing = client.get("/v1/sessions/latest", params={"repo_root": "/srv/none"})
    assert missing.status_code == 404 and missing.json()["code"] == "session_not_found"


def test_get_session_etag_and_304(client: TestClient) -> None:
    sid = new_session(client)
    client.post(f"/v1/sessions/{sid}/events", json=user("a"))
    r = client.get(f"/v1/sessions/{sid}")
    assert r.headers["etag"] == '"1"' and r.json()["header"]["id"] == sid
    assert client.get(f"/v1/sessions/{sid}", headers={"If-None-Match": '"1"'}).status_code == 304
    assert client.get(f"/v1/sessions/{sid}", headers={"If-None-Match": '"0"'}).status_code == 200


def test_events_pagination_types_and_ndjson(client: TestClient, home: Path) -> None:
    sid = new_session(client)
    client.post(
        f"/v1/sessions/{sid}/events",
        json=[user(str(i)) for i in range(5)] + [{"type": "title", "title": "t"}],
    )
    page = client.get(f"/v1/sessions/{sid}/events", params={"limit": 2}).json()
    assert [e["seq"] for e in page["events"]] == [1, 2] and page["next_cursor"] == "2"
    page = client.get(f"/v1/sessions/{sid}/events", params={"cursor": "2", "limit": 10}).json()
    assert [e["seq"] for e in page["events"]] == [3, 4, 5, 6] and page["next_cursor"] is None
    assert [
        e["seq"]
        for e in client.get(f"/v1/sessions/{sid}/events", params={"after": 4}).json()["events"]
    ] == [5, 6]
    r = client.get(
        f"/v1/sessions/{sid}/events",
        headers={"Accept": "application/x-ndjson"},
        params={"type": "title"},
    )
    assert r.headers["content-type"].startswith("application/x-ndjson")
    file_lines = session_file(home, sid).read_bytes().splitlines(keepends=True)
    assert r.content == file_lines[6]


def test_export_is_byte_for_byte(client: TestClient, home: Path) -> None:
    sid = new_session(client)
    client.post(f"/v1/sessions/{sid}/events", json=[user("é ✓ \u2028"), assistant("ok")])
    r = client.get(f"/v1/sessions/{sid}/export")
    assert r.content == session_file(home, sid).read_bytes()
    openai = client.get(f"/v1/sessions/{sid}/export", params={"format": "openai"}).json()
    assert openai == [
        {"role": "user", "content": "é ✓ \u2028"},
        {"role": "assistant", "content": "ok"},
    ]


def test_delete_to_trash_restore_and_purge(client: TestClient, home: Path) -> None:
    sid = new_session(client)
    client.post(f"/v1/sessions/{sid}/events", json=user("keep me"))
    content = session_file(home, sid).read_bytes()
    assert client.delete(f"/v1/sessions/{sid}").status_code == 204
    trash = session_file(home, sid).parent / ".trash" / f"{sid}.jsonl"
    assert trash.read_bytes() == content and not session_file(home, sid).exists()
    assert client.get("/v1/sessions").json()["items"] == []
    assert client.get(f"/v1/sessions/{sid}").status_code == 404
    assert client.post(f"/v1/sessions/{sid}/events", json=user("x")).status_code == 404
    r = client.post(f"/v1/sessions/{sid}/restore")
    assert r.status_code == 200 and r.json()["events"] == 1
    assert session_file(home, sid).read_bytes() == content
    assert [i["id"] for i in client.get("/v1/sessions").json()["items"]] == [sid]
    assert client.post(f"/v1/sessions/{sid}/restore").status_code == 409
    assert client.post(f"/v1/sessions/{sid}/events", json=user("after")).json()["first_seq"] == 2
    assert client.delete(f"/v1/sessions/{sid}", params={"purge": "true"}).status_code == 204
    assert not session_file(home, sid).exists() and not trash.exists()
    assert client.post(f"/v1/sessions/{sid}/restore").status_code == 404


def test_prune_dry_run_age_keep_latest_and_purge(home: Path, clock: FakeClock) -> None:
    with make_client(home, clock) as client:
        ids = []
        for _ in range(4):
            ids.append(new_session(client))
            clock.advance(days=10)
        other = new_session(client, "/srv/other")
        dry = client.post("/v1/sessions/prune", json={"older_than_days": 25}).json()
        assert dry["dry_run"] is True
        assert sorted(i["id"] for i in dry["trashed"]) == sorted(ids[:2])
        assert len(client.get("/v1/sessions").json()["items"]) == 5
        keep = client.post("/v1/sessions/prune", json={"keep_latest": 1, "dry_run": True}).json()
        assert sorted(i["id"] for i in keep["trashed"]) == sorted(ids[:3])
        done = client.post("/v1/sessions/prune", json={"keep_latest": 2, "dry_run": False}).json()
        assert sorted(i["id"] for i in done["trashed"]) == sorted(ids[:2])
        remaining = {i["id"] for i in client.get("/v1/sessions").json()["items"]}
        assert remaining == {ids[2], ids[3], other}
        trash = session_file(home, ids[0]).parent / ".trash"
        assert sorted(p.name for p in trash.glob("*.jsonl")) == sorted(
            f"{i}.jsonl" for i in ids[:2]
        )
        assert client.post("/v1/sessions/prune", json={}).status_code == 422
        purged = client.post(
            "/v1/sessions/prune", json={"purge_trash_older_than_days": 0, "dry_run": False}
        ).json()
        assert sorted(purged["purged"]) == sorted(ids[:2])
        assert list(trash.iterdir()) == []


def test_projects(client: TestClient) -> None:
    new_session(client, "/srv/a")
    new_session(client, "/srv/a")
    new_session(client, "/srv/b")
    items = {p["repo_root"]: p for p in client.get("/v1/projects").json()["items"]}
    assert items["/srv/a"]["sessions"] == 2 and items["/srv/b"]["sessions"] == 1


def test_client_given_id_and_duplicates(client: TestClient) -> None:
    sid = "01J0000000000000000000ABCD"
    first = client.post("/v1/sessions", json={"repo_root": REPO, "id": sid})
    assert first.status_code == 201
    retried = client.post("/v1/sessions", json={"repo_root": REPO, "id": sid})
    assert retried.status_code == 200 and retried.json() == first.json()
    dup = client.post("/v1/sessions", json={"repo_root": REPO, "id": sid, "title": "Other"})
    assert dup.status_code == 409 and dup.json()["code"] == "session_exists"
    bad = client.post("/v1/sessions", json={"repo_root": REPO, "id": "../../etc"})
    assert bad.status_code == 422 and bad.json()["code"] == "invalid_name"


def test_catalog_survives_restart_and_deletion(home: Path, clock: FakeClock) -> None:
    with make_client(home, clock) as c:
        for i in range(3):
            sid = new_session(c, f"/srv/p{i}")
            c.post(f"/v1/sessions/{sid}/events", json=[user(f"q{i}"), assistant("a")])
            clock.advance(seconds=1)
        before = c.get("/v1/sessions").json()
    with make_client(home, clock) as c:
        assert c.get("/v1/sessions").json() == before
        info = c.get("/v1/info").json()["catalog"]
        assert info["unchanged"] == 3 and info["full"] == 0
    for path in (home / "index").iterdir():
        path.unlink()
    with make_client(home, clock) as c:
        assert c.get("/v1/sessions").json() == before
        assert c.get("/v1/info").json()["catalog"]["full"] == 3


def test_catalog_catches_up_incrementally_on_outside_appends(home: Path, clock: FakeClock) -> None:
    with make_client(home, clock) as c:
        sid = new_session(c)
        c.post(f"/v1/sessions/{sid}/events", json=user("one"))
    with session_file(home, sid).open("ab") as f:
        f.write(
            orjson.dumps(
                {"type": "title", "seq": 2, "title": "outside", "ts": "2026-02-01T00:00:00.000Z"}
            )
            + b"\n"
        )
    with make_client(home, clock) as c:
        item = c.get("/v1/sessions").json()["items"][0]
        assert (item["events"], item["title"], item["updated_at"]) == (
            2,
            "outside",
            "2026-02-01T00:00:00.000Z",
        )
        assert c.get("/v1/info").json()["catalog"]["incremental"] == 1


def test_corrupt_or_old_catalog_is_rebuilt(home: Path, clock: FakeClock) -> None:
    with make_client(home, clock) as c:
        sid = new_session(c)
        c.post(f"/v1/sessions/{sid}/events", json=user("kept"))
        before = c.get("/v1/sessions").json()
    catalog = home / "index" / "catalog.sqlite3"
    for suffix in ("-wal", "-shm"):
        Path(f"{catalog}{suffix}").unlink(missing_ok=True)
    catalog.write_bytes(b"this is not a database" * 100)
    with make_client(home, clock) as c:
        assert c.get("/v1/sessions").json() == before
    import sqlite3

    db = sqlite3.connect(catalog)
    db.execute("PRAGMA user_version = 999")
    db.commit()
    db.close()
    with make_client(home, clock) as c:
        assert c.get("/v1/sessions").json() == before
        assert c.get("/v1/info").json()["catalog"]["full"] == 1


def test_leftover_temporary_files_are_removed_at_start(home: Path, clock: FakeClock) -> None:
    with make_client(home, clock) as c:
        sid = new_session(c)
    folder = session_file(home, sid).parent
    leftover = folder / f".aster-tmp-{sid}.jsonl.abc123"
    leftover.write_bytes(b"half a rewrite")
    with make_client(home, clock) as c:
        assert not leftover.exists()
        assert c.get(f"/v1/sessions/{sid}").status_code == 200


def test_docs_and_info(client: TestClient, home: Path) -> None:
    docs = client.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    assert client.get("/openapi.json").json()["info"]["title"] == "aster-persist"
    info = client.get("/v1/info").json()
    assert info["home"] == str(home) and info["durability"] == "fsync" and info["auth"] == "off"
    new_session(client)
    assert client.get("/v1/info").json()["counts"]["sessions"] == 1
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz").json()
    assert ready["status"] == "ready" and ready["index"]["caught_up"] is True


def test_metrics(client: TestClient) -> None:
    sid = new_session(client)
    client.post(f"/v1/sessions/{sid}/events", json=user("a"))
    client.post("/v1/memory/blocks", json={"name": "n", "content": "c"})
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    values = dict(
        line.rsplit(" ", 1) for line in r.text.splitlines() if line and not line.startswith("#")
    )
    assert float(values["aster_appends_total"]) == 1.0
    assert float(values["aster_sessions"]) == 1.0 and float(values["aster_memory_blocks"]) == 1.0
    assert float(values["aster_ready"]) == 1.0 and float(values["aster_degraded"]) == 0.0


def test_listing_never_reads_transcript_bodies(client: TestClient, home: Path) -> None:
    """Listing is served from the catalog: a transcript scribbled over behind the daemon's
    back (same size) does not change what a listing says until the file is read again."""
    sid = new_session(client, title="kept in the catalog")
    client.post(f"/v1/sessions/{sid}/events", json=[user("a"), user("b")])
    before = client.get("/v1/sessions").json()
    path = session_file(home, sid)
    path.write_bytes(b"x" * path.stat().st_size)
    assert client.get("/v1/sessions").json() == before
    assert client.get(f"/v1/sessions/{sid}").json()["state"] == "damaged"  # a read does read it


def test_times_are_stored_in_utc_and_ones_utc_cannot_hold_are_refused(
    client: TestClient, home: Path
) -> None:
    sid = new_session(client)
    r = client.post(f"/v1/sessions/{sid}/events", json=user("x", ts="2026-01-01T02:00:00+02:00"))
    assert r.status_code == 201
    events = client.get(f"/v1/sessions/{sid}/events").json()["events"]
    assert events[-1]["ts"] == "2026-01-01T00:00:00.000Z"
    path = session_file(home, sid)
    before = path.read_bytes()
    r = client.post(
        f"/v1/sessions/{sid}/events",
        json=[user("fine"), user("y", ts="0001-01-01T00:00:00+01:00")],
    )
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"] == "events[1].ts"
    assert path.read_bytes() == before
    # a line another program wrote with such a time is read, not a 500
    with path.open("a") as f:
        f.write(
            '{"type":"message","role":"user","content":"old","seq":2,"ts":"0001-01-01T00:00:00+01:00"}\n'
        )
    client.post(f"/v1/sessions/{sid}/events", json=user("after"))
    assert client.get(f"/v1/sessions/{sid}").status_code == 200
    assert client.get(f"/v1/sessions/{sid}/events").status_code == 200


def test_if_match_guards_rename_and_delete(client: TestClient, home: Path) -> None:
    sid = new_session(client)
    client.post(f"/v1/sessions/{sid}/events", json=user("hello"))
    path = session_file(home, sid)
    before = path.read_bytes()
    stale = {"If-Match": '"0"'}
    r = client.patch(f"/v1/sessions/{sid}", json={"title": "new"}, headers=stale)
    assert r.status_code == 412 and r.headers["etag"] == '"1"'
    r = client.delete(f"/v1/sessions/{sid}", headers=stale)
    assert r.status_code == 412 and r.headers["etag"] == '"1"'
    assert path.read_bytes() == before
    r = client.patch(f"/v1/sessions/{sid}", json={"title": "new"}, headers={"If-Match": '"1"'})
    assert r.status_code == 200 and r.headers["etag"] == '"2"'
    assert client.delete(f"/v1/sessions/{sid}", headers={"If-Match": '"2"'}).status_code == 204
    assert client.get(f"/v1/sessions/{sid}").status_code == 404


def test_the_openapi_ui_loads_nothing_from_another_host(client: TestClient) -> None:
    """/docs works offline: every script, style and icon it names is served here."""
    import re

    page = client.get("/docs")
    assert page.status_code == 200
    urls = re.findall(r"""(?:src|href)=["']([^"']+)["']""", page.text)
    urls += re.findall(r"""url: ?["']([^"']+)["']""", page.text)
    assert urls and all(u.startswith("/") and not u.startswith("//") for u in urls), urls
    assert "cdn" not in page.text
    for url in {u for u in urls if u.startswith("/docs/")}:
        asset = client.get(url)
        assert asset.status_code == 200 and len(asset.content) > 500, url
    assert client.get("/docs/swagger-ui.css").headers["content-type"].startswith("text/css")
    assert client.get("/docs/../token").status_code == 404
    assert client.get("/docs/index.html").status_code == 404
