"""Turns of a session as the learner sees them: where one ends, which events it holds,
and how it is shown to the model.

Pure functions over event dicts, no I/O. A turn ends with an assistant message with text
and no tool calls; a rendered turn over its budget is cut in the middle.
"""

from __future__ import annotations

from typing import Any

from ..errors import Invalid
from ..storage.summary import first_text

TOOL_RESULT_CHARS = 1000  # a tool result is context: this much of each


def completes_turn(event: dict[str, Any]) -> bool:
    """An assistant message with text and no tool calls ends a turn."""
    return (
        event.get("type") == "message"
        and event.get("role") == "assistant"
        and not event.get("tool_calls")
        and bool((first_text(event.get("content")) or "").strip())
    )


def turn_of(
    lines: list[dict[str, Any]], from_seq: int | None, to_seq: int
) -> tuple[list[dict[str, Any]], int, int]:
    """The events of the turn that ends at ``to_seq`` (after the previous completed turn),
    or of ``from_seq``..``to_seq``; with the seq range they span."""
    events = [
        line for line in lines if isinstance(line.get("seq"), int) and 0 < line["seq"] <= to_seq
    ]
    if from_seq is not None:
        events = [e for e in events if e["seq"] >= from_seq]
    else:
        start = 0
        for i, event in enumerate(events[:-1]):
            if completes_turn(event):
                start = i + 1
        events = events[start:]
    if not events:
        raise Invalid(f"no events up to seq {to_seq}")
    return events, events[0]["seq"], events[-1]["seq"]


def render_turn(events: list[dict[str, Any]], budget: int) -> str:
    """A turn as text for the model: messages, tool calls and (shortened) results; cut
    in the middle when it is over ``budget`` characters."""
    parts: list[str] = []
    for event in events:
        kind = event.get("type")
        if kind == "summary":
            parts.append(f"[summary of earlier turns] {event.get('content', '')}")
            continue
        if kind != "message":
            continue
        role = event.get("role")
        text = _text_of(event.get("content"))
        if role == "tool":
            parts.append(f"[tool result {event.get('tool_call_id')}] {text[:TOOL_RESULT_CHARS]}")
            continue
        if text:
            parts.append(f"{str(role).capitalize()}: {text}")
        for call in event.get("tool_calls") or []:
            function = call.get("function") or {}
            arguments = str(function.get("arguments", ""))[:TOOL_RESULT_CHARS]
            parts.append(f"[tool call {call.get('id')}] {function.get('name')}({arguments})")
    text = "\n".join(parts)
    if len(text) <= budget:
        return text
    half = (budget - 40) // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half} characters left out …]\n{text[-half:]}"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    if isinstance(content, dict):  # a blob reference that was not put back
        return str(content.get("preview", ""))
    return ""
