"""Sessions named by their caller (an alias), the model's reasoning, and events taken
back by a retraction, which every view of the session honours."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from ..conftest import (
    REPO,
    FakeClock,
    assistant,
    call,
    make_client,
    new_session,
    snapshot,
    tool,
    user,
)


def test_an_alias_names_one_live_session_and_is_freed_by_the_trash(
    client: TestClient, home: Path
) -> None:
    made = client.post("/v1/sessions", json={"repo_root": REPO, "alias": "user_123"})
    assert made.status_code == 201 and made.json()["alias"] == "user_123"
    sid = made.json()["id"]
    found = client.get("/v1/sessions", params={"alias": "user_123"}).json()["items"]
    assert [s["id"] for s in found] == [sid] and found[0]["alias"] == "user_123"
    assert client.get("/v1/sessions", params={"alias": "user_12"}).json()["items"] == []

    before = snapshot(home / "sessions")
    taken = client.post("/v1/sessions", json={"repo_root": REPO, "alias": "user_123"})
    assert taken.status_code == 409 and taken.json()["type"].endswith("alias_taken")
    assert sid in taken.json()["detail"]
    assert snapshot(home / "sessions") == before  # nothing written
    retry = client.post("/v1/sessions", json={"repo_root": REPO, "alias": "user_123", "id": sid})
    assert retry.status_code == 200 and retry.json()["id"] == sid  # a retry of that create

    assert client.delete(f"/v1/sessions/{sid}").status_code == 204
    again = client.post("/v1/sessions", json={"repo_root": REPO, "alias": "user_123"})
    assert again.status_code == 201 and again.json()["id"] != sid
    found = client.get("/v1/sessions", params={"alias": "user_123"}).json()["items"]
    assert [s["id"] for s in found] == [again.json()["id"]]


def test_a_session_comes_back_only_while_its_alias_is_free(client: TestClient, home: Path) -> None:
    first = client.post("/v1/sessions", json={"repo_root": REPO, "alias": "chat"}).json()["id"]
    client.post(f"/v1/sessions/{first}/events", json=user("the first conversation"))
    exported = client.get(f"/v1/sessions/{first}/export").content
    client.delete(f"/v1/sessions/{first}")
    second = client.post("/v1/sessions", json={"repo_root": REPO, "alias": "chat"}).json()["id"]

    before = snapshot(home / "sessions")
    refused = client.post(f"/v1/sessions/{first}/restore")
    assert refused.status_code == 409 and second in refused.json()["detail"]
    assert snapshot(home / "sessions") == before  # still in the trash
    entry = [e for e in client.get("/v1/journal").json()["items"] if e["op"] == "session.deleted"]
    assert client.post(f"/v1/journal/{entry[-1]['id']}/revert").status_code == 409

    client.delete(f"/v1/sessions/{second}")
    assert client.post(f"/v1/sessions/{first}/restore").status_code == 200
    found = client.get("/v1/sessions", params={"alias": "chat"}).json()["items"]
    assert [s["id"] for s in found] == [first]

    # an export brought back while another session holds its alias keeps it aside
    client.delete(f"/v1/sessions/{first}", params={"purge": True})
    third = client.post("/v1/sessions", json={"repo_root": REPO, "alias": "chat"}).json()["id"]
    imported = client.post("/v1/sessions/import", content=exported)
    assert imported.status_code == 201, imported.text
    header = client.get(f"/v1/sessions/{first}").json()["header"]
    assert "alias" not in header and header["x_alias"] == "chat"
    found = client.get("/v1/sessions", params={"alias": "chat"}).json()["items"]
    assert [s["id"] for s in found] == [third]


def test_a_bad_alias_is_refused_by_name(client: TestClient) -> None:
    for alias in ("", "a\nb", "x" * 201, 7):
        r = client.post("/v1/sessions", json={"repo_root": REPO, "alias": alias})
        assert r.status_code == 422 and "alias" in r.text, alias
    r = client.get("/v1/sessions", params={"alias": ""})
    assert r.status_code == 422 and "alias" in r.text


def test_reasoning_is_kept_and_shown_to_no_chat_view(client: TestClient) -> None:
    sid = new_session(client)
    events = [
        user("why is the build red?"),
        {"type": "reasoning", "content": "The log says a lint step failed.", "x_id": "rs_1"},
        {"type": "reasoning", "encrypted_content": "gAAAA"},  # nothing readable
        assistant("A lint step failed."),
    ]
    assert client.post(f"/v1/sessions/{sid}/events", json=events).status_code == 201
    stored = client.get(f"/v1/sessions/{sid}/events").json()["events"]
    assert stored[1]["type"] == "reasoning" and stored[1]["x_id"] == "rs_1"
    assert stored[2]["encrypted_content"] == "gAAAA"
    for view in ("history", "context"):
        messages = client.get(f"/v1/sessions/{sid}/messages", params={"view": view}).json()
        assert [m["role"] for m in messages["messages"]] == ["user", "assistant"], view
    bad = client.post(f"/v1/sessions/{sid}/events", json={"type": "reasoning", "content": 3})
    assert bad.status_code == 422 and "content" in bad.text


def test_a_retraction_takes_an_event_out_of_every_view(client: TestClient) -> None:
    sid = new_session(client)
    turns = [
        user("list the files"),
        assistant(calls=[call("c1", "ls")]),
        tool("c1", "zebraquux.txt"),
        assistant("There is zebraquux.txt."),
        user("thanks, now forget that answer"),
    ]
    client.post(f"/v1/sessions/{sid}/events", json=turns)
    assert client.get("/v1/search", params={"q": "zebraquux"}).json()["items"]
    r = client.post(
        f"/v1/sessions/{sid}/events",
        json=[{"type": "retraction", "target_seq": 5}, {"type": "retraction", "target_seq": 3}],
    )
    assert r.status_code == 201, r.text

    events = client.get(f"/v1/sessions/{sid}/events").json()["events"]
    assert [e["type"] for e in events[-2:]] == ["retraction", "retraction"]  # the log keeps all
    context = client.get(f"/v1/sessions/{sid}/messages", params={"view": "context"}).json()
    said = [m.get("content") for m in context["messages"]]
    assert "zebraquux.txt" not in said and "thanks, now forget that answer" not in said
    assert all(not m.get("tool_calls") for m in context["messages"])  # no unanswered call
    history = client.get(f"/v1/sessions/{sid}/messages").json()["messages"]
    assert [m["content"] for m in history] == ["list the files", "There is zebraquux.txt."]
    hits = client.get("/v1/search", params={"q": "zebraquux"}).json()["items"]
    assert [h["seq"] for h in hits] == [4]  # the retracted tool result is not found
    assert client.get("/v1/search", params={"q": "forget"}).json()["items"] == []
    exported = client.get(f"/v1/sessions/{sid}/export", params={"format": "openai"}).json()
    assert "thanks, now forget that answer" not in str(exported)


def test_a_retraction_of_a_later_event_is_refused(client: TestClient, home: Path) -> None:
    sid = new_session(client)
    client.post(f"/v1/sessions/{sid}/events", json=user("one"))
    before = snapshot(home / "sessions")
    for target in (2, 3, 0):
        r = client.post(
            f"/v1/sessions/{sid}/events", json={"type": "retraction", "target_seq": target}
        )
        assert r.status_code == 422 and "target_seq" in r.text, target
    assert snapshot(home / "sessions") == before


def test_a_retracted_title_or_first_message_no_longer_names_the_session(
    home: Path, clock: FakeClock
) -> None:
    with make_client(home, clock) as client:
        named_by_retractions(client)
    # the catalog rebuilt from the file names it the same
    (home / "index" / "catalog.sqlite3").unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{home / 'index' / 'catalog.sqlite3'}{suffix}").unlink(missing_ok=True)
    with make_client(home, clock) as again:
        (found,) = again.get("/v1/sessions").json()["items"]
        assert (found["title"], found["title_source"]) == ("the real question", "first_message")


def named_by_retractions(client: TestClient) -> None:
    sid = new_session(client)

    def title() -> tuple[str | None, str | None]:
        (found,) = [s for s in client.get("/v1/sessions").json()["items"] if s["id"] == sid]
        return found["title"], found["title_source"]

    client.post(f"/v1/sessions/{sid}/events", json=[user("a typo'd question"), assistant("ok")])
    assert title() == ("a typo'd question", "first_message")
    client.post(f"/v1/sessions/{sid}/events", json={"type": "title", "title": "Wrong name"})
    assert title() == ("Wrong name", "event")
    client.post(f"/v1/sessions/{sid}/events", json={"type": "retraction", "target_seq": 3})
    assert title() == ("a typo'd question", "first_message")
    client.post(
        f"/v1/sessions/{sid}/events",
        json=[{"type": "retraction", "target_seq": 1}, user("the real question")],
    )  # taken back, then asked again in the same append
    assert title() == ("the real question", "first_message")
    assert client.get(f"/v1/sessions/{sid}").json()["title"] == "the real question"
