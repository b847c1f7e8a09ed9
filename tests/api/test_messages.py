"""to_chat_messages in both views, validated as OpenAI chat-completions `messages` lists."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter

from ..conftest import assistant, call, new_session, tool, user

OPENAI = TypeAdapter(list[ChatCompletionMessageParam])
ALLOWED = {"role", "content", "name", "tool_calls", "tool_call_id"}


def assert_valid_chat(messages: list[dict[str, Any]]) -> None:
    """Valid for the chat-completions API: schema, no foreign keys, calls answered in order."""
    OPENAI.validate_python(messages)
    pending: set[str] = set()
    for m in messages:
        assert set(m) <= ALLOWED, m
        if m["role"] == "tool":
            assert m["tool_call_id"] in pending, m
            pending.discard(m["tool_call_id"])
            continue
        assert not pending, f"calls without results: {pending}"
        if m["role"] == "assistant" and m.get("tool_calls"):
            pending = {c["id"] for c in m["tool_calls"]}
    assert not pending


def build(client: TestClient) -> str:
    sid = new_session(client)
    events = [
        user("read main.rs"),
        assistant(None, [call("c1", arguments='{"path":"main.rs"}')]),
        tool("c1", "fn main() {}"),
        assistant("It is the entrypoint."),
        {
            "type": "summary",
            "content": "User asked about main.rs; it is the entrypoint.",
            "through_seq": 4,
        },
        user([{"type": "text", "text": "and lib.rs?"}]),
        assistant("Let me look.", [call("c2"), call("c3", "grep")]),
        tool("c2", "pub fn lib() {}" * 100),
        tool("c3", "3 matches"),
        {"type": "eviction", "tool_call_id": "c2", "stub": "[lib.rs: 1,500 bytes evicted]"},
        assistant(None, [call("c4")]),
        assistant("lib.rs exports lib()."),
    ]
    assert client.post(f"/v1/sessions/{sid}/events", json=events).status_code == 201
    return sid


def test_history_view(client: TestClient) -> None:
    sid = build(client)
    got = client.get(f"/v1/sessions/{sid}/messages").json()
    assert got["view"] == "history"
    messages = got["messages"]
    assert_valid_chat(messages)
    assert messages[0]["role"] == "user" and messages[0]["content"].startswith(
        "Summary of the earlier conversation"
    )
    assert "it is the entrypoint" in messages[0]["content"]
    assert messages[1:] == [
        {"role": "user", "content": [{"type": "text", "text": "and lib.rs?"}]},
        {"role": "assistant", "content": "Let me look."},
        {"role": "assistant", "content": "lib.rs exports lib()."},
    ]


def test_context_view(client: TestClient) -> None:
    sid = build(client)
    messages = client.get(f"/v1/sessions/{sid}/messages", params={"view": "context"}).json()[
        "messages"
    ]
    assert_valid_chat(messages)
    assert [m["role"] for m in messages] == [
        "user",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert [c["id"] for c in messages[2]["tool_calls"]] == ["c2", "c3"]
    assert messages[3] == {
        "role": "tool",
        "tool_call_id": "c2",
        "content": "[lib.rs: 1,500 bytes evicted]",
    }
    assert messages[4]["content"] == "3 matches"


def test_without_summary_and_with_orphans(client: TestClient) -> None:
    sid = new_session(client)
    client.post(
        f"/v1/sessions/{sid}/events",
        json=[
            {"type": "message", "role": "system", "content": "be brief"},
            user("hi"),
            assistant("calling", [call("a1"), call("a2")]),
            tool("a1", "one"),
            user("interrupted"),
            tool("a2", "late"),
            {"type": "eviction", "target_seq": 4},
            assistant("ok"),
        ],
    )
    history = client.get(f"/v1/sessions/{sid}/messages").json()["messages"]
    assert_valid_chat(history)
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    context = client.get(f"/v1/sessions/{sid}/messages", params={"view": "context"}).json()[
        "messages"
    ]
    assert_valid_chat(context)
    assert context[2]["tool_calls"] == [call("a1")]
    assert context[3]["content"] == "[tool result evicted from the context]"


def test_calls_kept_one_per_event_are_one_turn_before_their_results(client: TestClient) -> None:
    """Parallel calls written as separate events (an Agents SDK session, some imports)
    keep every result in the context view, as one assistant turn."""
    sid = new_session(client)
    client.post(
        f"/v1/sessions/{sid}/events",
        json=[
            user("weather in two cities"),
            assistant(calls=[call("p1", "weather")]),
            assistant(calls=[call("p2", "weather")]),
            tool("p1", "snow"),
            tool("p2", "rain"),
            assistant("Snow and rain."),
            assistant("And a call after text:", [call("p3")]),
            assistant(calls=[call("p4")]),
            tool("p3", "three"),
            tool("p4", "four"),
        ],
    )
    messages = client.get(f"/v1/sessions/{sid}/messages", params={"view": "context"}).json()[
        "messages"
    ]
    assert_valid_chat(messages)
    assert [m["role"] for m in messages] == [
        "user", "assistant", "tool", "tool", "assistant", "assistant", "tool", "tool",
    ]  # fmt: skip
    assert [c["id"] for c in messages[1]["tool_calls"]] == ["p1", "p2"]
    assert [m["content"] for m in messages[2:4]] == ["snow", "rain"]
    assert [c["id"] for c in messages[5]["tool_calls"]] == ["p3", "p4"]
