"""The OpenAI chat reader on a real tau-bench trajectory file (tests/fixtures/openai-chat)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from ulid import ULID

from aster_persist.importers import Conversation, detect, openai_chat, read

TAU = Path(__file__).parents[1] / "fixtures" / "openai-chat" / "tau-bench" / "gpt-4o-airline.json"
# What the first two trajectories have always become: no time in the file, so 2000-01-01.
FIRST_IDS = ["00VHNCZB00J5R34W3YBZG4Q282", "00VHNCZB007B2B482S2TY2P5N6"]


def trajectories() -> list[dict[str, Any]]:
    return list(json.loads(TAU.read_bytes()))


def conversations(data: bytes) -> list[Conversation]:
    found, read_back = read(data)
    assert found == "openai-chat"
    return read_back


def test_the_file_is_detected_and_each_trajectory_is_a_session() -> None:
    data = TAU.read_bytes()
    assert detect(data) == openai_chat.NAME == openai_chat.FORMAT.name
    got = conversations(data)
    assert len(got) == 200
    assert [c.id() for c in got[:2]] == FIRST_IDS
    assert len({c.id() for c in got}) == 200
    assert [c.id() for c in conversations(data)] == [c.id() for c in got]
    assert ULID.from_str(got[0].id()).datetime == datetime(2000, 1, 1, tzinfo=UTC)
    assert all(c.fingerprint.startswith("openai-chat:") for c in got)


def test_messages_are_kept_as_written_and_the_rest_is_the_source() -> None:
    source = trajectories()
    for conversation, record in zip(conversations(TAU.read_bytes()), source, strict=True):
        expected = []
        for message in record["traj"]:
            event = {"type": "message", **{k: v for k, v in message.items() if v is not None}}
            if message["role"] == "assistant" and message.get("content") is None:
                event["content"] = None  # a turn of tool calls only
            expected.append(event)
        assert conversation.events == expected
        extra = {k: v for k, v in record.items() if k != "traj"}
        assert conversation.source == {
            "tool": "openai-chat",
            "record": extra,
            "undated": True,
        }  # no times
        assert set(extra) == {"task_id", "reward", "info", "trial"}
        assert conversation.model is None and conversation.cwd is None


def test_tool_calls_are_answered_by_id() -> None:
    for conversation in conversations(TAU.read_bytes()):
        issued: set[str] = set()
        for event in conversation.events:
            issued.update(c["id"] for c in event.get("tool_calls") or [])
            if event["role"] == "tool":
                assert event["tool_call_id"] in issued


def test_a_trajectory_is_the_same_session_wherever_it_is_and_however_written() -> None:
    source = trajectories()
    ids = [c.id() for c in conversations(TAU.read_bytes())]
    alone = conversations(orjson.dumps(source[1]))
    reordered = conversations(orjson.dumps(dict(reversed(list(source[1].items())))))
    lines = conversations(b"\n".join(orjson.dumps(r) for r in source[:3]) + b"\n")
    assert [c.id() for c in alone] == [c.id() for c in reordered] == [ids[1]]
    assert [c.id() for c in lines] == ids[:3]


def test_a_bare_messages_list_is_one_conversation_and_developer_is_system() -> None:
    messages = trajectories()[0]["traj"]
    messages = [{**messages[0], "role": "developer"}, *messages[1:]]
    [one] = conversations(orjson.dumps(messages))
    assert one.events[0]["role"] == "system" and one.events[0]["x_role"] == "developer"
    assert one.events[0]["content"] == messages[0]["content"]
    assert len(one.events) == len(messages)
    lines = b"\n".join(orjson.dumps(m) for m in messages)
    _found, [again] = read(lines, "openai-chat")  # named: a bare message is not detected
    assert again.events == one.events and again.id() == one.id()


def test_no_times_in_the_file_means_none_made_up() -> None:
    for conversation in conversations(TAU.read_bytes()):
        assert conversation.created_at is None
        assert not any("ts" in e for e in conversation.events)
