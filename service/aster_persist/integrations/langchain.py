"""A LangChain chat message history kept in the store (``pip install
'.[langchain]'`` in the checkout).

``AsterChatMessageHistory("user_123")`` (the project: ``repo_root=``, by default the git
work tree the program runs in, as the CLI takes ``.``) is what
``RunnableWithMessageHistory`` (or any code that takes a ``BaseChatMessageHistory``)
uses. The id is the caller's own: it becomes the alias ``langchain:user_123`` of one
stored session, made on the first message. Each message is one transcript event
(human → user, AI → assistant with its tool calls, tool → a tool result, system →
system), readable by every other tool; the message itself rides along in
``x_langchain_message``, so reading gives back exactly what was added. ``clear`` moves
the session to the trash (restorable); the next message starts a new one. A history
made without a ``client`` has its own: ``close()`` it (or use ``with``); histories made
per call (as ``RunnableWithMessageHistory`` does) are best given one shared ``client``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import orjson
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)

from ..client import Client, ConflictError, NotFoundError, here
from ..schemas.rendering import content_text, unretracted

MESSAGE = "x_langchain_message"  # the message, as LangChain serialises it
SHARED = "x_langchain_text_shared"  # its text left out of it: the event's content holds it
PREFIX = "langchain:"
PAGE = 1000


class AsterChatMessageHistory(BaseChatMessageHistory):
    """One conversation's messages, stored as one aster-persist session."""

    def __init__(
        self,
        session_id: str,
        *,
        repo_root: str | os.PathLike[str] | None = None,
        client: Client | None = None,
        url: str | None = None,
        token: str | None = None,
    ) -> None:
        self.session_id = session_id
        self.repo_root = here() if repo_root is None else os.fspath(repo_root)
        self.alias = PREFIX + session_id
        self.client = client or Client(url, token)
        self._own = client is None  # a client made here is closed here
        self._stored: str | None = None

    def __enter__(self) -> AsterChatMessageHistory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection to the daemon, when this history made it."""
        if self._own:
            self.client.close()

    def stored_id(self, *, create: bool) -> str | None:
        """The id of the stored session this history is (made when ``create``)."""
        if self._stored is None:
            page = self.client.list_sessions(alias=self.alias, limit=1)
            if page.items:
                self._stored = page.items[0].id
            elif create:
                try:
                    made = self.client.create_session(
                        self.repo_root, alias=self.alias, x_integration="langchain"
                    )
                    self._stored = made.id
                except ConflictError:  # made meanwhile by another process: that one
                    return self.stored_id(create=False)
        return self._stored

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        try:
            return self._read()
        except NotFoundError:  # trashed meanwhile (by a person, another process)
            self._stored = None
            return self._read()

    def _read(self) -> list[BaseMessage]:
        sid = self.stored_id(create=False)
        if sid is None:
            return []
        events: list[dict[str, Any]] = []
        after = 0
        while True:
            page = self.client.events(sid, after=after, limit=PAGE)
            events += page.events
            if not page.next_cursor:
                break
            after = int(page.next_cursor)
        return [m for event in unretracted(events) if (m := message_of(event)) is not None]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        events = [event_of(message) for message in messages]
        if events:
            sid = self.stored_id(create=True)
            assert sid is not None
            try:
                self.client.append(sid, events)
            except NotFoundError:  # trashed meanwhile: the id names a new session now
                self._stored = None
                self.client.append(str(self.stored_id(create=True)), events)

    def clear(self) -> None:
        sid = self.stored_id(create=False)
        if sid is not None:
            self.client.delete_session(sid)
        self._stored = None


def event_of(message: BaseMessage) -> dict[str, Any]:
    """The transcript event of a message, the message kept on it (less its text, when
    the event's content holds it already); ``ValueError`` for a kind of message a
    transcript has no role for."""
    event = _event(message)
    kept = orjson.loads(orjson.dumps(message_to_dict(message), default=str))
    data = kept.get("data") or {}
    if isinstance(data.get("content"), str) and data["content"] == event.get("content"):
        del data["content"]
        event[SHARED] = True
    return {**event, MESSAGE: kept}


def _event(message: BaseMessage) -> dict[str, Any]:
    text = message.text if isinstance(message.content, list) else str(message.content)
    if isinstance(message, HumanMessage):
        return {"type": "message", "role": "user", "content": text}
    if isinstance(message, SystemMessage):
        return {"type": "message", "role": "system", "content": text}
    if isinstance(message, ToolMessage):
        said = {"content": text, "is_error": message.status == "error"}
        return {"type": "message", "role": "tool", "tool_call_id": message.tool_call_id, **said}
    if isinstance(message, AIMessage):
        calls = [
            {
                "id": call.get("id") or f"call_{i}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": orjson.dumps(call["args"]).decode(),
                },
            }
            for i, call in enumerate(message.tool_calls)
        ]
        event: dict[str, Any] = {"type": "message", "role": "assistant", "content": text or None}
        if calls:
            event["tool_calls"] = calls
        elif not text:
            event["content"] = ""
        return event
    raise ValueError(f"a {type(message).__name__} has no role in a transcript; nothing was added")


def message_of(event: dict[str, Any]) -> BaseMessage | None:
    """The message an event holds, or one made from a message another tool wrote."""
    if isinstance(event.get(MESSAGE), dict):
        kept = event[MESSAGE]
        if event.get(SHARED):
            kept = {**kept, "data": {**kept.get("data", {}), "content": event.get("content")}}
        return messages_from_dict([kept])[0]
    if event.get("type") != "message":
        return None
    text, role = content_text(event.get("content")), event.get("role")
    if role == "user":
        return HumanMessage(text)
    if role == "system":
        return SystemMessage(text)
    if role == "tool":
        status = "error" if event.get("is_error") else "success"
        return ToolMessage(text, tool_call_id=str(event.get("tool_call_id")), status=status)
    calls = []
    for call in event.get("tool_calls") or []:
        function = call.get("function") or {}
        try:
            args = orjson.loads(function.get("arguments") or "{}")
        except orjson.JSONDecodeError:
            args = {"arguments": function.get("arguments")}
        calls.append({"name": function.get("name", ""), "args": args, "id": call.get("id")})
    return AIMessage(text, tool_calls=calls)
