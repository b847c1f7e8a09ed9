"""The LangChain chat message history against a real daemon, with the real package:
messages round-trip, read as a transcript by every other tool, clear then reuse works,
and LangChain's own ``RunnableWithMessageHistory`` keeps a conversation there."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from aster_persist.client import Client
from aster_persist.integrations.langchain import AsterChatMessageHistory

from ..conftest import Daemon

REPO = "/srv/langchain-app"
# LangChain deprecated this interface in favour of LangGraph's memory (which the
# LangGraph store covers); it is still what RunnableWithMessageHistory takes.
pytestmark = pytest.mark.filterwarnings(
    "ignore::langchain_core._api.deprecation.LangChainDeprecationWarning"
)

MESSAGES = [
    SystemMessage("Be brief."),
    HumanMessage("Which files changed?", id="h1"),
    AIMessage(
        "",
        tool_calls=[{"name": "git_status", "args": {"short": True}, "id": "call_9"}],
        usage_metadata={"input_tokens": 10, "output_tokens": 3, "total_tokens": 13},
    ),
    ToolMessage("M app.py", tool_call_id="call_9"),
    ToolMessage("permission denied", tool_call_id="call_10", status="error"),
    AIMessage("Only app.py changed.", response_metadata={"model_name": "m"}),
]


def test_messages_round_trip_and_read_as_a_transcript(daemon: Daemon) -> None:
    with Client(daemon.url) as client:
        history = AsterChatMessageHistory("user_123", repo_root=REPO, client=client)
        assert history.messages == []
        history.add_messages(MESSAGES[:3])
        history.add_messages(MESSAGES[3:])
        assert history.messages == MESSAGES
        again = AsterChatMessageHistory("user_123", repo_root=REPO, url=daemon.url)
        assert again.messages == MESSAGES  # another process, the same conversation
        again.client.close()

        sid = history.stored_id(create=False)
        assert sid is not None
        events = client.events(sid).events
        assert [(e["role"], e.get("content")) for e in events] == [
            ("system", "Be brief."),
            ("user", "Which files changed?"),
            ("assistant", None),
            ("tool", "M app.py"),
            ("tool", "permission denied"),
            ("assistant", "Only app.py changed."),
        ]
        call = events[2]["tool_calls"][0]
        assert call == {
            "id": "call_9",
            "type": "function",
            "function": {"name": "git_status", "arguments": '{"short":true}'},
        }
        assert events[4]["is_error"] is True
        summary = client.get_session(sid)
        assert (summary.alias, summary.tool_errors) == ("langchain:user_123", 1)
        assert [h.seq for h in client.search("permission denied").items] == [5]


def test_clear_then_reuse_and_async(daemon: Daemon) -> None:
    history = AsterChatMessageHistory("support-9", repo_root=REPO, url=daemon.url)
    history.add_user_message("hello")
    first = history.stored_id(create=False)
    history.clear()
    assert history.messages == []

    async def run() -> list[Any]:
        await history.aadd_messages([HumanMessage("again")])
        return await history.aget_messages()

    assert asyncio.run(run()) == [HumanMessage("again")]
    second = history.stored_id(create=False)
    assert first is not None and second not in (None, first)
    r = httpx.post(f"{daemon.url}/v1/sessions/{first}/restore")
    assert r.status_code == 409 and second in r.text  # the id is the new conversation's
    fresh = AsterChatMessageHistory("support-9", repo_root=REPO, url=daemon.url)
    assert fresh.messages == [HumanMessage("again")]
    fresh.client.close()
    history.client.close()


def test_a_message_with_no_role_is_refused_whole(daemon: Daemon) -> None:
    from langchain_core.messages import ChatMessage

    history = AsterChatMessageHistory("odd", repo_root=REPO, url=daemon.url)
    history.add_user_message("kept")
    with pytest.raises(ValueError, match="ChatMessage has no role in a transcript"):
        history.add_messages([HumanMessage("not kept"), ChatMessage("?", role="critic")])
    assert history.messages == [HumanMessage("kept")]
    history.client.close()


def test_runnable_with_message_history_keeps_the_conversation(daemon: Daemon) -> None:
    histories: dict[str, AsterChatMessageHistory] = {}

    def history_of(session_id: str) -> AsterChatMessageHistory:
        if session_id not in histories:
            histories[session_id] = AsterChatMessageHistory(
                session_id, repo_root=REPO, url=daemon.url
            )
        return histories[session_id]

    prompt = ChatPromptTemplate.from_messages(
        [("system", "Count."), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    seen: list[int] = []

    def model(value: Any) -> AIMessage:
        messages = value.to_messages()
        seen.append(len(messages))
        return AIMessage(f"you said {len(messages) - 1} things")

    chain = RunnableWithMessageHistory(
        prompt | RunnableLambda(model),
        history_of,
        input_messages_key="question",
        history_messages_key="history",
    )
    config = {"configurable": {"session_id": "counter"}}
    chain.invoke({"question": "one"}, config=config)
    chain.invoke({"question": "two"}, config=config)
    assert seen == [2, 4]  # the second call was sent the first exchange, read back
    assert [m.content for m in history_of("counter").messages] == [
        "one",
        "you said 1 things",
        "two",
        "you said 3 things",
    ]
    for history in histories.values():
        history.client.close()


def test_text_is_kept_once_and_a_trashed_session_is_not_in_the_way(daemon: Daemon) -> None:
    long = "a long answer " * 20000  # about 280 KB: a blob
    with AsterChatMessageHistory("long", repo_root=REPO, url=daemon.url) as history:
        history.add_messages([HumanMessage("tell me everything"), AIMessage(long)])
        assert history.messages == [HumanMessage("tell me everything"), AIMessage(long)]
        sid = history.stored_id(create=False)
        assert sid is not None
        raw = history.client.events(sid, inline=False).events
        assert "content" not in raw[1]["x_langchain_message"]["data"]
        assert "content_ref" in raw[1]["content"]

        history.client.delete_session(sid)  # trashed by someone else
        assert history.messages == []
        history.add_user_message("again")
        assert history.stored_id(create=False) not in (None, sid)
        assert history.messages == [HumanMessage("again")]
    assert history.client.http.is_closed


def test_built_with_only_an_id_keeps_to_the_project_it_runs_in(
    daemon: Daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``AsterChatMessageHistory("user_123")``: the project is the git work tree the
    program runs in, from any folder in it."""
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    (project / "docs").mkdir()
    monkeypatch.chdir(project / "docs")
    monkeypatch.setenv("ASTER_URL", daemon.url)
    history = AsterChatMessageHistory("user_123")
    try:
        history.add_messages([HumanMessage("hello")])
        assert [m.content for m in history.messages] == ["hello"]
    finally:
        history.close()
    [stored] = httpx.get(f"{daemon.url}/v1/sessions").json()["items"]
    assert stored["repo_root"] == str(project) and stored["alias"] == "langchain:user_123"
