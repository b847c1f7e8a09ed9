"""Importing real transcripts written by other tools (the fixtures), and our own exports."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ..conftest import FakeClock, make_client, snapshot
from .test_messages import assert_valid_chat

FIXTURES = Path(__file__).parents[1] / "fixtures"
CLAUDE = sorted((FIXTURES / "claude-code").rglob("*.jsonl"))
CODEX = sorted((FIXTURES / "codex").rglob("*.jsonl"))
TAU = FIXTURES / "openai-chat" / "tau-bench" / "gpt-4o-airline.json"


def import_file(client: TestClient, path: Path, **params: Any) -> dict[str, Any]:
    r = client.post("/v1/sessions/import", content=path.read_bytes(), params=params)
    assert r.status_code in (200, 201), r.text
    return dict(r.json())


def events_of(client: TestClient, sid: str) -> list[dict[str, Any]]:
    return list(
        client.get(f"/v1/sessions/{sid}/events", params={"limit": 100_000}).json()["events"]
    )


def kinds(events: list[dict[str, Any]]) -> Counter[str]:
    out: Counter[str] = Counter()
    for e in events:
        if e["type"] == "message":
            out[e["role"]] += 1
            out["tool_calls"] += len(e.get("tool_calls") or [])
        else:
            out[e["type"]] += 1
    return out


def check_chat(client: TestClient, sid: str) -> None:
    messages = client.get(f"/v1/sessions/{sid}/messages", params={"view": "context"}).json()
    messages = messages["messages"]
    assert_valid_chat(messages)
    calls: set[str] = set()
    for message in messages:
        for tool_call in message.get("tool_calls") or []:
            calls.add(tool_call["id"])
        if message["role"] == "tool":
            assert message["tool_call_id"] in calls, "a tool result without its call"


def claude_counts(path: Path) -> Counter[str]:
    """What a Claude Code file holds, counted straight from its records."""
    out: Counter[str] = Counter()
    last_id = None  # an API message split over consecutive records is one turn
    for line in path.read_text().splitlines():
        record = json.loads(line)
        kind = record.get("type")
        content = (record.get("message") or {}).get("content")
        blocks = content if isinstance(content, list) else []
        if (
            kind == "summary"
            or record.get("isCompactSummary")
            or record.get("subtype") == "compact_boundary"
        ):
            out["summary"] += 1
            last_id = None
        elif kind == "user":
            out["tool"] += sum(b.get("type") == "tool_result" for b in blocks)
            if isinstance(content, str) or any(b.get("type") != "tool_result" for b in blocks):
                out["user"] += 1
            last_id = None
        elif kind == "assistant":
            message_id = record["message"].get("id")
            if message_id is None or message_id != last_id:
                out["assistant"] += 1
            last_id = message_id
            out["tool_calls"] += sum(b.get("type") == "tool_use" for b in blocks)
        else:
            out["kept"] += 1
    return out


@pytest.mark.parametrize("path", CLAUDE, ids=lambda p: p.name[:12])
def test_claude_code_files(client: TestClient, path: Path) -> None:
    result = import_file(client, path)
    assert result["format"] == "claude-code" and result["imported"] == 1
    sid = result["sessions"][0]["id"]
    events = events_of(client, sid)
    expected = claude_counts(path)
    got = kinds(events)
    for key in ("user", "assistant", "tool", "tool_calls", "summary"):
        assert got[key] == expected[key], (key, got[key], expected[key])
    kept = sum(len((e.get("x_source") or {}).get("records", [])) for e in events)
    assert kept == expected["kept"]  # progress, snapshots, queue operations: none dropped
    source = [json.loads(line) for line in path.read_text().splitlines()]
    sidechain = sum(  # a sub-agent's own file: its turns are its own, not marked
        bool(r.get("isSidechain") and not r.get("agentId"))
        for r in source
        if r.get("type") in ("user", "assistant")
    )
    assert (sum(bool(e.get("x_sidechain")) for e in events) > 0) == (sidechain > 0)
    thinking = sum(
        b.get("type") == "thinking"
        for r in source
        if r.get("type") == "assistant"
        for b in r["message"]["content"]
        if isinstance(b, dict)
    )
    assert sum(len(e.get("thinking", [])) for e in events) == thinking
    header = client.get(f"/v1/sessions/{sid}").json()
    first = next(r for r in source if r.get("cwd"))
    assert header["repo_root"] == first["cwd"]
    times = [e["ts"] for e in events if "ts" in e]
    assert times[0].startswith(next(r["timestamp"] for r in source if r.get("timestamp"))[:16])
    check_chat(client, sid)


def test_codex_rollout(client: TestClient) -> None:
    path = CODEX[0]
    result = import_file(client, path)
    assert result["format"] == "codex"
    sid = result["sessions"][0]["id"]
    events = events_of(client, sid)
    source = [json.loads(line) for line in path.read_text().splitlines()]
    items = Counter(
        (r["payload"].get("type"), r["payload"].get("role"))
        for r in source
        if r["type"] == "response_item"
    )
    got = kinds(events)
    assert got["user"] == items[("message", "user")]
    assert got["tool_calls"] == items[("function_call", None)] + items[("custom_tool_call", None)]
    assert (
        got["tool"]
        == items[("function_call_output", None)] + items[("custom_tool_call_output", None)]
    )
    runs, in_run = 0, False  # calls made together (no message or output between): one turn
    for record in source:
        kind = record["payload"].get("type") if record["type"] == "response_item" else None
        if kind in ("function_call", "custom_tool_call"):
            runs, in_run = runs + (not in_run), True
        elif kind is not None and (kind == "message" or kind.endswith("_output")):
            in_run = False
    assert runs < got["tool_calls"]  # the rollout does make parallel calls
    assert got["assistant"] == items[("message", "assistant")] + runs
    context = client.get(f"/v1/sessions/{sid}/messages", params={"view": "context"}).json()
    sent = [m for m in context["messages"] if m["role"] == "tool"]
    assert len(sent) == got["tool"]  # every result reaches the model, linked to its call
    kept = sum(len((e.get("x_source") or {}).get("records", [])) for e in events)
    reasoning = items[("reasoning", None)] + items[("web_search_call", None)]
    others = sum(r["type"] in ("event_msg", "turn_context") for r in source)
    assert kept == reasoning + others
    meta = source[0]["payload"]
    header = client.get(f"/v1/sessions/{sid}").json()["header"]
    assert header["repo_root"] == meta["cwd"] and header["model"] == "gpt-5.5"
    assert header["created_at"].startswith(meta["timestamp"][:19])
    check_chat(client, sid)


def test_openai_chat_array_is_one_session_per_conversation(client: TestClient) -> None:
    before = client.get("/v1/sessions").json()["items"]
    r = client.post("/v1/sessions/import", content=TAU.read_bytes())
    assert r.status_code == 422 and "repo_root" in r.json()["detail"]
    assert "`--repo-root` on the command line" in r.json()["detail"]
    assert client.get("/v1/sessions").json()["items"] == before
    result = import_file(client, TAU, repo_root="/srv/airline")
    records = json.loads(TAU.read_text())
    assert result["imported"] == len(records) == 200
    for record, session in list(zip(records, result["sessions"], strict=True))[:20]:
        got = kinds(events_of(client, session["id"]))
        roles = Counter(m["role"] for m in record["traj"])
        for role in ("system", "user", "assistant", "tool"):
            assert got[role] == roles[role]
        check_chat(client, session["id"])


def test_importing_the_same_files_twice_creates_each_once(client: TestClient) -> None:
    paths = [*CLAUDE, *CODEX]
    first = [import_file(client, p)["sessions"][0] for p in paths]
    second = [import_file(client, p)["sessions"][0] for p in paths]
    assert {s["status"] for s in first} == {"imported"}
    assert {s["status"] for s in second} == {"already_imported"}
    assert [s["id"] for s in first] == [s["id"] for s in second]
    assert len(client.get("/v1/sessions", params={"limit": 100}).json()["items"]) == len(paths)


def test_native_export_round_trips(home: Path, tmp_path: Path, clock: FakeClock) -> None:
    exported = {}
    with make_client(home, clock) as client:
        for path in [*CLAUDE, *CODEX]:
            sid = import_file(client, path)["sessions"][0]["id"]
            exported[sid] = client.get(f"/v1/sessions/{sid}/export").content
    with make_client(tmp_path / "other", clock) as client:
        for sid, data in exported.items():
            r = client.post("/v1/sessions/import", content=data)
            assert r.status_code == 201 and r.json()["format"] == "native", r.text
            assert r.json()["sessions"][0]["id"] == sid
            assert client.get(f"/v1/sessions/{sid}/export").content == data
            again = client.post("/v1/sessions/import", content=data).json()
            assert again["already_imported"] == 1


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (
            b'{"type":"user","sessionId":"x","message":{"role":"user","content":"hi"}}\nnot json\n',
            "line 2",
        ),
        (b"hello", "starts with neither"),
        (b'{"nothing": "known"}\n', "not a format"),
        (b'[{"messages": [{"content": "no role"}]}]', "message 1"),
        (b"", "starts with neither"),
    ],
)
def test_bad_files_are_422_and_write_nothing(
    client: TestClient, home: Path, body: bytes, says: str
) -> None:
    before = snapshot(home)
    r = client.post("/v1/sessions/import", content=body, params={"repo_root": "/srv/x"})
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert says in r.json()["detail"]
    assert snapshot(home) == before


def test_a_file_with_one_conversation_that_cannot_be_stored_writes_nothing(home: Path) -> None:
    def conversation(text: str) -> bytes:
        messages = [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]
        return json.dumps({"messages": messages}).encode()

    body = b"\n".join(conversation(t) for t in ("small one", "y" * 5000, "another")) + b"\n"
    with make_client(home, FakeClock(), max_event_bytes=2000, blob_threshold=1_000_000) as client:
        client.get("/v1/sessions").raise_for_status()
        before = snapshot(home)
        r = client.post("/v1/sessions/import", content=body, params={"repo_root": "/srv/x"})
        assert r.status_code == 413, r.text
        assert snapshot(home) == before
        assert client.get("/v1/sessions").json()["items"] == []
        assert client.get("/v1/journal").json()["items"] == []


def test_imports_are_journaled_as_imports_and_revert_like_creations(client: TestClient) -> None:
    body = (FIXTURES / "codex" / "codemie-code").glob("*.jsonl")
    r = client.post("/v1/sessions/import", content=next(body).read_bytes())
    assert r.status_code == 201, r.text
    sid = r.json()["sessions"][0]["id"]
    entries = client.get("/v1/journal", params={"op": "session"}).json()["items"]
    assert [(e["op"], e["session"], e["detail"]["format"]) for e in entries] == [
        ("session.imported", sid, "codex")
    ]
    assert client.post(f"/v1/journal/{entries[0]['id']}/revert").status_code == 200
    assert client.get(f"/v1/sessions/{sid}").status_code == 404


def test_odd_times_and_the_developer_role_import(client: TestClient) -> None:
    records = [
        {
            "type": "user",
            "sessionId": "s1",
            "cwd": "/srv/old",
            "timestamp": ts,
            "uuid": f"u{n}",
            "message": {"role": "user", "content": f"question {n}"},
        }
        for n, ts in enumerate(["1969-07-20T20:17:40Z", "0001-01-01T00:30:00+01:00"])
    ]
    body = "\n".join(json.dumps(r) for r in records).encode() + b"\n"
    r = client.post("/v1/sessions/import", content=body, params={"format": "claude-code"})
    assert r.status_code == 201, r.text
    chat = [
        {"role": "developer", "content": "Answer briefly."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    r = client.post("/v1/sessions/import", json=chat, params={"repo_root": "/srv/x"})
    assert r.status_code == 201, r.text
    sid = r.json()["sessions"][0]["id"]
    events = client.get(f"/v1/sessions/{sid}/events").json()["events"]
    assert [(e["role"], e.get("x_role")) for e in events] == [
        ("system", "developer"),
        ("user", None),
        ("assistant", None),
    ]


def claude(records: list[dict[str, Any]]) -> bytes:
    base = {"sessionId": "s-claude", "cwd": "/srv/claude", "timestamp": "2026-03-01T10:00:00Z"}
    return b"".join(json.dumps({**base, **r}).encode() + b"\n" for r in records)


def test_a_claude_summary_record_names_and_a_sidechain_stays_out_of_the_views(
    client: TestClient,
) -> None:
    task = {"type": "tool_use", "id": "toolu_1", "name": "Task", "input": {"prompt": "look"}}
    body = claude(
        [
            {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "fix login"}},
            {
                "type": "assistant",
                "uuid": "a1",
                "message": {"role": "assistant", "content": [task]},
            },
            {
                "type": "user",
                "uuid": "s1",
                "isSidechain": True,
                "message": {"role": "user", "content": "sub-agent: look at auth.py"},
            },
            {
                "type": "assistant",
                "uuid": "s2",
                "isSidechain": True,
                "message": {"role": "assistant", "content": [{"type": "text", "text": "found it"}]},
            },
            {
                "type": "user",
                "uuid": "u2",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "auth.py:12"}
                    ],
                },
            },
            {
                "type": "assistant",
                "uuid": "a2",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "Fixed."}]},
            },
            {"type": "summary", "summary": "Login bug fix", "leafUuid": "a2"},
        ]
    )
    r = client.post("/v1/sessions/import", content=body)
    assert r.status_code == 201, r.text
    sid = r.json()["sessions"][0]["id"]
    assert client.get(f"/v1/sessions/{sid}").json()["title"] == "Login bug fix"
    history = client.get(f"/v1/sessions/{sid}/messages").json()["messages"]
    assert [(m["role"], m["content"]) for m in history] == [
        ("user", "fix login"),
        ("assistant", "Fixed."),
    ]
    context = client.get(f"/v1/sessions/{sid}/messages", params={"view": "context"}).json()
    turns = context["messages"]
    assert [m["role"] for m in turns] == ["user", "assistant", "tool", "assistant"]
    assert turns[1]["tool_calls"][0]["id"] == "toolu_1" and turns[2]["content"] == "auth.py:12"
    assert "sub-agent" not in json.dumps(turns)
    events = client.get(f"/v1/sessions/{sid}/events").json()["events"]
    assert sum(bool(e.get("x_sidechain")) for e in events) == 2  # kept, marked


def test_a_native_round_trip_keeps_idempotency_keys(
    home: Path, tmp_path: Path, clock: FakeClock
) -> None:
    from ..conftest import new_session, user

    with make_client(home, clock) as client:
        sid = new_session(client)
        for n, key in ((1, "turn-1"), (2, None), (3, "turn-3")):
            headers = {"Idempotency-Key": key} if key else {}
            body = [user(f"question {n}"), user(f"more {n}")]
            client.post(f"/v1/sessions/{sid}/events", json=body, headers=headers).raise_for_status()
        data = client.get(f"/v1/sessions/{sid}/export").content
    with make_client(tmp_path / "other", clock) as client:
        r = client.post("/v1/sessions/import", content=data)
        assert r.status_code == 201, r.text
        assert client.get(f"/v1/sessions/{sid}/export").content == data
        retry = client.post(
            f"/v1/sessions/{sid}/events",
            json=[user("question 1"), user("more 1")],
            headers={"Idempotency-Key": "turn-1"},
        )
        assert retry.status_code == 200 and retry.headers["idempotent-replayed"] == "true"
        assert retry.json() == {"first_seq": 1, "last_seq": 2, "count": 2, "replayed": True}


def chats(n: int, tag: str = "q") -> bytes:
    """An OpenAI chat file of ``n`` small conversations."""
    return json.dumps(
        [
            {
                "messages": [
                    {"role": "user", "content": f"{tag}{i}"},
                    {"role": "assistant", "content": "a"},
                ]
            }
            for i in range(n)
        ]
    ).encode()


CHAT = {"repo_root": "/srv/chats", "format": "openai-chat"}


def test_an_import_of_more_conversations_than_descriptors_left_imports(tmp_path: Path) -> None:
    """Each conversation is a file: an import never holds one descriptor per file."""
    script = f"""
import resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).parents[2])!r})
from tests.conftest import make_client
from tests.api.test_import import chats, CHAT
with make_client(Path({str(tmp_path / "home")!r}), watch=False) as client:
    r = client.post("/v1/sessions/import", content=chats(600), params=CHAT)
    print(r.status_code, r.json().get("imported"))
"""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["201", "600"], out.stdout + out.stderr
    files = list((tmp_path / "home" / "sessions").rglob("*.jsonl"))
    assert len(files) == 600
    assert not [p for p in (tmp_path / "home").rglob(".aster-tmp-*")]


def test_a_file_already_at_a_sessions_name_is_left_alone_and_the_rest_import(
    tmp_path: Path,
) -> None:
    with make_client(tmp_path / "a", watch=False) as a:
        ids = [
            s["id"]
            for s in a.post("/v1/sessions/import", content=chats(3), params=CHAT).json()["sessions"]
        ]
    source = next((tmp_path / "a" / "sessions").rglob(f"{ids[1]}.jsonl"))
    with make_client(tmp_path / "b", watch=False) as b:
        # another program puts that session's file in place; the daemon has not seen it
        folder = tmp_path / "b" / "sessions" / source.parent.name
        folder.mkdir(parents=True)
        theirs = folder / source.name
        theirs.write_bytes(source.read_bytes().replace(b'"q1"', b'"theirs"'))
        before = theirs.read_bytes()
        r = b.post("/v1/sessions/import", content=chats(3), params=CHAT)
        assert r.status_code == 201, r.text
        assert [s["status"] for s in r.json()["sessions"]] == [
            "imported",
            "already_imported",
            "imported",
        ]
        assert theirs.read_bytes() == before
        assert sorted(p.name for p in folder.iterdir()) == sorted(f"{i}.jsonl" for i in ids)


def test_an_import_on_a_filesystem_without_hard_links(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    def no_links(src: Any, dst: Any, **kwargs: Any) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    with make_client(home, watch=False) as client:
        monkeypatch.setattr(os, "link", no_links)
        r = client.post("/v1/sessions/import", content=chats(3), params=CHAT)
        assert r.status_code == 201, r.text
        for s in r.json()["sessions"]:
            assert [e["role"] for e in events_of(client, s["id"])] == ["user", "assistant"]
    assert not [p for p in home.rglob(".aster-tmp-*")]


def test_the_watcher_never_takes_an_import_for_another_programs_files(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However long the folder syncs take after the files get their names (a slow disk),
    the files an import writes are the daemon's own, not changes to journal or announce."""
    import time

    from aster_persist.storage import jsonl

    real = jsonl.fsync_dir

    def slow(path: Any) -> None:
        time.sleep(0.3)  # far past the watcher's quiet step
        real(path)

    with make_client(home) as client:
        deadline = time.monotonic() + 10
        while not client.get("/v1/info").json()["watching"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        monkeypatch.setattr(jsonl, "fsync_dir", slow)
        r = client.post("/v1/sessions/import", content=chats(3), params=CHAT)
        assert r.status_code == 201, r.text
        time.sleep(1.0)
        items = client.get("/v1/journal", params={"limit": 100}).json()["items"]
        assert [(e["op"], e["actor"]) for e in items] == [("session.imported", "api")] * 3
