"""Turns of a session as the learner sees them: where one ends, which events it holds,
and how it is shown to the model.

Pure functions over event dicts, no I/O. A turn ends with an assistant message with text
and no tool calls; a rendered turn over its budget is cut in the middle.
"""

from __future__ import annotations

from typing import Any

from ..errors import Invalid
from ..schemas.rendering import read_event, unretracted
from ..secrets.redact import redact_text
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
        line
        for line in unretracted(lines)
        if isinstance(line.get("seq"), int) and 0 < line["seq"] <= to_seq
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
    in the middle when it is over ``budget`` characters. A secret in it is never sent:
    each is redacted (``[redacted: <kind>]``) before anything is cut."""
    parts: list[str] = []
    for event in map(read_event, events):
        said = redact_text(event.text)[0] if event.text else event.text
        if event.kind == "summary":
            parts.append(f"[summary of earlier turns] {said}")
            continue
        if event.kind == "reasoning":
            continue  # the model's thinking: what it concluded is in its reply
        if event.kind != "message":
            continue
        if event.role == "tool":
            result = said[:TOOL_RESULT_CHARS]
            parts.append(f"[tool result {event.tool_call_id}] {result}")
            continue
        if said:
            parts.append(f"{str(event.role).capitalize()}: {said}")
        for call in event.calls:
            arguments = redact_text(call.arguments)[0][:TOOL_RESULT_CHARS]
            parts.append(f"[tool call {call.id}] {call.name}({arguments})")
    text = "\n".join(parts)
    if len(text) <= budget:
        return text
    half = (budget - 40) // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half} characters left out …]\n{text[-half:]}"
