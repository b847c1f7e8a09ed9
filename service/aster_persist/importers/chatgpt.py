"""``chatgpt``: the ChatGPT data export's ``conversations.json``.

The file is a JSON array of conversations (or one conversation object), each with its
``title``, ``create_time`` and ``update_time`` (Unix seconds), ``current_node`` and a
``mapping`` of node id to ``{id, message, parent, children}``: a tree, since an edited
question or a regenerated answer starts a branch. The reader guarantees:

- each conversation is a session, with its own title and creation time; its other
  fields (``id``, ``update_time``, ``current_node``, ``default_model_slug``…) stay under
  the session's ``source.record``; the model is ``default_model_slug``, else the first
  answer's ``metadata.model_slug``;
- the transcript is the current branch: from ``current_node`` up by ``parent`` to the
  root, in order; each message on it becomes one event, timed by its ``create_time``
  and holding its node under ``x_source.node`` (a plain text message's content is its
  event's, ``{"content_type": "text", "parts": [content]}``, so it is left out there);
- an assistant message addressed to a tool (``recipient`` ``python``, ``browser``,
  ``dalle.text2im``…) is a tool call (id: its node id; arguments: its text, or
  ``{"input": text}`` when that is not a JSON object); a ``tool`` message answers the
  latest call to its author's name, so several results may answer one call;
- the root, hidden messages (``is_visually_hidden_from_conversation``), empty system
  messages, reasoning (``thoughts``, ``reasoning_recap``) and context messages travel
  whole under ``x_source.records`` of the next event;
- every node off the current branch (other answers, earlier edits) is kept whole under
  ``x_source.branches`` of the event after the node it branches from, so that all the
  nodes, the ones on the branch and those off it, rebuild the ``mapping``.

The fingerprint is the conversation's object, its keys sorted, so the same
conversation becomes the same session wherever it is in an export.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from ..schemas.strict import check_document
from .reader import Conversation, Format, Head, ImportProblem
from .records import Events, by_source, fingerprint, refuse_too_big
from .records import message as message_event
from .times import timestamp

NAME = "chatgpt"

_ROLES = ("user", "assistant", "system", "tool")
# Content types that say what the model thought or was told, not what was said.
_KEPT_TYPES = ("thoughts", "reasoning_recap", "user_editable_context", "model_editable_context")


def detects(head: Head) -> bool:
    """The file's first conversation has a ``mapping`` of nodes and a ``current_node``."""
    first = head.first or head.top
    return isinstance(first.get("mapping"), dict) and "current_node" in first


def read(data: bytes) -> list[Conversation]:
    """One conversation per conversation of the export, in its order."""
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ImportProblem(
            f"not JSON ({exc}); a ChatGPT export is one JSON array of conversations"
        ) from None
    refuse_too_big(data)
    check_document(data)  # no key twice in an object, not too deep
    records = document if isinstance(document, list) else [document]
    if not records:
        raise ImportProblem("the file holds no conversation")
    conversations = []
    for number, record in enumerate(records, 1):
        where = f"conversation {number}"
        if not isinstance(record, dict) or not isinstance(record.get("mapping"), dict):
            raise ImportProblem(f"{where}: expected an object with a 'mapping' of its messages")
        events, model = _events(record, where)
        extra = {k: v for k, v in record.items() if k != "mapping"}
        slug = record.get("default_model_slug")
        title = record.get("title")
        conversation = Conversation(
            fingerprint=fingerprint(NAME, orjson.dumps(record, option=orjson.OPT_SORT_KEYS)),
            events=events,
            created_at=_time(record.get("create_time")),
            model=slug if isinstance(slug, str) and slug else model,
            title=title if isinstance(title, str) and title.strip() else None,
            source={"tool": NAME, "record": extra},
        )
        own = record.get("conversation_id") or record.get("id")
        if isinstance(own, str) and own:  # a later export of it grew: the same session
            by_source(conversation, NAME, own)
        conversations.append(conversation)
    return conversations


def _events(record: dict[str, Any], where: str) -> tuple[list[dict[str, Any]], str | None]:
    """The events of the current branch, the other nodes on them; and the first model."""
    mapping: dict[str, Any] = record["mapping"]
    path = _branch(mapping, record.get("current_node"), where)
    out = Events()
    at: dict[str, int] = {}  # node id -> how many events there were before it
    calls: list[tuple[str, str]] = []  # (tool name, call id), oldest first
    model = None
    for node_id in path:
        node = mapping[node_id]
        at[node_id] = len(out.events)
        message = node.get("message")
        if message is None:
            out.keep(node)  # the root
            continue
        if not isinstance(message, dict) or not isinstance(message.get("author"), dict):
            raise ImportProblem(f"{where}, node {node_id}: expected a message with an author")
        content = message.get("content")
        if not isinstance(content, dict):
            raise ImportProblem(f"{where}, node {node_id}: expected a content object")
        role, text = message["author"].get("role"), _text(content)
        if not isinstance(role, str):
            raise ImportProblem(f"{where}, node {node_id}: its author has no role")
        found = message.get("metadata")
        metadata: dict[str, Any] = found if isinstance(found, dict) else {}
        if (
            metadata.get("is_visually_hidden_from_conversation")
            or content.get("content_type") in _KEPT_TYPES
            or (role == "system" and not text.strip())
        ):
            out.keep(node)
            continue
        event = _message(node_id, message, role, text, calls)
        slug = metadata.get("model_slug")
        if role == "assistant" and isinstance(slug, str):
            event["model"] = slug
            model = model or slug
        kept = dict(message)
        if content == {"content_type": "text", "parts": [event.get("content")]}:
            del kept["content"]  # the event's content, not said twice
        event["x_source"] = {"node": {**node, "message": kept}}
        out.add(event)
    events = out.done()
    _keep_branches(events, mapping, path, at)
    return events, model


def _branch(mapping: dict[str, Any], current: Any, where: str) -> list[str]:
    """The node ids from the root to the current node."""
    if current is None:  # no current node named: the mapping's last leaf
        leaves = [k for k, n in mapping.items() if isinstance(n, dict) and not n.get("children")]
        current = leaves[-1] if leaves else None
    if current is None:
        return []
    if not isinstance(current, str) or current not in mapping:
        raise ImportProblem(f"{where}: its current_node {current!r} is not in its mapping")
    path: list[str] = []
    seen: set[str] = set()
    node_id: Any = current
    while node_id is not None:
        node = mapping.get(node_id) if isinstance(node_id, str) else None
        if not isinstance(node, dict):
            child = f"node {path[-1]}: its parent" if path else "its current node"
            raise ImportProblem(f"{where}, {child} {node_id!r} is not a node object")
        if node_id in seen:
            raise ImportProblem(f"{where}, node {node_id}: its parents loop back to it")
        path.append(node_id)
        seen.add(node_id)
        node_id = node.get("parent")
    return path[::-1]


def _message(
    node_id: str, message: dict[str, Any], role: str, text: str, calls: list[tuple[str, str]]
) -> dict[str, Any]:
    """A message on the branch as an event: a message, a tool call or a tool's result."""
    ts = _time(message.get("create_time"))
    recipient = message.get("recipient")
    if role == "assistant" and isinstance(recipient, str) and recipient not in ("", "all"):
        calls.append((recipient, node_id))
        return {
            "type": "message",
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": node_id,
                    "type": "function",
                    "function": {"name": recipient, "arguments": _arguments(text)},
                }
            ],
            "ts": ts,
        }
    if role == "tool":
        name = message["author"].get("name")
        answered = next((c for n, c in reversed(calls) if n == name), None)
        return {
            "type": "message",
            "role": "tool",
            "tool_call_id": answered or (calls[-1][1] if calls else node_id),
            "content": text,
            "ts": ts,
        }
    return message_event(role, text, ts, _ROLES)


def _keep_branches(
    events: list[dict[str, Any]], mapping: dict[str, Any], path: list[str], at: dict[str, int]
) -> None:
    """Every node off the branch, kept whole on the event after the node it leaves from."""
    position = {node_id: n for n, node_id in enumerate(path)}
    for node_id, node in mapping.items():
        if node_id in position:
            continue
        fork: Any = node.get("parent") if isinstance(node, dict) else None
        seen = {node_id}
        while isinstance(fork, str) and fork not in position and fork not in seen:
            seen.add(fork)
            parent = mapping.get(fork)
            fork = parent.get("parent") if isinstance(parent, dict) else None
        index = len(events) - 1  # after the current node, or from nowhere: the last event
        if isinstance(fork, str) and fork in position and position[fork] + 1 < len(path):
            index = min(at[path[position[fork] + 1]], index)
        if index < 0:  # a conversation with no branch at all: a summary holds them
            events.append(
                {"type": "summary", "content": "(messages off the branch)", "through_seq": 0}
            )
            index = 0
        events[index].setdefault("x_source", {}).setdefault("branches", []).append(node)


def _text(content: dict[str, Any]) -> str:
    """The text of a message's content, whatever its type."""
    parts = content.get("parts")
    if isinstance(parts, list):
        return "\n".join(p for p in parts if isinstance(p, str))
    for key in ("text", "result", "content"):
        if isinstance(content.get(key), str):
            return str(content[key])
    return ""


def _arguments(text: str) -> str:
    """A tool call's arguments: its text if that is a JSON object, else ``{"input": text}``."""
    try:
        if isinstance(orjson.loads(text), dict):
            return text
    except orjson.JSONDecodeError:
        pass
    return orjson.dumps({"input": text}).decode()


def _time(value: Any) -> str | None:
    """A time as the export writes it (Unix seconds, or ISO 8601 in some copies)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return timestamp(value)
    try:
        return timestamp(datetime.fromtimestamp(value, UTC).isoformat())
    except (OverflowError, OSError, ValueError):
        return None


FORMAT = Format(NAME, "ChatGPT data exports (conversations.json)", detects, read)
