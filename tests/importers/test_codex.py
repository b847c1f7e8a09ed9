"""The Codex reader on a real rollout (tests/fixtures/codex)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ulid import ULID

from aster_persist.importers import Conversation, codex, detect, read

[ROLLOUT] = sorted((Path(__file__).parents[1] / "fixtures" / "codex").rglob("rollout-*.jsonl"))
ID = "01KRB2AY62RKKP4691G21Q2RRP"  # what this rollout has always become


def records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in ROLLOUT.read_text().splitlines()]


def conversation() -> Conversation:
    found, conversations = read(ROLLOUT.read_bytes())
    assert found == "codex"
    [one] = conversations
    return one


def items(kind: str) -> list[dict[str, Any]]:
    return [
        r["payload"]
        for r in records()
        if r["type"] == "response_item" and r["payload"]["type"] == kind
    ]


def test_the_rollout_is_detected_and_becomes_the_same_session() -> None:
    assert detect(ROLLOUT.read_bytes()) == codex.NAME == codex.FORMAT.name
    first, again = conversation(), conversation()
    assert first.id() == again.id() == ID
    assert first.fingerprint.startswith("codex:")


def test_session_meta_is_the_header() -> None:
    [meta] = [r["payload"] for r in records() if r["type"] == "session_meta"]
    one = conversation()
    assert one.created_at == "2026-05-11T08:26:55.042Z" == meta["timestamp"]
    assert ULID.from_str(one.id()).datetime == datetime(2026, 5, 11, 8, 26, 55, 42000, UTC)
    assert one.cwd == meta["cwd"] == "/Users/Sample_User/repos/codemie-ai/codemie-code"
    assert one.model == "gpt-5.5"  # the first turn_context's
    assert one.source == {
        "tool": "codex",
        "id": "019e1625-789d-76c0-80ab-3724b5ddb799",
        "cli_version": "0.125.0",
        "originator": "codex-tui",
        "model_provider": "openai",
        "git_branch": meta["git"]["branch"],
    }
    assert one.title is None


def test_messages_keep_their_text_role_and_time() -> None:
    source = [
        r for r in records() if r["type"] == "response_item" and r["payload"]["type"] == "message"
    ]
    got = [e for e in conversation().events if e["role"] != "tool" and not e.get("tool_calls")]
    assert len(got) == len(source) == 17
    for event, record in zip(got, source, strict=True):
        payload = record["payload"]
        assert event["content"] == "\n".join(p["text"] for p in payload["content"])
        assert event["ts"] == record["timestamp"]
        if payload["role"] == "developer":  # a role this store has not: system, the name kept
            assert (event["role"], event["x_role"]) == ("system", "developer")
        else:
            assert event["role"] == payload["role"] and "x_role" not in event


def test_calls_made_together_are_one_turn_and_outputs_answer_them() -> None:
    calls = items("function_call") + items("custom_tool_call")
    outputs = items("function_call_output") + items("custom_tool_call_output")
    events = conversation().events
    turns = [e for e in events if e.get("tool_calls")]
    ids = [c["id"] for e in turns for c in e["tool_calls"]]
    assert sorted(ids) == sorted(c["call_id"] for c in calls)  # every call, once
    assert len(turns) < len(calls)  # some were made in parallel
    issued: set[str] = set()
    for event in events:
        issued.update(c["id"] for c in event.get("tool_calls") or [])
        if event["role"] == "tool":
            assert event["tool_call_id"] in issued, "an output before its call"
    answers = {e["tool_call_id"]: e["content"] for e in events if e["role"] == "tool"}
    assert answers == {o["call_id"]: o["output"] for o in outputs}


def test_a_custom_tool_call_keeps_its_input_as_arguments() -> None:
    [patch, *_] = items("custom_tool_call")
    [call] = [
        c
        for e in conversation().events
        for c in e.get("tool_calls") or []
        if c["id"] == patch["call_id"]
    ]
    assert call["function"]["name"] == patch["name"] == "apply_patch"
    assert json.loads(call["function"]["arguments"]) == {"input": patch["input"]}


def test_reasoning_turn_contexts_and_events_ride_along_in_order() -> None:
    kept = [
        r
        for r in records()
        if r["type"] in ("turn_context", "event_msg")
        or (
            r["type"] == "response_item"
            and r["payload"]["type"] in ("reasoning", "web_search_call")
        )
    ]
    assert len(kept) == 2 + 134 + 25 + 3
    carried = [r for e in conversation().events for r in e.get("x_source", {}).get("records", [])]
    assert carried == kept


def test_every_time_is_utc_with_milliseconds_and_in_order() -> None:
    times = [e["ts"] for e in conversation().events]
    assert all(len(t) == 24 and t.endswith("Z") for t in times)
    assert times == sorted(times)
    assert times[0] == "2026-05-11T08:27:17.493Z" and times[-1] == "2026-05-11T08:44:57.895Z"
