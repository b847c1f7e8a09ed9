"""The SWE-agent reader on two real trajectories (tests/fixtures/swe-agent): one of the
1.x format with tool calls, one older with the actions in the text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from aster_persist.importers import Conversation, ImportProblem, detect, read, swe_agent

from ..api.test_import import check_chat, events_of, import_file
from ..conftest import snapshot

FOLDER = Path(__file__).parents[1] / "fixtures" / "swe-agent" / "SWE-agent"
NEW = FOLDER / "6e44b9__sweagenttestrepo-1c2844.traj"  # function calling, SWE-agent 1.x
OLD = FOLDER / "swe-agent__test-repo-i1.traj"  # actions in the text
# What the two trajectories have always become: no time in them, so 2000-01-01.
IDS = {NEW: "00VHNCZB00HV0R66MX6J2DH0J5", OLD: "00VHNCZB00K6V19G8HTSM9RHHC"}


def source(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_bytes()))


def conversation(data: bytes) -> Conversation:
    found, conversations = read(data)
    assert found == "swe-agent"
    [one] = conversations
    return one


def as_written(event: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    """An event with what the reader added taken off again."""
    back = {k: v for k, v in event.items() if k not in ("type", "x_source")}
    if "tool_call_id" not in message:
        back.pop("tool_call_id", None)
    return back


@pytest.mark.parametrize("path", [NEW, OLD], ids=["new", "old"])
def test_each_trajectory_is_detected_and_becomes_the_same_session(path: Path) -> None:
    data = path.read_bytes()
    assert detect(data) == swe_agent.NAME == swe_agent.FORMAT.name
    one, again = conversation(data), conversation(data)
    assert one.id() == again.id() == IDS[path]
    assert one.fingerprint.startswith("swe-agent:")
    assert one.created_at is None and not any(e.get("ts") for e in one.events)  # none made up


@pytest.mark.parametrize("path", [NEW, OLD], ids=["new", "old"])
def test_every_history_message_is_an_event_as_written(path: Path) -> None:
    history = source(path)["history"]
    events = conversation(path.read_bytes()).events
    assert [e["type"] for e in events] == ["message"] * len(history)
    assert [as_written(e, m) for e, m in zip(events, history, strict=True)] == history


def test_tool_calls_are_answered_by_their_tool_call_ids() -> None:
    history = source(NEW)["history"]
    events = conversation(NEW.read_bytes()).events
    assert [e["role"] for e in events] == ["system", "user"] + ["assistant", "tool"] * 4
    names = []
    for turn, answer, said, answered in zip(
        events[2::2], events[3::2], history[2::2], history[3::2], strict=True
    ):
        [call] = turn["tool_calls"]
        assert turn["tool_calls"] == said["tool_calls"]  # OpenAI shape already
        assert answer["tool_call_id"] == call["id"] == answered["tool_call_ids"][0]
        assert answer["content"] == answered["content"]
        assert turn["content"] == turn["thought"] == said["thought"]
        names.append((call["function"]["name"], json.loads(call["function"]["arguments"])))
    assert names[0] == ("find_file", {"file_name": "missing_colon.py"})
    assert [n for n, _ in names] == ["find_file", "open", "edit", "bash"]


def test_an_old_trajectory_has_its_actions_in_the_text_and_keeps_the_demonstration() -> None:
    events = conversation(OLD.read_bytes()).events
    assert not any(e.get("tool_calls") or e["role"] == "tool" for e in events)
    assert [e["role"] for e in events] == ["system", "user", "user"] + ["assistant", "user"] * 4 + [
        "assistant"
    ]
    assert [e.get("is_demo") for e in events[:3]] == [None, True, None]
    for event in events:
        if event["role"] == "assistant":
            assert event["action"].strip() in event["content"]
    assert events[-1]["action"] == "submit\n"


@pytest.mark.parametrize("path", [NEW, OLD], ids=["new", "old"])
def test_each_step_is_on_its_turn_and_none_is_dropped(path: Path) -> None:
    steps = source(path)["trajectory"]
    events = conversation(path.read_bytes()).events
    placed = [e["x_source"]["step"] for e in events if "step" in e.get("x_source", {})]
    kept = [r for e in events for r in e.get("x_source", {}).get("records", [])]
    assert placed + kept == steps
    for event in events:
        if "step" in event.get("x_source", {}):
            step = event["x_source"]["step"]
            assert (step["response"], step["action"]) == (event["content"], event["action"])
    if path is NEW:  # the final submit is in the trajectory only: on the last event
        assert [s["action"] for s in kept] == ["submit"]
        assert events[-1]["x_source"]["records"] == [steps[-1]]
    else:
        assert kept == []


def test_the_run_is_the_header_and_info_the_source() -> None:
    record = source(NEW)
    new = conversation(NEW.read_bytes())
    assert new.model == "gpt-4o" and new.title == "SWE-agent__test-repo-i1"
    assert new.cwd == "/SWE-agent__test-repo"  # the first step's working folder
    extra = {k: v for k, v in record.items() if k not in ("history", "trajectory")}
    assert new.source == {"tool": "swe-agent", "record": extra, "undated": True}  # no times
    assert set(extra) == {"environment", "info", "replay_config"}
    assert new.source["record"]["info"]["exit_status"] == "submitted"
    old = conversation(OLD.read_bytes())
    assert (old.model, old.title) == (None, None)  # no replay_config in older runs
    assert old.cwd == "/klieret__swe-agent-test-repo"  # its state is a JSON string
    assert set(old.source["record"]) == {"environment", "info"}


def test_a_trajectory_is_the_same_session_however_written_and_wherever_it_is() -> None:
    new, old = source(NEW), source(OLD)
    ids = [IDS[NEW], IDS[OLD]]
    one_line = orjson.dumps(new)  # line 1 is the whole object: detected from it
    reordered = orjson.dumps(dict(reversed(list(new.items()))), option=orjson.OPT_INDENT_2)
    assert conversation(one_line).id() == conversation(reordered).id() == IDS[NEW]
    for data in (orjson.dumps([new, old]), one_line + b"\n" + orjson.dumps(old) + b"\n"):
        found, both = read(data, "swe-agent")
        assert found == "swe-agent" and [c.id() for c in both] == ids


def test_parts_a_role_may_not_send_become_text_and_an_unknown_role_system() -> None:
    record = source(NEW)
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    observation = record["history"][3]
    record["history"][3] = {**observation, "content": [{"type": "text", "text": "seen"}, image]}
    record["history"][1] = {**record["history"][1], "role": "critic"}
    events = conversation(orjson.dumps(record)).events
    assert events[3]["content"] == "seen"
    assert events[3]["x_source"]["content"] == record["history"][3]["content"]
    assert (events[1]["role"], events[1]["x_role"]) == ("system", "critic")


def test_a_chat_file_holding_a_history_is_still_openai_chat() -> None:
    chat = {"messages": [{"role": "user", "content": "hi"}], "history": []}
    assert detect(orjson.dumps(chat, option=orjson.OPT_INDENT_2)) == "openai-chat"
    assert detect(orjson.dumps([chat])) == "openai-chat"


def damaged(index: int = 5) -> dict[str, Any]:
    record = source(NEW)
    record["history"][index] = "not a message"
    return record


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (orjson.dumps(damaged()), "history[5]: expected a message object with a role"),
        (
            orjson.dumps([source(OLD), damaged(7)]),
            "trajectory 2: history[7]: expected a message object with a role",
        ),
        (orjson.dumps({"history": "none"}), "expected an object with a 'history' list"),
        (
            orjson.dumps({"history": [{"role": "tool", "tool_call_ids": "c1", "content": ""}]}),
            "history[0]: tool_call_ids is not a list",
        ),
        (
            (FOLDER.parents[1] / "openai-chat" / "tau-bench" / "gpt-4o-airline.json").read_bytes(),
            "trajectory 1: expected an object with a 'history' list",
        ),
    ],
    ids=["message", "second", "history", "ids", "chat-file"],
)
def test_a_file_that_is_not_a_trajectory_names_the_record(data: bytes, says: str) -> None:
    with pytest.raises(ImportProblem) as caught:
        read(data, "swe-agent")
    assert caught.value.detail.startswith(says), caught.value.detail


def test_the_api_detects_a_traj_and_keeps_its_turns(client: TestClient) -> None:
    result = import_file(client, NEW)
    assert result["format"] == "swe-agent" and result["imported"] == 1
    [session] = result["sessions"]
    assert session["id"] == IDS[NEW] and session["events"] == 10
    header = client.get(f"/v1/sessions/{session['id']}").json()
    assert header["title"] == "SWE-agent__test-repo-i1"
    assert header["repo_root"] == "/SWE-agent__test-repo"
    assert header["header"]["x_import"]["record"]["info"]["exit_status"] == "submitted"
    events = events_of(client, session["id"])
    assert [e["x_source"]["step"]["action"] for e in events if e["role"] == "assistant"] == [
        s["action"] for s in source(NEW)["trajectory"][:4]
    ]
    check_chat(client, session["id"])
    again = import_file(client, NEW)
    assert again["already_imported"] == 1
    old = import_file(client, OLD, repo_root="/srv/test-repo")
    assert old["format"] == "swe-agent"
    check_chat(client, old["sessions"][0]["id"])


def test_a_damaged_trajectory_is_422_and_writes_nothing(client: TestClient, home: Path) -> None:
    before = snapshot(home)
    for params in ({}, {"format": "swe-agent"}):
        r = client.post("/v1/sessions/import", content=orjson.dumps(damaged()), params=params)
        assert r.status_code == 422, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert "history[5]" in r.json()["detail"]
        assert snapshot(home) == before
