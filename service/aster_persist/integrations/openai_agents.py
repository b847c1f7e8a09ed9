"""An OpenAI Agents SDK ``Session`` kept in the store (``pip install
'.[openai-agents]'`` in the checkout).

``AsterSession("user_123")`` (the project: ``repo_root=``, by default the git work tree
the program runs in, as the CLI takes ``.``) is what ``Runner.run(..., session=)``
takes. The SDK's own session id is the caller's to choose: it becomes the alias
``openai-agents:user_123`` of one stored session, made on the first ``add_items``.
Each item is one transcript event, readable by every other tool: messages as
messages, function calls (handoffs are function calls too) as tool calls, their
outputs as tool results, reasoning as ``reasoning``; the item itself rides along in
``x_agents_item`` (less what the event holds already, such as a long tool output), so
``get_items`` gives back exactly what was added. ``pop_item`` appends a retraction of
the latest item (the transcript is append-only; every view leaves the item out from
then on), and ``clear_session`` moves the session to the trash, where it can be
restored: the next ``add_items`` starts a new one under the same id. A session made
without a ``client`` has its own: ``await session.aclose()`` (or ``async with``).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import orjson
from agents.memory.session import SessionABC
from agents.memory.session_settings import SessionSettings

from ..client import AsyncClient, ConflictError, NotFoundError, PreconditionFailedError, here
from ..schemas.rendering import content_text, unretracted

ITEM = "x_agents_item"  # the SDK's item, verbatim, on the event made from it
SHARED = "x_agents_item_shares"  # the item's fields left out of it: the event holds them
PREFIX = "openai-agents:"
PAGE = 1000


class AsterSession(SessionABC):
    """A conversation of the Agents SDK, stored as one aster-persist session."""

    def __init__(
        self,
        session_id: str,
        *,
        repo_root: str | os.PathLike[str] | None = None,
        client: AsyncClient | None = None,
        url: str | None = None,
        token: str | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = session_id
        self.session_settings = session_settings
        self.repo_root = here() if repo_root is None else os.fspath(repo_root)
        self.alias = PREFIX + session_id
        self.client = client or AsyncClient(url, token)
        self._own = client is None  # a client made here is closed here
        self._stored: str | None = None  # the stored session's id, once known
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> AsterSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection to the daemon, when this session made it."""
        if self._own:
            await self.client.close()

    async def stored_id(self, *, create: bool) -> str | None:
        """The id of the stored session this conversation is (made when ``create``)."""
        if self._stored is not None:
            return self._stored
        page = await self.client.list_sessions(alias=self.alias, limit=1)
        if page.items:
            self._stored = page.items[0].id
        elif create:
            try:
                header = await self.client.create_session(
                    self.repo_root, alias=self.alias, x_integration="openai-agents"
                )
                self._stored = header.id
            except ConflictError:  # made meanwhile by another process: that one
                return await self.stored_id(create=False)
        return self._stored

    async def _events(self) -> list[dict[str, Any]]:
        return unretracted(await self._lines())

    async def _lines(self) -> list[dict[str, Any]]:
        """Every event as stored, retractions and what they took back included."""
        try:
            return await self._read()
        except NotFoundError:  # trashed meanwhile (by a person, another process)
            self._stored = None
            return await self._read()

    async def _read(self) -> list[dict[str, Any]]:
        sid = await self.stored_id(create=False)
        if sid is None:
            return []
        events: list[dict[str, Any]] = []
        after = 0
        while True:
            page = await self.client.events(sid, after=after, limit=PAGE)
            events += page.events
            if not page.next_cursor:
                return events
            after = int(page.next_cursor)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items = [item for event in await self._events() for item in items_of(event)]
        if limit is None:
            return items
        return items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        if not items:
            return
        events = events_of(items)
        async with self._lock:
            sid = await self.stored_id(create=True)
            assert sid is not None
            try:
                await self.client.append(sid, events)
            except NotFoundError:  # trashed meanwhile: the id names a new session now
                self._stored = None
                sid = await self.stored_id(create=True)
                assert sid is not None
                await self.client.append(sid, events)

    async def pop_item(self) -> Any | None:
        async with self._lock:
            for _ in range(5):  # another writer in between: look again
                lines = await self._lines()
                found = [e for e in unretracted(lines) if items_of(e)]
                if not found:
                    return None
                last = found[-1]
                sid = await self.stored_id(create=False)
                assert sid is not None
                *kept, popped = items_of(last)  # an event another tool wrote may hold several
                retraction = {"type": "retraction", "target_seq": last["seq"], "reason": "pop_item"}
                latest = max(e["seq"] for e in lines)  # the If-Match: the file's last seq
                try:  # the event taken back, and the items it held but the last, in one append
                    await self.client.append(
                        sid, [retraction, *events_of(kept)], if_match=f'"{latest}"'
                    )
                except PreconditionFailedError:
                    continue
                return popped
            raise RuntimeError(f"session {self.session_id!r} kept changing; nothing popped")

    async def clear_session(self) -> None:
        async with self._lock:
            sid = await self.stored_id(create=False)
            if sid is not None:
                await self.client.delete_session(sid)
            self._stored = None


# -- items and events ---------------------------------------------------------------------


def events_of(items: list[Any]) -> list[dict[str, Any]]:
    """The events of ``items``; ``ValueError`` naming the first that is no item the
    SDK makes (then nothing is stored)."""
    events = []
    for i, item in enumerate(items):
        try:
            events.append(event_of(dict(item)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(
                f"item {i} cannot be stored ({type(exc).__name__}: {exc}); nothing was added"
            ) from None
    return events


def event_of(item: dict[str, Any]) -> dict[str, Any]:
    """The transcript event of an SDK item (the item kept on it)."""
    kind = item.get("type")
    role = item.get("role")
    event: dict[str, Any]
    if kind in (None, "message") and role in ("user", "system", "developer", "assistant"):
        text = _text(item.get("content"))
        if role == "assistant":
            event = {"type": "message", "role": "assistant", "content": text}
        else:
            event = {"type": "message", "role": "system" if role == "developer" else role}
            event["content"] = text
    elif kind == "reasoning":
        summary = [p.get("text", "") for p in item.get("summary") or [] if isinstance(p, dict)]
        event = {"type": "reasoning", "content": "\n".join(summary) or None}
    elif kind == "function_call":
        event = _call(item["call_id"], item["name"], item.get("arguments") or "")
    elif isinstance(kind, str) and kind.endswith("_output") and item.get("call_id"):  # results
        output = item.get("output")
        if isinstance(output, str):
            text = output
        else:  # parts (their text), or a structured output (its JSON)
            text = (_text(output) if isinstance(output, list) else "") or _json(output)
        event = {"type": "message", "role": "tool", "tool_call_id": item["call_id"]}
        event["content"] = text
    elif (
        isinstance(kind, str) and kind.endswith("_call") and (item.get("call_id") or item.get("id"))
    ):
        rest = {k: v for k, v in item.items() if k not in ("type", "id", "call_id", "status")}
        event = _call(
            str(item.get("call_id") or item["id"]), str(item.get("name") or kind), _json(rest)
        )
    else:  # no chat equivalent (an item reference, a compaction…): marked as what it is
        event = {"type": "message", "role": "assistant", "content": f"[{kind}]"}
    kept, shared = dict(item), []
    for field in ("content", "output", "arguments"):  # kept once, where every tool reads it
        if isinstance(item.get(field), str) and item[field] == _shared(event, field):
            del kept[field]
            shared.append(field)
    return {**event, ITEM: kept, **({SHARED: shared} if shared else {})}


def _shared(event: dict[str, Any], field: str) -> Any:
    """What an event holds of an item's ``field``: its content, or its call's arguments."""
    if field != "arguments":
        return event.get("content")
    calls = event.get("tool_calls") or [{}]
    return calls[0].get("function", {}).get("arguments")


def items_of(event: dict[str, Any]) -> list[Any]:
    """The SDK item an event holds, or those made from a message another tool wrote;
    none for what is no item (a title, a summary, reasoning with nothing to replay)."""
    if isinstance(event.get(ITEM), dict):
        return [{**event[ITEM], **{f: _shared(event, f) for f in event.get(SHARED) or ()}}]
    if event.get("type") != "message":
        return []
    role = event.get("role")
    if role == "tool":
        output = content_text(event.get("content"))
        return [
            {"type": "function_call_output", "call_id": event["tool_call_id"], "output": output}
        ]
    items: list[Any] = []
    text = content_text(event.get("content"))
    if role in ("user", "system") or (role == "assistant" and text):
        items.append({"role": role, "content": text})
    for call in event.get("tool_calls") or [] if role == "assistant" else []:
        function = call.get("function") or {}
        items.append(
            {
                "type": "function_call",
                "call_id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments", ""),
            }
        )
    return items


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    call = {"id": call_id, "type": "function", "function": function}
    return {"type": "message", "role": "assistant", "content": None, "tool_calls": [call]}


def _text(content: Any) -> str:
    """The text of an item's content: a string, or its text parts (input, output,
    refusal) joined; a content with none says what it holds."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ValueError(f"a content is a string or a list of parts, not {type(content).__name__}")
    parts = [p for p in content if isinstance(p, dict)]
    texts = [str(p.get("text") or p.get("refusal") or "") for p in parts]
    return "\n".join(t for t in texts if t) or " ".join(f"[{p.get('type')}]" for p in parts)


def _json(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()
