"""What the dashboard reads, open to every client: sessions filtered and sorted with
cursors that follow the order, the filters' values, a project's events per day, events
as a reader sees them, the journal newest first with its reverts, a block's body changed
by PATCH, frontmatter of the wrong kind refused, and who made a change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest
from fastapi.testclient import TestClient

from aster_persist.api.sessions import SortKey
from aster_persist.index.catalog.listing import SORTS

from ..conftest import FIXTURES, REPO, FakeClock, assistant, call, snapshot, tool, user

OTHER = "/srv/other"
KEY = {  # each sort's value, as a summary shows it
    "updated": lambda s: s["updated_at"] if s["timed"] else "",  # no times: after the rest
    "created": lambda s: s["created_at"],
    "events": lambda s: s["events"],
    "turns": lambda s: s["turns"],
    "tool_calls": lambda s: s["tool_calls"],
    "tool_errors": lambda s: s["tool_errors"],
    "tokens": lambda s: s["tokens_in"] + s["tokens_out"],
    "duration": lambda s: s["duration_ms"],
}


def made(client: TestClient, repo: str, events: list[dict[str, Any]], **fields: Any) -> str:
    sid = client.post("/v1/sessions", json={"repo_root": repo, **fields}).json()["id"]
    assert client.post(f"/v1/sessions/{sid}/events", json=events).status_code == 201
    return sid


def ids(client: TestClient, **params: Any) -> list[str]:
    r = client.get("/v1/sessions", params=params)
    assert r.status_code == 200, r.text
    return [s["id"] for s in r.json()["items"]]


def turn(text: str, model: str, ts: str, **extra: Any) -> dict[str, Any]:
    return {**assistant(text), "model": model, "ts": ts, **extra}


def test_sessions_filter_sort_and_page_in_their_order(client: TestClient) -> None:
    assert set(get_args(SortKey)) == set(SORTS)  # the API names every sort the catalog has
    quiet = made(client, REPO, [user("hi", ts="2026-03-01T10:00:00Z")])
    busy = made(
        client,
        REPO,
        [
            user("go", ts="2026-03-02T10:00:00Z"),
            {
                **assistant(calls=[call("c1", "run")]),
                "model": "gpt-5",
                "ts": "2026-03-02T10:00:01Z",
            },
            {**tool("c1", "boom"), "is_error": True, "ts": "2026-03-02T10:05:00Z"},
            turn(
                "done",
                "gpt-5",
                "2026-03-02T11:00:00Z",
                usage={"input_tokens": 900, "output_tokens": 99},
            ),
        ],
    )
    other = made(client, OTHER, [turn("elsewhere", "claude-x", "2026-03-03T09:00:00Z")])
    data = (FIXTURES / "claude-code" / "spotter" / "tool_heavy.jsonl").read_bytes()
    imported = client.post("/v1/sessions/import", content=data, params={"repo_root": REPO})
    clauded = imported.json()["sessions"][0]["id"]
    tau = json.loads((FIXTURES / "openai-chat" / "tau-bench" / "gpt-4o-airline.json").read_text())
    untimed = client.post(  # chats with no times, imported last: listed after the rest
        "/v1/sessions/import", content=json.dumps(tau[:2]), params={"repo_root": REPO}
    )
    undated = sorted(s["id"] for s in untimed.json()["sessions"])
    newest = client.get("/v1/sessions").json()["items"]
    assert sorted(s["id"] for s in newest[-2:]) == undated
    assert [s["timed"] for s in newest] == [True] * 4 + [False] * 2
    assert sorted(ids(client, repo_root=REPO)[-2:]) == undated  # in a project too

    assert ids(client, source_tool="claude-code") == [clauded]
    assert set(ids(client, source_tool="api")) == {quiet, busy, other}
    assert ids(client, model="gpt-5") == [busy]
    assert ids(client, errors=True, source_tool="api") == [busy]
    assert busy not in ids(client, errors=False)
    assert ids(client, since="2026-03-02", until="2026-03-02") == [busy]  # the whole day
    assert ids(client, since="2026-03-02T10:30:00+01:00", until="2026-03-02") == [busy]
    assert ids(client, since="2026-03-01", until="2026-03-01") == [quiet]
    every = set(ids(client))  # bounds beyond what can be written are the ends of time
    assert set(ids(client, since="0001-01-01T00:00:00+01:00")) == every
    assert set(ids(client, until="9999-12-31T23:59:59-05:00")) == every
    assert set(ids(client, until="9999-12-31")) == every
    assert ids(client, sort="duration", source_tool="api")[0] == busy
    assert ids(client, sort="tokens", source_tool="api")[0] == busy
    created = [s for s in ids(client, sort="created", order="asc") if s not in undated]
    assert created[:3] == [quiet, busy, other]

    for sort in SORTS:  # every order pages through every session once, in order
        for order in ("asc", "desc"):
            seen: list[str] = []
            cursor = None
            while True:
                params = {"sort": sort, "order": order, "limit": 1, "cursor": cursor}
                page = client.get("/v1/sessions", params={k: v for k, v in params.items() if v})
                assert page.status_code == 200, page.text
                seen += [s["id"] for s in page.json()["items"]]
                cursor = page.json()["next_cursor"]
                if not cursor:
                    break
            assert sorted(seen) == sorted([quiet, busy, other, clauded, *undated]), (sort, order)
            assert seen == ids(client, sort=sort, order=order), (sort, order)
            listed = client.get("/v1/sessions", params={"sort": sort, "order": order}).json()
            keys = [KEY[sort](s) for s in listed["items"]]  # in the order asked for
            assert keys == sorted(keys, reverse=order == "desc"), (sort, order, keys)

    for cursor in ("~0", "--5~01J", "123456789012345678901234~01J", "2026-01-01T00:00:00.000Z~0"):
        # in a number order a value that is no number is text: after every number
        desc = client.get("/v1/sessions", params={"sort": "turns", "cursor": cursor})
        assert desc.status_code == 200 and len(desc.json()["items"]) == 6
        asc = client.get("/v1/sessions", params={"sort": "turns", "order": "asc", "cursor": cursor})
        assert asc.status_code == 200 and asc.json()["items"] == []
    facets = client.get("/v1/sessions/facets").json()
    assert {"value": "api", "sessions": 3} in facets["source_tools"]
    assert {"value": "openai-chat", "sessions": 2} in facets["source_tools"]
    assert {"value": "claude-code", "sessions": 1} in facets["source_tools"]
    assert {"value": "gpt-5", "sessions": 1} in facets["models"]


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"sort": "size"}, "sort"),
        ({"order": "up"}, "order"),
        ({"since": "last week"}, "since"),
        ({"since": ""}, "since"),
        ({"until": "2026-13-01"}, "until"),
        ({"errors": "maybe"}, "errors"),
        ({"sort": "turns", "cursor": "no cursor"}, "cursor"),
    ],
)
def test_a_bad_listing_filter_is_a_422_naming_it(
    client: TestClient, params: dict[str, str], named: str
) -> None:
    r = client.get("/v1/sessions", params=params)
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"
    assert named in r.json()["detail"]


def test_activity_counts_events_per_day_of_a_project(client: TestClient, clock: FakeClock) -> None:
    made(client, REPO, [user("a", ts="2026-01-01T23:59:00Z"), user("b", ts="2026-01-02T00:01:00Z")])
    made(client, REPO, [user("c", ts="2026-01-02T08:00:00Z")])
    made(client, OTHER, [user("d", ts="2026-01-02T09:00:00Z")])
    days = client.get("/v1/projects/activity", params={"repo_root": REPO, "days": 3650}).json()
    assert days["repo_root"] == REPO
    assert days["days"] == [
        {"day": "2026-01-01", "events": 1},
        {"day": "2026-01-02", "events": 2},
    ]
    everything = client.get("/v1/projects/activity", params={"days": 3650}).json()["days"]
    assert everything[-1] == {"day": "2026-01-02", "events": 3}
    assert client.get("/v1/projects/activity", params={"days": 0}).status_code == 422


def test_events_as_a_reader_sees_them_leave_the_source_records_out(client: TestClient) -> None:
    data = (FIXTURES / "claude-code" / "spotter" / "tool_heavy.jsonl").read_bytes()
    sid = client.post("/v1/sessions/import", content=data, params={"repo_root": REPO}).json()[
        "sessions"
    ][0]["id"]
    whole = client.get(f"/v1/sessions/{sid}/events", params={"limit": 5000})
    lean = client.get(f"/v1/sessions/{sid}/events", params={"limit": 5000, "raw": "false"})
    assert any("x_source" in e for e in whole.json()["events"])
    assert not any("x_source" in e or "idempotency_key" in e for e in lean.json()["events"])
    assert len(lean.content) < len(whole.content) / 2
    for kept, full in zip(lean.json()["events"], whole.json()["events"], strict=True):
        assert kept == {k: v for k, v in full.items() if k not in ("x_source", "idempotency_key")}
    lines = client.get(
        f"/v1/sessions/{sid}/events",
        params={"raw": "false", "limit": 2},
        headers={"Accept": "application/x-ndjson"},
    )
    assert b"x_source" not in lines.content and lines.content.count(b"\n") == 2
    assert "raw=false" in lines.headers["link"]


def test_journal_pages_newest_first_and_says_what_reverted_an_entry(client: TestClient) -> None:
    for n in range(5):
        client.post("/v1/memory/blocks", json={"name": f"b{n}", "content": f"fact {n}"})
    entries = client.get("/v1/journal").json()["items"]
    first = entries[0]
    reverted = client.post(f"/v1/journal/{first['id']}/revert")
    assert reverted.status_code == 200
    newest = client.get("/v1/journal", params={"order": "desc", "limit": 2}).json()
    assert newest["items"][0]["op"] == "memory.revert"
    assert newest["items"][1]["name"] == "b4"
    rest = client.get(
        "/v1/journal", params={"order": "desc", "limit": 100, "cursor": newest["next_cursor"]}
    ).json()["items"]
    assert [e["name"] for e in rest] == ["b3", "b2", "b1", "b0"]
    assert rest[-1]["reverted_by"] == newest["items"][0]["id"]
    assert rest[0]["reverted_by"] is None
    assert client.get("/v1/journal", params={"actor": "watcher"}).json()["items"] == []
    assert len(client.get("/v1/journal", params={"since": "2026-01-01"}).json()["items"]) == 6
    assert client.get("/v1/journal", params={"since": "2999-01-01"}).json()["items"] == []
    assert client.get("/v1/journal", params={"until": "2000-01-01"}).json()["items"] == []
    assert client.get("/v1/journal", params={"order": "sideways"}).status_code == 422
    assert client.get("/v1/journal", params={"actor": "someone"}).status_code == 422


def test_a_change_says_who_asked_for_it_and_a_stranger_is_refused(
    client: TestClient, home: Path
) -> None:
    said = {"X-Aster-Actor": "dashboard"}
    client.post("/v1/memory/blocks", json={"name": "a", "content": "one"}, headers=said)
    client.put(
        "/v1/memory/blocks/a", content="two\n", headers={**said, "Content-Type": "text/markdown"}
    )
    sid = client.post("/v1/sessions", json={"repo_root": REPO}, headers=said).json()["id"]
    client.patch(f"/v1/sessions/{sid}", json={"title": "named"}, headers=said)
    client.post("/v1/memory/blocks", json={"name": "b", "content": "three"})
    actors = [(e["op"], e["actor"]) for e in client.get("/v1/journal").json()["items"]]
    assert actors == [
        ("memory.write", "dashboard"),
        ("memory.edit", "dashboard"),
        ("session.created", "dashboard"),
        ("session.renamed", "dashboard"),
        ("memory.write", "api"),
    ]
    before = snapshot(home)
    r = client.post(
        "/v1/memory/blocks", json={"name": "c", "content": "x"}, headers={"X-Aster-Actor": "tool"}
    )
    assert r.status_code == 422 and "X-Aster-Actor" in r.json()["detail"]
    assert snapshot(home) == before


def test_patch_changes_the_body_and_keeps_every_other_key(client: TestClient) -> None:
    text = "---\ndescription: how we test\nx_owner: team-a\nsource_session: s1\n---\nRun it.\n"
    client.put("/v1/memory/blocks/testing", content=text, headers={"Content-Type": "text/markdown"})
    etag = client.get("/v1/memory/blocks/testing", params={"track": "false"}).headers["etag"]
    r = client.patch(
        "/v1/memory/blocks/testing",
        json={"body": "Run make test.", "importance": 0.8},
        headers={"If-Match": etag},
    )
    assert r.status_code == 200, r.text
    read = client.get("/v1/memory/blocks/testing", params={"track": "false"}).json()
    assert read["body"] == "Run make test.\n"
    assert read["metadata"]["x_owner"] == "team-a" and read["metadata"]["source_session"] == "s1"
    assert read["description"] == "how we test" and read["importance"] == 0.8
    last = client.get("/v1/journal", params={"order": "desc", "limit": 1}).json()["items"][0]
    assert last["op"] == "memory.edit" and last["detail"]["keys"] == ["body", "importance"]
    nothing = client.patch("/v1/memory/blocks/testing", json={"body": None})
    assert nothing.status_code == 422 and "body" in nothing.json()["detail"]
    stale = client.patch(
        "/v1/memory/blocks/testing", json={"body": "lost"}, headers={"If-Match": etag}
    )
    assert stale.status_code == 412


@pytest.mark.parametrize(
    ("frontmatter", "named"),
    [
        ("importance: lots", "importance"),
        ("importance: 3", "importance"),
        ("pinned: maybe", "pinned"),
        ("type: weird", "type"),
        ("tags: 5", "tags"),
        ("confidence: -1", "confidence"),
    ],
)
def test_frontmatter_of_the_wrong_kind_is_refused_and_nothing_written(
    client: TestClient, home: Path, frontmatter: str, named: str
) -> None:
    client.post("/v1/memory/blocks", json={"name": "kept", "content": "as it was"})
    before = snapshot(home)
    r = client.put(
        "/v1/memory/blocks/kept",
        content=f"---\n{frontmatter}\n---\nchanged\n",
        headers={"Content-Type": "text/markdown"},
    )
    assert r.status_code == 422 and named in r.json()["detail"], r.text
    assert snapshot(home) == before


def test_search_bounds_hits_by_time_and_names_a_memory_hits_project(
    client: TestClient, clock: FakeClock
) -> None:
    made(client, REPO, [user("the zebra test flakes", ts="2026-03-02T10:00:00Z")])
    client.post(
        "/v1/memory/blocks", params={"repo_root": REPO}, json={"name": "zebra", "content": "Zebra."}
    )
    everything = client.get("/v1/search", params={"q": "zebra", "kind": "all"}).json()["items"]
    assert {h["kind"] for h in everything} == {"message", "block"}  # project memory too
    [block] = [h for h in everything if h["kind"] == "block"]
    assert block["repo_root"] == REPO
    later = client.get("/v1/search", params={"q": "zebra", "kind": "all", "since": "2999-01-01"})
    assert later.json()["items"] == []
    day = client.get(
        "/v1/search",
        params={"q": "zebra", "kind": "messages", "since": "2026-03-02", "until": "2026-03-02"},
    )
    assert [h["kind"] for h in day.json()["items"]] == ["message"]
    bad = client.get("/v1/search", params={"q": "zebra", "until": "soon"})
    assert bad.status_code == 422 and "until" in bad.json()["detail"]
