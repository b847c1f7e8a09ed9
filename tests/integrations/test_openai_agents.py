"""The OpenAI Agents SDK ``Session`` against a real daemon, with the real SDK: every
item type round-trips, ``pop_item`` is a retraction every view honours, and
``clear_session`` then reuse of the same id works; a real ``Runner`` with a scripted
model on loopback (the true boundary) keeps its conversation there."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from aster_persist.client import AsyncClient, ConflictError, InvalidRequestError
from aster_persist.integrations.openai_agents import AsterSession

from ..conftest import Daemon
from ..model_server import Reply, ScriptedModel

REPO = "/srv/agents-app"
set_tracing_disabled(True)  # the SDK would send traces to OpenAI otherwise

ITEMS: list[dict[str, Any]] = [
    {"role": "developer", "content": "Answer briefly."},
    {"role": "user", "content": [{"type": "input_text", "text": "What is the weather?"}]},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Look it up, then hand off."}],
        "encrypted_content": "gAAAAB-opaque",
    },
    {
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Oslo"}',
        "id": "fc_1",
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "snow, minus four"},
    {
        "type": "function_call",
        "call_id": "call_2",
        "name": "transfer_to_billing_agent",
        "arguments": "{}",
    },
    {"type": "function_call_output", "call_id": "call_2", "output": '{"assistant": "Billing"}'},
    {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "oslo weather"},
    },
    {
        "type": "computer_call",
        "id": "cu_1",
        "call_id": "call_3",
        "action": {"type": "screenshot"},
        "pending_safety_checks": [],
        "status": "completed",
    },
    {
        "type": "computer_call_output",
        "call_id": "call_3",
        "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA=="},
    },
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Snow in Oslo.", "annotations": []}],
    },
    {"type": "item_reference", "id": "msg_0"},
]


def messages(daemon: Daemon, sid: str, view: str = "context") -> list[dict[str, Any]]:
    r = httpx.get(f"{daemon.url}/v1/sessions/{sid}/messages", params={"view": view})
    assert r.status_code == 200, r.text
    return list(r.json()["messages"])


def test_every_item_type_round_trips_and_reads_as_a_transcript(daemon: Daemon) -> None:
    async def run() -> None:
        async with AsyncClient(daemon.url) as client:
            session = AsterSession("user_123", repo_root=REPO, client=client)
            assert await session.get_items() == []
            await session.add_items(ITEMS[:5])
            await session.add_items(ITEMS[5:])
            assert await session.get_items() == ITEMS
            assert await session.get_items(limit=2) == ITEMS[-2:]
            assert await session.get_items(limit=0) == []

            sid = await session.stored_id(create=False)
            assert sid is not None
            listed = (await client.list_sessions(alias="openai-agents:user_123")).items
            assert [s.id for s in listed] == [sid]
            events = (await client.events(sid)).events
            kinds = [(e["type"], e.get("role")) for e in events]
            assert kinds[:6] == [
                ("message", "system"),
                ("message", "user"),
                ("reasoning", None),
                ("message", "assistant"),
                ("message", "tool"),
                ("message", "assistant"),
            ]
            assert events[1]["content"] == "What is the weather?"
            assert events[2]["content"] == "Look it up, then hand off."
            call = events[3]["tool_calls"][0]
            assert (call["id"], call["function"]["name"]) == ("call_1", "get_weather")
            assert (
                events[4]["tool_call_id"] == "call_1" and events[4]["content"] == "snow, minus four"
            )
            assert events[5]["tool_calls"][0]["function"]["name"] == "transfer_to_billing_agent"
            assert events[10]["content"] == "Snow in Oslo."
            summary = await client.get_session(sid)
            assert summary.tool_calls >= 4 and summary.alias == "openai-agents:user_123"
            hits = (await client.search("minus four")).items
            assert [(h.session_id, h.seq) for h in hits] == [(sid, 5)]

            # another process with the same id sees the same conversation
            other = AsterSession("user_123", repo_root=REPO, url=daemon.url)
            assert await other.get_items() == ITEMS
            await other.client.close()

    asyncio.run(run())
    context = messages(daemon, httpx.get(f"{daemon.url}/v1/sessions").json()["items"][0]["id"])
    assert [m["role"] for m in context][:4] == ["system", "user", "assistant", "tool"]


def test_pop_item_is_a_retraction_and_clear_then_reuse_starts_anew(daemon: Daemon) -> None:
    async def run() -> tuple[str, str]:
        async with AsyncClient(daemon.url) as client:
            session = AsterSession("support-42", repo_root=REPO, client=client)
            assert await session.pop_item() is None  # nothing yet
            await session.add_items(
                [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "wrong"}]
            )
            popped = await session.pop_item()
            assert popped == {"role": "assistant", "content": "wrong"}
            assert await session.get_items() == [{"role": "user", "content": "hi"}]

            first = await session.stored_id(create=False)
            assert first is not None
            assert [m["content"] for m in messages(daemon, first, "history")] == ["hi"]
            events = (await client.events(first)).events
            assert events[-1] == {**events[-1], "type": "retraction", "target_seq": 2}
            assert (await client.search("wrong")).items == []
            await session.add_items([{"role": "user", "content": "x"}])
            assert await session.pop_item() == {"role": "user", "content": "x"}
            assert await session.pop_item() == {"role": "user", "content": "hi"}  # in a row
            assert await session.get_items() == [] and await session.pop_item() is None

            await session.clear_session()
            assert await session.get_items() == []
            await session.add_items([{"role": "user", "content": "start over"}])
            second = await session.stored_id(create=False)
            assert second is not None and second != first
            assert await session.get_items() == [{"role": "user", "content": "start over"}]
            with pytest.raises(ConflictError, match=second):  # kept, while the id is taken
                await client.restore_session(first)
            await session.clear_session()
            restored = await client.restore_session(first)  # the cleared one comes back
            assert restored.id == first == await session.stored_id(create=False)
            return first, second

    first, second = asyncio.run(run())
    assert first != second


def test_a_runner_keeps_its_conversation_in_the_store(daemon: Daemon, model: ScriptedModel) -> None:
    def answer(request: dict[str, Any]) -> Reply:
        last = request["messages"][-1]
        if last["role"] == "tool":
            message = {"role": "assistant", "content": f"It is {last['content']}."}
        else:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{len(model.requests)}",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                    }
                ],
            }
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": request["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        return Reply(body=json.dumps(body))

    model.responders["memory_items"] = answer

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"snowing in {city}"

    async def run() -> None:
        openai = AsyncOpenAI(base_url=model.url, api_key="test-key", max_retries=0)
        agent = Agent(
            name="Weather",
            instructions="Answer about the weather.",
            tools=[get_weather],
            model=OpenAIChatCompletionsModel(model="scripted", openai_client=openai),
        )
        session = AsterSession("chat-7", repo_root=REPO, url=daemon.url)
        first = await Runner.run(agent, "Weather in Oslo?", session=session)
        assert first.final_output == "It is snowing in Oslo."
        second = await Runner.run(agent, "And tomorrow?", session=session)
        assert second.final_output == "It is snowing in Oslo."
        await session.client.close()
        await openai.close()

    asyncio.run(run())
    # the model was sent the first run's conversation, read back from the store
    sent = [m.get("content") for m in model.requests[-2]["messages"]]
    assert "Weather in Oslo?" in sent and "It is snowing in Oslo." in sent
    sid = httpx.get(f"{daemon.url}/v1/sessions", params={"alias": "openai-agents:chat-7"}).json()[
        "items"
    ][0]["id"]
    history = [m["content"] for m in messages(daemon, sid, "history")]
    assert history == [
        "Weather in Oslo?",
        "It is snowing in Oslo.",
        "And tomorrow?",
        "It is snowing in Oslo.",
    ]


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ({"type": "function_call", "name": "f"}, "item 1 cannot be stored (KeyError: 'call_id')"),
        ({"role": "user", "content": 7}, "item 1 cannot be stored (ValueError: a content is"),
        ({"type": "function_call", "call_id": "", "name": "f", "arguments": ""}, "id"),
    ],
)
def test_an_item_that_cannot_be_stored_is_refused_whole(
    daemon: Daemon, bad: dict[str, Any], said: str
) -> None:
    async def run() -> None:
        async with AsyncClient(daemon.url) as client:
            session = AsterSession("broken", repo_root=REPO, client=client)
            await session.add_items([{"role": "user", "content": "kept"}])
            with pytest.raises((ValueError, InvalidRequestError)) as caught:
                await session.add_items([{"role": "user", "content": "not kept"}, bad])
            assert said in str(caught.value)
            assert await session.get_items() == [{"role": "user", "content": "kept"}]

    asyncio.run(run())


def test_a_long_output_is_stored_once_and_a_trashed_session_is_not_in_the_way(
    daemon: Daemon,
) -> None:
    output = "line of a long build log\n" * 8000  # about 200 KB: a blob
    items = [
        {"type": "function_call", "call_id": "c1", "name": "build", "arguments": '{"all": true}'},
        {"type": "function_call_output", "call_id": "c1", "output": output},
    ]

    async def run() -> None:
        async with AsterSession("long", repo_root=REPO, url=daemon.url) as session:
            await session.add_items(items)
            assert await session.get_items() == items
            sid = await session.stored_id(create=False)
            assert sid is not None
            raw = (await session.client.events(sid, inline=False)).events
            assert "output" not in raw[1]["x_agents_item"] and "content_ref" in raw[1]["content"]
            assert "arguments" not in raw[0]["x_agents_item"]
            (transcript,) = daemon.home.glob(f"sessions/*/{sid}.jsonl")
            assert transcript.stat().st_size < 4096  # the output is in one blob, not inline

            await session.client.delete_session(sid)  # trashed by someone else
            assert await session.get_items() == []
            await session.add_items(items[:1])
            assert await session.stored_id(create=False) not in (None, sid)
            assert await session.get_items() == items[:1]
        assert session.client.http.is_closed  # it made its client, and closed it

    asyncio.run(run())


def test_pop_item_takes_one_item_of_a_message_another_tool_wrote(daemon: Daemon) -> None:
    async def run() -> None:
        async with AsterSession("mixed", repo_root=REPO, url=daemon.url) as session:
            await session.add_items([{"role": "user", "content": "check both"}])
            sid = await session.stored_id(create=False)
            assert sid is not None
            written = {  # by another tool: text and two calls in one event
                "type": "message",
                "role": "assistant",
                "content": "Checking both.",
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
                ],
            }
            await session.client.append(sid, written)
            before = await session.get_items()
            assert [i.get("call_id") for i in before] == [None, None, "a", "b"]
            popped = await session.pop_item()
            assert popped == before[-1]
            assert await session.get_items() == before[:-1]  # the text and call a stay
            assert await session.pop_item() == before[2]
            assert await session.get_items() == before[:2]

    asyncio.run(run())


def test_built_as_the_sdk_builds_its_own_sessions(
    daemon: Daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``AsterSession("user_123")``, as ``SQLiteSession("user_123")``: the project is the
    git work tree the program runs in, from any folder in it."""
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    (project / "src" / "api").mkdir(parents=True)
    monkeypatch.chdir(project / "src" / "api")
    monkeypatch.setenv("ASTER_URL", daemon.url)

    async def run() -> None:
        session = AsterSession("user_123")
        async with session:
            await session.add_items([{"role": "user", "content": "hello"}])
            assert [i["content"] for i in await session.get_items()] == ["hello"]

    asyncio.run(run())
    [stored] = httpx.get(f"{daemon.url}/v1/sessions").json()["items"]
    assert stored["repo_root"] == str(project) and stored["alias"] == "openai-agents:user_123"
