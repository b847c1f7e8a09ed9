"""``codex``: OpenAI Codex CLI rollouts, ``~/.codex/sessions/**/rollout-*.jsonl``.

One JSON record per line, each ``{timestamp, type, payload}``: ``session_meta``,
``turn_context``, ``response_item`` and ``event_msg``. The reader guarantees:

- ``session_meta`` is the header: its time (else the first event's), its working
  folder, and its ``id``, ``cli_version``, ``originator`` and ``model_provider`` under
  the session's source; the model is the first ``turn_context``'s;
- ``message`` items become messages (a role this store does not know becomes
  ``system``, the original kept as ``x_role``);
- ``function_call`` / ``custom_tool_call`` items and their outputs become assistant
  messages with tool calls and ``tool`` messages linked by ``call_id``; calls made
  together (no message or output between them) are one assistant turn;
- reasoning (often encrypted), web searches, turn contexts and events (token counts,
  command ends, agent messages…) ride along under ``x_source.records``.

The fingerprint is the file's bytes, so the same rollout always becomes the same session.
"""

from __future__ import annotations

from typing import Any

import orjson

from .reader import Conversation, Format, Head
from .records import Events, by_source, fingerprint, json_lines, message
from .times import timestamp

NAME = "codex"

_RECORD_TYPES = ("session_meta", "response_item", "event_msg", "turn_context")
_ROLES = ("user", "assistant", "system")


def detects(head: Head) -> bool:
    """Line 1 is one of a rollout's record types."""
    return head.first.get("type") in _RECORD_TYPES


def read(data: bytes) -> list[Conversation]:
    """The one conversation a rollout holds."""
    records = json_lines(data)
    out = Events()
    meta: dict[str, Any] = {}
    model = None
    for record in records:
        kind = record.get("type")
        raw = record.get("payload")
        payload: dict[str, Any] = raw if isinstance(raw, dict) else {}
        ts = timestamp(record.get("timestamp"))
        item = payload.get("type")
        if kind == "session_meta":
            meta = payload
            continue
        if kind == "turn_context":
            model = model or payload.get("model")
            out.keep(record)
            continue
        if kind != "response_item":
            out.keep(record)  # event_msg: token counts, command ends, agent messages…
            continue
        if item == "message":
            role = payload.get("role")
            text = "\n".join(
                str(part.get("text", ""))
                for part in payload.get("content") or []
                if isinstance(part, dict)
            )
            out.add(message(role, text, ts, _ROLES))
        elif item in ("function_call", "custom_tool_call"):
            _add_call(out, payload, item, ts)
        elif item in ("function_call_output", "custom_tool_call_output"):
            output = payload.get("output")
            out.add(
                {
                    "type": "message",
                    "role": "tool",
                    "tool_call_id": str(payload.get("call_id") or "unknown"),
                    "content": output if isinstance(output, str) else orjson.dumps(output).decode(),
                    "ts": ts,
                }
            )
        else:
            out.keep(record)  # reasoning (often encrypted), web searches…
    conversation = Conversation(
        fingerprint=fingerprint(NAME, data),
        events=out.done(),
        created_at=timestamp(meta.get("timestamp"))
        or (out.events[0].get("ts") if out.events else None),
        cwd=meta.get("cwd"),
        model=model,
        source={
            "tool": NAME,
            **{
                k: meta[k]
                for k in ("id", "cli_version", "originator", "model_provider")
                if k in meta
            },
        },
    )
    if isinstance(meta.get("id"), str) and meta["id"]:
        by_source(conversation, NAME, meta["id"])
    return [conversation]


def _add_call(out: Events, payload: dict[str, Any], item: str, ts: str | None) -> None:
    """A tool call: a turn of its own, or one more on the turn of calls just before it."""
    arguments = payload.get("arguments")
    if item == "custom_tool_call":
        arguments = orjson.dumps({"input": payload.get("input")}).decode()
    call = {
        "id": str(payload.get("call_id") or "unknown"),
        "type": "function",
        "function": {
            "name": str(payload.get("name") or ""),
            "arguments": str(arguments or ""),
        },
    }
    previous = out.events[-1] if out.events else None
    if (
        previous is not None
        and previous.get("role") == "assistant"
        and previous.get("content") is None
        and previous.get("tool_calls")
    ):
        previous["tool_calls"].append(call)  # calls made in parallel: one turn
        if out.pending:  # reasoning between them stays with the turn
            previous.setdefault("x_source", {}).setdefault("records", []).extend(out.pending)
            out.pending = []
        return
    out.add(
        {
            "type": "message",
            "role": "assistant",
            "content": None,
            "tool_calls": [call],
            "ts": ts,
            "x_source": {"type": item},
        }
    )


FORMAT = Format(NAME, "Codex CLI rollouts (~/.codex/sessions)", detects, read)
