"""What an imported session is made of (its turns, tool calls, tool errors, tokens,
models, duration, source tool and git branch), counted as it is written and the same
after a rebuild; and a Claude Code sub-agent's transcript as a child session linked to
its parent both ways, whichever of the two is imported first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from ..conftest import FakeClock, make_client

FIXTURES = Path(__file__).parents[1] / "fixtures"
CODEX = next((FIXTURES / "codex" / "codemie-code").glob("rollout-*.jsonl"))
PARENT = FIXTURES / "claude-code" / "spotter" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
CHILD = PARENT.with_suffix("") / "subagents" / "agent-aac57f5.jsonl"
COMPACT = PARENT.with_suffix("") / "subagents" / "agent-acompact-946d2b.jsonl"


def imported(client: TestClient, path: Path) -> str:
    r = client.post("/v1/sessions/import", content=path.read_bytes())
    assert r.status_code == 201, r.text
    return str(r.json()["sessions"][0]["id"])


def listed(client: TestClient, **params: Any) -> dict[str, dict[str, Any]]:
    items = client.get("/v1/sessions", params=params).json()["items"]
    return {s["id"]: s for s in items}


def records(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def codex_expected() -> dict[str, Any]:
    """A rollout's totals, counted straight from its records."""
    calls = failed = tokens_in = tokens_out = 0
    messages = 0
    last_total = None
    for r in records(CODEX):
        p = r.get("payload") or {}
        kind = p.get("type")
        if (
            r["type"] == "response_item"
            and kind == "message"
            and p["role"] in ("user", "assistant")
        ):
            messages += 1
        if kind in ("function_call", "custom_tool_call"):
            calls += 1
        if kind == "exec_command_end" and p.get("exit_code") != 0:
            failed += 1
        if kind == "patch_apply_end" and p.get("success") is False:
            failed += 1
        if kind == "token_count" and p.get("info") and p["info"]["total_token_usage"] != last_total:
            last_total = p["info"]["total_token_usage"]
            tokens_in += p["info"]["last_token_usage"]["input_tokens"]
            tokens_out += p["info"]["last_token_usage"]["output_tokens"]
    return {
        "tool_calls": calls,
        "tool_errors": failed,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "messages": messages,
    }


def test_a_codex_session_says_what_it_is_made_of(home: Path, clock: FakeClock) -> None:
    expected = codex_expected()
    assert expected["tool_errors"] > 0 and expected["tokens_in"] > 0  # the fixture has both
    with make_client(home, clock) as c:
        sid = imported(c, CODEX)
        s = listed(c)[sid]
        events = c.get(f"/v1/sessions/{sid}/events", params={"limit": 10_000}).json()["events"]
    meta = next(r["payload"] for r in records(CODEX) if r["type"] == "session_meta")
    assert s["source_tool"] == "codex" and s["git_branch"] == meta["git"]["branch"]
    assert s["models"] == ["gpt-5.5"]
    for key in ("tool_calls", "tool_errors", "tokens_in", "tokens_out"):
        assert s[key] == expected[key], key
    chat = [e for e in events if e["type"] == "message" and e["role"] in ("user", "assistant")]
    assert s["turns"] == len(chat) >= expected["messages"]
    first = min(e["ts"] for e in events)
    last = max(e["ts"] for e in events)
    assert (
        s["duration_ms"] == round((parse_ts(last) - parse_ts(first)).total_seconds() * 1000)
        and s["duration_ms"] > 60_000
    )
    errors = [e for e in events if e.get("is_error")]
    assert len(errors) == expected["tool_errors"] and {e["role"] for e in errors} == {"tool"}
    # a rebuilt catalog counts the same from the files
    (home / "index" / "catalog.sqlite3").unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{home / 'index' / 'catalog.sqlite3'}{suffix}").unlink(missing_ok=True)
    with make_client(home, clock) as c:
        assert listed(c)[sid] == s


def parse_ts(ts: str) -> Any:
    from datetime import datetime

    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def test_a_claude_turn_keeps_its_model_and_usage(client: TestClient) -> None:
    sid = imported(client, FIXTURES / "claude-code" / "spotter" / "tool_heavy.jsonl")
    events = client.get(f"/v1/sessions/{sid}/events").json()["events"]
    turns = [e for e in events if e.get("role") == "assistant" and e.get("usage")]
    assert turns and all(e["model"] == "claude-opus-4-6" for e in turns)
    raw = turns[0]["x_source"]["usage"]  # the record's own, and this store's reading of it
    cached = raw["cache_read_input_tokens"]
    assert turns[0]["usage"]["input_tokens"] == (
        raw["input_tokens"] + cached + raw["cache_creation_input_tokens"]
    )
    assert turns[0]["usage"]["cached_input_tokens"] == cached
    s = client.get(f"/v1/sessions/{sid}").json()
    assert s["tokens_in"] == sum(e["usage"]["input_tokens"] for e in turns)
    assert s["tokens_out"] == sum(e["usage"]["output_tokens"] for e in turns)
    assert s["source_tool"] == "claude-code" and s["git_branch"] == "master"


def test_a_tool_error_and_usage_sent_by_an_agent_are_counted(client: TestClient) -> None:
    sid = client.post("/v1/sessions", json={"repo_root": "/srv/app"}).json()["id"]
    call = {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}
    usage = {"input_tokens": 120, "output_tokens": 7, "cached_input_tokens": 100}
    r = client.post(
        f"/v1/sessions/{sid}/events",
        json=[
            {"type": "message", "role": "user", "content": "run it"},
            {
                "type": "message",
                "role": "assistant",
                "tool_calls": [call],
                "model": "m-1",
                "usage": usage,
            },
            {
                "type": "message",
                "role": "tool",
                "tool_call_id": "c1",
                "content": "no such file",
                "is_error": True,
            },
        ],
    )
    assert r.status_code == 201, r.text
    s = client.get(f"/v1/sessions/{sid}").json()
    assert (s["turns"], s["tool_calls"], s["tool_errors"]) == (2, 1, 1)
    assert (s["tokens_in"], s["tokens_out"], s["models"]) == (120, 7, ["m-1"])
    bad = client.post(
        f"/v1/sessions/{sid}/events",
        json={
            "type": "message",
            "role": "assistant",
            "content": "x",
            "usage": {"input_tokens": -1},
        },
    )
    assert bad.status_code == 422 and "usage" in bad.json()["detail"]


@pytest.mark.parametrize("order", ["parent first", "child first"])
def test_a_sub_agent_is_a_child_session_linked_both_ways(client: TestClient, order: str) -> None:
    if order == "parent first":
        parent, child = imported(client, PARENT), imported(client, CHILD)
    else:
        child, parent = imported(client, CHILD), imported(client, PARENT)
    compact = imported(client, COMPACT)
    [task] = [  # the call in the parent that ran the sub-agent
        r
        for r in records(PARENT)
        if isinstance(r.get("toolUseResult"), dict) and r["toolUseResult"].get("agentId")
    ]
    call = task["message"]["content"][0]["tool_use_id"]

    got = client.get(f"/v1/sessions/{child}").json()
    assert got["parent_id"] == parent and got["parent_tool_call_id"] == call
    assert listed(client)[child]["parent_id"] == parent
    assert listed(client)[parent]["parent_id"] is None
    family = client.get(f"/v1/sessions/{parent}").json()["children"]
    assert [(c["id"], c["tool_call_id"]) for c in family] == [(child, call), (compact, None)] or [
        (c["id"], c["tool_call_id"]) for c in family
    ] == [(compact, None), (child, call)]
    assert set(listed(client, parent_id=parent)) == {child, compact}
    assert listed(client, parent_id=child) == {}

    # the parent's result of the call names the child's source
    events = client.get(f"/v1/sessions/{parent}/events", params={"limit": 10_000}).json()
    [result] = [e for e in events["events"] if e.get("tool_call_id") == call]
    assert result["x_subagent"]["agent_id"] == task["toolUseResult"]["agentId"]

    # the child's own views show its turns: they are not a sidechain of it
    history = client.get(f"/v1/sessions/{child}/messages").json()["messages"]
    first = next(r for r in records(CHILD) if r.get("type") == "user")
    assert history[0] == {"role": "user", "content": first["message"]["content"]}
    assert sum(m["role"] == "assistant" for m in history) > 0


def test_a_sub_agent_file_alone_is_a_readable_session(client: TestClient) -> None:
    child = imported(client, CHILD)
    got = client.get(f"/v1/sessions/{child}").json()
    assert got["parent_id"] is None and got["parent_tool_call_id"] is None
    assert got["title"] and got["turns"] > 0 and got["tool_calls"] > 0
    assert got["repo_root"] == next(r["cwd"] for r in records(CHILD) if r.get("cwd"))
    assert client.get(f"/v1/sessions/{child}/messages").json()["messages"]


def test_a_bad_parent_filter_is_refused(client: TestClient) -> None:
    r = client.get("/v1/sessions", params={"parent_id": "../x"})
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"
