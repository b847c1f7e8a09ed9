"""The journal records every session lifecycle change, durably, in order."""

from __future__ import annotations

from pathlib import Path

import orjson
from fastapi.testclient import TestClient

from aster_persist.schemas.journal import OPS
from aster_persist.schemas.names import project_slug

from ..conftest import REPO, FakeClock, make_client, new_session, user


def entries(client: TestClient, **params: str) -> list[dict]:
    return client.get("/v1/journal", params=params).json()["items"]


def test_lifecycle_is_journaled(client: TestClient, home: Path) -> None:
    sid = new_session(client)
    client.patch(f"/v1/sessions/{sid}", json={"title": "named"})
    client.delete(f"/v1/sessions/{sid}")
    client.post(f"/v1/sessions/{sid}/restore")
    client.delete(f"/v1/sessions/{sid}", params={"purge": "true"})
    got = entries(client)
    assert [e["op"] for e in got] == [
        "session.created",
        "session.renamed",
        "session.deleted",
        "session.restored",
        "session.purged",
    ]
    scope = f"project:{project_slug(REPO)}"
    assert all(e["session"] == sid and e["scope"] == scope and e["actor"] == "api" for e in got)
    assert got[1]["detail"] == {"title": "named", "seq": 1}
    assert [e["id"] for e in got] == sorted(e["id"] for e in got)
    lines = [orjson.loads(line) for line in (home / "journal.jsonl").read_bytes().splitlines()]
    derived = ("revertible", "reverted_by")  # worked out when read, never stored
    assert lines == [{k: v for k, v in e.items() if k not in derived} for e in got]
    # whether an entry can be reverted is the ops table's, served with it, never stored
    assert [e["revertible"] for e in got] == [OPS[e["op"]].revertible for e in got]


def test_appends_are_not_journaled_and_bad_input_is_not(client: TestClient) -> None:
    sid = new_session(client)
    client.post(f"/v1/sessions/{sid}/events", json=user("hi"))
    client.post(f"/v1/sessions/{sid}/events", json={"type": "nope"})
    client.post("/v1/sessions", json={"repo_root": "relative"})
    assert [e["op"] for e in entries(client)] == ["session.created"]


def test_filters_and_cursor(client: TestClient, clock: FakeClock) -> None:
    a = new_session(client, "/srv/a")
    b = new_session(client, "/srv/b")
    client.delete(f"/v1/sessions/{a}")
    assert [e["session"] for e in entries(client, op="session.created")] == [a, b]
    assert [e["op"] for e in entries(client, op="session")] == ["session.created"] * 2 + [
        "session.deleted"
    ]
    assert [e["session"] for e in entries(client, scope=f"project:{project_slug('/srv/b')}")] == [b]
    assert [e["op"] for e in entries(client, session=a)] == ["session.created", "session.deleted"]
    first = client.get("/v1/journal", params={"limit": 2}).json()
    assert len(first["items"]) == 2 and first["next_cursor"] == first["items"][1]["id"]
    rest = client.get("/v1/journal", params={"cursor": first["next_cursor"]}).json()
    assert [e["op"] for e in rest["items"]] == ["session.deleted"] and rest["next_cursor"] is None
    assert client.get("/v1/journal", params={"cursor": "../x"}).status_code == 422


def test_ids_stay_in_order_across_restarts_with_a_frozen_clock(
    home: Path, clock: FakeClock
) -> None:
    with make_client(home, clock) as c:
        for _ in range(5):
            new_session(c)
    with make_client(home, clock) as c:
        for _ in range(5):
            new_session(c)
        ids = [e["id"] for e in entries(c, limit="100")]
    assert len(ids) == 10 and ids == sorted(ids) and len(set(ids)) == 10


def test_torn_journal_tail_is_moved_aside(home: Path, clock: FakeClock) -> None:
    with make_client(home, clock) as c:
        new_session(c)
    with (home / "journal.jsonl").open("ab") as f:
        f.write(b'{"id": "01J')
    with make_client(home, clock) as c:
        new_session(c)
        assert [e["op"] for e in entries(c)] == ["session.created"] * 2
    aside = list(home.glob("journal.jsonl.torn-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == b'{"id": "01J'


def test_session_changes_revert(client: TestClient, home: Path) -> None:
    sid = new_session(client, title="first")
    client.patch(f"/v1/sessions/{sid}", json={"title": "second"})
    renamed = entries(client, op="session.renamed")[0]
    assert renamed["before"] == {"title": "first", "title_source": "header"}
    assert client.post(f"/v1/journal/{renamed['id']}/revert").status_code == 200
    assert client.get(f"/v1/sessions/{sid}").json()["title"] == "first"
    client.delete(f"/v1/sessions/{sid}")
    deleted = entries(client, op="session.deleted")[0]
    assert client.post(f"/v1/journal/{deleted['id']}/revert").status_code == 200
    assert [i["id"] for i in client.get("/v1/sessions").json()["items"]] == [sid]
    restored = entries(client, op="session.restored")[-1]
    assert restored["detail"] == {"reverted": deleted["id"]}
    assert client.post(f"/v1/journal/{restored['id']}/revert").status_code == 200
    assert client.get("/v1/sessions").json()["items"] == []
    client.post(f"/v1/sessions/{sid}/restore")
    client.delete(f"/v1/sessions/{sid}", params={"purge": "true"})
    purged = entries(client, op="session.purged")[0]
    r = client.post(f"/v1/journal/{purged['id']}/revert")
    assert r.status_code == 422 and "gone for good" in r.json()["detail"]


def test_the_operations_and_actors_are_served_from_the_store_s_table(client: TestClient) -> None:
    from aster_persist.schemas.journal import ACTORS

    served = client.get("/v1/journal/operations").json()
    assert [o["op"] for o in served["operations"]] == list(OPS)
    assert {o["op"]: o["revertible"] for o in served["operations"]} == {
        op: found.revertible for op, found in OPS.items()
    }
    assert all(o["records"] for o in served["operations"])
    assert served["actors"] == list(ACTORS)


def test_a_session_found_at_start_with_no_entry_is_journaled_as_what_its_file_says(
    home: Path, clock: FakeClock
) -> None:
    # a crash between a session's sync and its journal line: the start journals it, an
    # import as the import it was (so its source is known again), the rest as made
    source = sorted((Path(__file__).parents[1] / "fixtures" / "codex").rglob("*.jsonl"))[0]
    with make_client(home, clock) as c:
        made = new_session(c)
        r = c.post("/v1/sessions/import", content=source.read_bytes())
        assert r.status_code == 201, r.text
        sid = r.json()["sessions"][0]["id"]
        before = entries(c, op="session.imported")[0]
    journal = home / "journal.jsonl"
    kept = [line for line in journal.read_bytes().splitlines(keepends=True) if sid not in str(line)]
    kept = [line for line in kept if made not in str(line)]
    journal.write_bytes(b"".join(kept))
    with make_client(home, clock) as c:
        found = {e["session"]: e for e in entries(c, limit="100")}
        assert found[made]["op"] == "session.created"
        assert found[made]["actor"] == "watcher"
        assert found[sid]["op"] == "session.imported"
        assert {k: found[sid]["detail"][k] for k in ("repo_root", "format", "source")} == {
            k: before["detail"][k] for k in ("repo_root", "format", "source")
        }
        again = c.post("/v1/sessions/import", content=source.read_bytes()).json()
        assert [s["status"] for s in again["sessions"]] == ["already_imported"]
        assert [s["id"] for s in again["sessions"]] == [sid]
