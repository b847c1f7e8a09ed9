"""The Claude Code reader on real transcripts (tests/fixtures/claude-code)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from ulid import ULID

from aster_persist.importers import Conversation, claude_code, detect, read

FIXTURES = Path(__file__).parents[1] / "fixtures" / "claude-code"
VIEWER = FIXTURES / "claude-code-viewer"
SMALL = VIEWER / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
SUMMARY_FIRST = VIEWER / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
SPOTTER = FIXTURES / "spotter" / "tool_heavy.jsonl"
ALL = [SMALL, SUMMARY_FIRST, SPOTTER]

# The ids these files have always become: a change would import them all again.
IDS = {
    SMALL: "01K46GNPQX3VH9ZBP8WZNVMH09",
    SUMMARY_FIRST: "01K46GZ7BHWTEH02QEVVBY7VTG",
    SPOTTER: "01KH4WCZNV0ACNTSEXK96T3787",
}


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def conversation(path: Path) -> Conversation:
    found, conversations = read(path.read_bytes())
    assert found == "claude-code"
    [one] = conversations
    return one


def utc_ms(ts: str) -> str:
    """A source time as the reader writes it: UTC, milliseconds, Z."""
    moment = datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name[:12])
def test_each_transcript_is_detected_and_becomes_the_same_session(path: Path) -> None:
    data = path.read_bytes()
    assert detect(data) == claude_code.NAME == claude_code.FORMAT.name
    first, again = conversation(path), conversation(path)
    assert first.id() == again.id() == IDS[path]
    assert first.fingerprint.startswith("claude-code:")
    source = records(path)
    branch = next((r["gitBranch"] for r in source if r.get("gitBranch")), None)
    assert first.source == {
        "tool": "claude-code",
        "session_id": next(r["sessionId"] for r in source if r.get("sessionId")),
        **({"git_branch": branch} if branch else {}),
    }
    assert first.cwd == next(r["cwd"] for r in source if r.get("cwd"))
    assert first.created_at == utc_ms(next(r["timestamp"] for r in source if r.get("timestamp")))
    assert ULID.from_str(first.id()).datetime == datetime.fromisoformat(first.created_at)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name[:12])
def test_every_event_keeps_the_time_of_its_record(path: Path) -> None:
    by_uuid = {r["uuid"]: r for r in records(path) if r.get("uuid")}
    events = conversation(path).events
    timed = [e for e in events if e.get("x_source", {}).get("uuid")]
    assert len(timed) > 0
    for event in timed:
        assert event["ts"] == utc_ms(by_uuid[event["x_source"]["uuid"]]["timestamp"])


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name[:12])
def test_tool_uses_become_calls_and_results_answer_them_by_id(path: Path) -> None:
    source = records(path)
    uses = {
        b["id"]: b
        for r in source
        if r["type"] == "assistant"
        for b in r["message"]["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    }
    results = [
        b["tool_use_id"]
        for r in source
        if r["type"] == "user" and isinstance(r["message"]["content"], list)
        for b in r["message"]["content"]
        if b.get("type") == "tool_result"
    ]
    events = conversation(path).events
    issued: set[str] = set()
    answered = []
    for event in events:
        for call in event.get("tool_calls") or []:
            assert json.loads(call["function"]["arguments"]) == uses[call["id"]]["input"]
            assert call["function"]["name"] == uses[call["id"]]["name"]
            issued.add(call["id"])
        if event.get("role") == "tool":
            assert event["tool_call_id"] in issued, "a result before its call"
            answered.append(event["tool_call_id"])
    assert issued == set(uses) and answered == results


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name[:12])
def test_an_api_message_split_over_records_is_one_turn(path: Path) -> None:
    turns, last = [], None
    for r in records(path):
        if r["type"] != "assistant":
            last = None if r["type"] in ("user", "summary") else last
            continue
        if r["message"]["id"] != last:
            turns.append(r["message"]["id"])
        last = r["message"]["id"]
    assistants = [e for e in conversation(path).events if e.get("role") == "assistant"]
    assert len(assistants) == len(turns)
    assert all(isinstance(e["content"], str) or e.get("tool_calls") for e in assistants)


def test_a_summary_record_names_the_conversation_and_folds_nothing() -> None:
    first_line = records(SUMMARY_FIRST)[0]
    one = conversation(SUMMARY_FIRST)
    assert one.title == first_line["summary"] == "Empty Repo Setup: CLAUDE.md Foundation Created"
    summary, following = one.events[0], one.events[1]
    assert summary["type"] == "summary" and summary["through_seq"] == 0
    assert summary["content"] == first_line["summary"]
    assert summary["x_source"] == {"type": "summary", "leafUuid": first_line["leafUuid"]}
    assert summary["ts"] == following["ts"]  # no time of its own: its neighbour's


def test_sidechain_turns_are_kept_and_marked() -> None:
    source = records(SUMMARY_FIRST)
    by_uuid = {r["uuid"]: r for r in source if r.get("uuid")}
    events = conversation(SUMMARY_FIRST).events
    marked = [e for e in events if e.get("x_sidechain")]
    assert len(marked) > 0
    for event in events:
        uuid = event.get("x_source", {}).get("uuid")
        if uuid:
            assert bool(event.get("x_sidechain")) == bool(by_uuid[uuid].get("isSidechain"))
    assert not any(e.get("x_sidechain") for e in conversation(SMALL).events)


def test_thinking_is_kept_on_its_turn() -> None:
    [block] = [
        b
        for r in records(SPOTTER)
        if r["type"] == "assistant"
        for b in r["message"]["content"]
        if b.get("type") == "thinking"
    ]
    [turn] = [e for e in conversation(SPOTTER).events if e.get("thinking")]
    assert turn["role"] == "assistant" and turn["thinking"] == [block]


def test_records_with_no_message_ride_along_in_order() -> None:
    source = records(SPOTTER)
    kept = [r for r in source if r["type"] not in ("user", "assistant", "summary")]
    assert {r["type"] for r in kept} == {
        "file-history-snapshot",
        "progress",
        "queue-operation",
        "system",
    }
    events = conversation(SPOTTER).events
    carried = [r for e in events for r in e.get("x_source", {}).get("records", [])]
    assert carried == kept
    assert events[0]["x_source"]["records"] == kept[:3]  # the snapshot and progress before


def test_a_source_is_one_session_however_it_grew_and_another_source_another() -> None:
    data = SMALL.read_bytes()
    _found, [changed] = read(data.replace(b"Glob", b"Grep", 1))
    assert changed.id() == IDS[SMALL]  # the same Claude Code session, edited or grown
    _found, [grown] = read(b"".join(data.splitlines(keepends=True)[:15]))
    assert grown.id() == IDS[SMALL] and grown.keys == changed.keys[: len(grown.keys or [])]
    session = json.loads(data.splitlines()[0])["sessionId"]
    _found, [other] = read(data.replace(session.encode(), b"another-session"))
    assert other.id() != IDS[SMALL]
    assert other.id()[:10] == IDS[SMALL][:10]  # the same start time
