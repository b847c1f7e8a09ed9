"""The ChatGPT reader on two real data exports (tests/fixtures/chatgpt): one conversation
with code interpreter calls, and a whole export of 192 with regenerated answers."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from ulid import ULID

from aster_persist.importers import Conversation, ImportProblem, chatgpt, detect, read

from ..api.test_import import check_chat, events_of, import_file
from ..conftest import snapshot

FOLDER = Path(__file__).parents[1] / "fixtures" / "chatgpt"
CODE = FOLDER / "chatgpt2graph" / "conversations.json"  # one conversation, python calls
EXPORT = FOLDER / "my_chat_gpt" / "conversations.json"  # 192 conversations, 4 that branch
CODE_ID = "01HAWN40DGS5QV8NQTAMNVZVPC"  # what the conversation has always become
TEXT = "text"


def export(path: Path) -> list[dict[str, Any]]:
    return list(json.loads(path.read_bytes()))


def conversations(data: bytes) -> list[Conversation]:
    found, read_back = read(data)
    assert found == "chatgpt"
    return read_back


def branch(record: dict[str, Any]) -> list[str]:
    """The current branch's node ids, root first, as the app shows it."""
    path, node = [], record["current_node"]
    while node is not None:
        path.append(node)
        node = record["mapping"][node]["parent"]
    return path[::-1]


def seconds(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def rebuilt(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The mapping again, from the nodes the events carry."""
    mapping = {}
    for event in events:
        kept = event.get("x_source", {})
        if "node" in kept:
            node = copy.deepcopy(kept["node"])
            if "content" not in node["message"]:  # a plain text: the event's content
                node["message"]["content"] = {"content_type": TEXT, "parts": [event["content"]]}
            mapping[node["id"]] = node
        for node in kept.get("records", []) + kept.get("branches", []):
            mapping[node["id"]] = node
    return mapping


def test_the_exports_are_detected_and_each_conversation_is_a_session() -> None:
    data = CODE.read_bytes()
    assert detect(data) == chatgpt.NAME == chatgpt.FORMAT.name
    [one] = conversations(data)
    assert one.id() == CODE_ID == conversations(data)[0].id()
    assert one.fingerprint.startswith("chatgpt:")
    assert ULID.from_str(one.id()).datetime.replace(microsecond=0) == datetime(
        2023, 9, 21, 19, 57, 53, tzinfo=UTC
    )
    many = conversations(EXPORT.read_bytes())
    assert len(many) == 192 == len({c.id() for c in many})


@pytest.mark.parametrize("path", [CODE, EXPORT], ids=["code", "export"])
def test_title_times_model_and_the_rest_are_the_conversations_own(path: Path) -> None:
    for conversation, record in zip(conversations(path.read_bytes()), export(path), strict=True):
        assert conversation.title == record["title"]
        assert seconds(str(conversation.created_at)) == pytest.approx(
            record["create_time"], abs=1e-3
        )
        extra = {k: v for k, v in record.items() if k != "mapping"}
        assert conversation.source == {"tool": "chatgpt", "record": extra}
        assert conversation.cwd is None
    code = conversations(CODE.read_bytes())[0]
    assert code.model == "gpt-4-code-interpreter"  # default_model_slug
    first = conversations(EXPORT.read_bytes())[0]  # no default: the first answer's slug
    assert (first.title, first.model) == ("Django Multi-DB Setup", "gpt-4")


@pytest.mark.parametrize("path", [CODE, EXPORT], ids=["code", "export"])
def test_the_transcript_is_the_current_branch_in_order(path: Path) -> None:
    for conversation, record in zip(conversations(path.read_bytes()), export(path), strict=True):
        mapping = record["mapping"]
        shown = [
            n
            for n in branch(record)
            if mapping[n]["message"] is not None
            and not mapping[n]["message"]["metadata"].get("is_visually_hidden_from_conversation")
            and not (
                mapping[n]["message"]["author"]["role"] == "system"
                and not "".join(mapping[n]["message"]["content"].get("parts", []))
            )
        ]
        events = conversation.events
        assert [e["x_source"]["node"]["id"] for e in events] == shown
        for event in events:
            message = mapping[event["x_source"]["node"]["id"]]["message"]
            role = message["author"]["role"]
            assert event["role"] == role
            assert seconds(event["ts"]) == pytest.approx(message["create_time"], abs=1e-3)
            if not event.get("tool_calls"):
                content = message["content"]
                said = content.get("parts") or [content.get("text", content.get("result"))]
                assert event["content"] == "\n".join(said)  # a browser result: its result
            if role == "assistant":
                assert event["model"] == message["metadata"]["model_slug"]
        times = [e["ts"] for e in events]
        assert times == sorted(times)


def test_code_interpreter_calls_are_answered_by_id() -> None:
    [record] = export(CODE)
    events = conversations(CODE.read_bytes())[0].events
    calls = [e for e in events if e.get("tool_calls")]
    results = [e for e in events if e["role"] == "tool"]
    assert len(calls) == len(results) == 11
    for call_turn in calls:
        [call] = call_turn["tool_calls"]
        node = record["mapping"][call["id"]]  # a call's id is its node's
        assert call_turn["content"] is None and call["function"]["name"] == "python"
        assert json.loads(call["function"]["arguments"]) == {
            "input": node["message"]["content"][TEXT]
        }
        answer = events[events.index(call_turn) + 1]
        assert answer["role"] == "tool" and answer["tool_call_id"] == call["id"]
        result = record["mapping"][answer["x_source"]["node"]["id"]]["message"]
        assert answer["content"] == result["content"][TEXT]  # execution_output
        assert result["author"]["name"] == "python"


def test_browser_calls_may_have_several_results_or_none() -> None:
    records = export(EXPORT)
    got = conversations(EXPORT.read_bytes())
    [radio] = [c for c in got if c.title == "How to Use Radio"]
    answers: dict[str, int] = {}
    for event in radio.events:
        if event["role"] == "tool":
            answers[event["tool_call_id"]] = answers.get(event["tool_call_id"], 0) + 1
    assert sorted(answers.values()) == [1, 1, 1, 1, 3]  # three quotes for one call
    for conversation in got:
        issued: set[str] = set()
        for event in conversation.events:
            issued.update(c["id"] for c in event.get("tool_calls") or [])
            if event["role"] == "tool":
                assert event["tool_call_id"] in issued
    calls = sum(len(e.get("tool_calls") or []) for c in got for e in c.events)
    sent = [
        n["message"]["recipient"]
        for r in records
        for i in branch(r)
        if (n := r["mapping"][i])["message"] and n["message"]["recipient"] != "all"
    ]
    assert calls == len(sent) == 28  # on the current branches (two more are off them)
    assert sent.count("browser") == 27 and sent.count("show_me.get_MermaidRoute") == 1


@pytest.mark.parametrize("path", [CODE, EXPORT], ids=["code", "export"])
def test_every_node_is_kept_and_the_mapping_rebuilds(path: Path) -> None:
    for conversation, record in zip(conversations(path.read_bytes()), export(path), strict=True):
        assert rebuilt(conversation.events) == record["mapping"]


def test_other_branches_ride_on_the_event_after_their_fork() -> None:
    records = export(EXPORT)
    branching = 0
    for conversation, record in zip(conversations(EXPORT.read_bytes()), records, strict=True):
        path = branch(record)
        for index, event in enumerate(conversation.events):
            for node in event.get("x_source", {}).get("branches", []):
                branching += 1
                fork = node["parent"]
                while fork not in path:
                    fork = record["mapping"][fork]["parent"]
                after = path[path.index(fork) + 1 :]
                holders = [
                    n
                    for n, e in enumerate(conversation.events)
                    if e["x_source"]["node"]["id"] in after
                ]
                assert index == holders[0]
    assert branching == 9  # 4 conversations: regenerated answers
    [oscar] = [
        c for c in conversations(EXPORT.read_bytes()) if c.title == "Oscar for Rental Webshop"
    ]
    [holder] = [e for e in oscar.events if "branches" in e.get("x_source", {})]
    assert len(holder["x_source"]["branches"]) == 6
    assert holder is oscar.events[1]  # the first answer to the question they branch from


def test_the_root_and_the_hidden_system_messages_are_records() -> None:
    [record] = export(CODE)
    events = conversations(CODE.read_bytes())[0].events
    records = events[0]["x_source"]["records"]  # before the first question
    assert [r["id"] for r in records] == branch(record)[:3]
    assert records[0]["message"] is None
    assert all(
        r["message"]["metadata"]["is_visually_hidden_from_conversation"] for r in records[1:]
    )
    assert not any(e["role"] == "system" for e in events)


def test_a_conversation_is_the_same_session_wherever_it_is_and_however_written() -> None:
    records = export(EXPORT)
    ids = [c.id() for c in conversations(EXPORT.read_bytes())]
    alone = conversations(orjson.dumps(records[13]))  # one conversation object
    reordered = conversations(orjson.dumps([dict(reversed(list(records[13].items())))]))
    pair = conversations(orjson.dumps(records[12:14], option=orjson.OPT_INDENT_2))
    assert [c.id() for c in alone] == [c.id() for c in reordered] == [ids[13]]
    assert [c.id() for c in pair] == ids[12:14]


def broken(number: int, **change: Any) -> bytes:
    """The export with conversation ``number`` (from 1) changed."""
    records = export(EXPORT)
    records[number - 1] = {**records[number - 1], **change}
    return orjson.dumps(records)


def looped() -> bytes:
    records = export(EXPORT)
    mapping = records[2]["mapping"]
    root = branch(records[2])[0]
    mapping[root]["parent"] = records[2]["current_node"]
    return orjson.dumps(records)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (
            broken(3, current_node="nope"),
            "conversation 3: its current_node 'nope' is not in its mapping",
        ),
        (broken(5, mapping=[]), "conversation 5: expected an object with a 'mapping'"),
        (looped(), "conversation 3, node "),
        (
            (
                FOLDER.parent / "swe-agent" / "SWE-agent" / "swe-agent__test-repo-i1.traj"
            ).read_bytes(),
            "conversation 1: expected an object with a 'mapping'",
        ),
        (b"[]", "the file holds no conversation"),
        (b'[{"mapping": {}', "not JSON"),
    ],
    ids=["current", "mapping", "loop", "traj", "empty", "json"],
)
def test_a_file_that_is_not_an_export_names_the_conversation(data: bytes, says: str) -> None:
    with pytest.raises(ImportProblem) as caught:
        read(data, "chatgpt")
    assert caught.value.detail.startswith(says), caught.value.detail


def test_the_api_imports_a_conversation_with_its_title_and_times(client: TestClient) -> None:
    r = client.post("/v1/sessions/import", content=CODE.read_bytes())
    assert r.status_code == 422 and "repo_root" in r.json()["detail"]  # a chat says none
    result = import_file(client, CODE, repo_root="/srv/chats")
    assert result["format"] == "chatgpt" and result["imported"] == 1
    [session] = result["sessions"]
    assert session["id"] == CODE_ID
    header = client.get(f"/v1/sessions/{CODE_ID}").json()
    assert header["title"] == "Average Distance in U(0,1)"
    assert header["header"]["created_at"].startswith("2023-09-21T19:57:53")
    assert header["header"]["model"] == "gpt-4-code-interpreter"
    events = events_of(client, CODE_ID)
    assert rebuilt(events) == export(CODE)[0]["mapping"]
    check_chat(client, CODE_ID)


def test_the_api_imports_a_whole_export(client: TestClient) -> None:
    result = import_file(client, EXPORT, repo_root="/srv/chats")
    assert result["format"] == "chatgpt" and result["imported"] == 192
    records = export(EXPORT)
    for record, session in list(zip(records, result["sessions"], strict=True))[10:16]:
        assert client.get(f"/v1/sessions/{session['id']}").json()["title"] == record["title"]
        assert rebuilt(events_of(client, session["id"])) == record["mapping"]
        check_chat(client, session["id"])
    assert import_file(client, EXPORT, repo_root="/srv/chats")["already_imported"] == 192


def test_a_damaged_export_is_422_and_writes_nothing(client: TestClient, home: Path) -> None:
    before = snapshot(home)
    for params in ({"repo_root": "/srv/chats"}, {"repo_root": "/srv/chats", "format": "chatgpt"}):
        r = client.post(
            "/v1/sessions/import", content=broken(3, current_node="nope"), params=params
        )
        assert r.status_code == 422, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["detail"].startswith("conversation 3: ")
        assert snapshot(home) == before
    assert client.get("/v1/sessions").json()["items"] == []
