"""``openai-chat``: OpenAI chat-completions ``messages`` lists, with their ``tool_calls``.

The file is a bare ``messages`` list (an array, or one message per line), an object
holding one (``messages``, or ``traj`` as in a tau-bench trajectory), a JSON array of
such objects (one session each: a tau-bench file holds many), or JSON Lines of them.
The reader guarantees:

- each message becomes a message event as written, its ``null`` fields left out but an
  assistant's ``content: null`` (a turn of tool calls only) kept;
- a ``developer`` message (the newer name of the system role) is kept as ``system``,
  marked ``x_role: developer``;
- the object's other fields (task, reward, trial…) stay under the session's
  ``source.record``, and a string ``model`` is the session's model.

The fingerprint is the conversation's object, its keys sorted, so the same conversation
becomes the same session wherever in a file it is and however its keys are ordered.
"""

from __future__ import annotations

import orjson

from .reader import Conversation, Format, Head, ImportProblem
from .records import documents, fingerprint

NAME = "openai-chat"


def detects(head: Head) -> bool:
    """The file is one JSON document, or line 1 holds a messages list."""
    return head.document or "messages" in head.first or "traj" in head.first


def read(data: bytes) -> list[Conversation]:
    """One conversation per messages list, in the order of the file."""
    records = documents(data)
    if records and isinstance(records[0], dict) and "role" in records[0]:
        records = [{"messages": records}]  # one bare messages list
    conversations = []
    for number, record in enumerate(records, 1):
        messages = (
            record.get("messages") or record.get("traj") if isinstance(record, dict) else None
        )
        if not isinstance(messages, list):
            raise ImportProblem(f"conversation {number}: expected a 'messages' (or 'traj') list")
        events = []
        for index, message in enumerate(messages):
            if not isinstance(message, dict) or "role" not in message:
                raise ImportProblem(
                    f"conversation {number}, message {index + 1}: expected an object with a role"
                )
            event = {"type": "message", **{k: v for k, v in message.items() if v is not None}}
            if message.get("role") == "assistant" and message.get("content") is None:
                event["content"] = None
            if message.get("role") == "developer":  # the newer name of the system role
                event["role"], event["x_role"] = "system", "developer"
            events.append(event)
        extra = {k: v for k, v in record.items() if k not in ("messages", "traj")}
        conversations.append(
            Conversation(
                fingerprint=fingerprint(NAME, orjson.dumps(record, option=orjson.OPT_SORT_KEYS)),
                events=events,
                model=record.get("model") if isinstance(record.get("model"), str) else None,
                source={"tool": NAME, **({"record": extra} if extra else {})},
            )
        )
    return conversations


FORMAT = Format(NAME, "OpenAI chat-completions messages lists (JSON or JSON Lines)", detects, read)
