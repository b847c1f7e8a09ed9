"""How an event reads: the text of a content, and one reading of each event kind.

``content_text`` is the one content-to-text function (search, the learner, titles);
``readable`` shows a content to a person, saying what is not text. ``read_event``
reads any event into a ``Reading``, and the three renderings made from it (the CLI's
lines, MCP's one line, the learner's prompt) only format it, so a new event kind is
read in one place. ``unretracted`` is the transcript every view reads: what a
retraction took back is left out. Pure functions, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def text_parts(content: Any, *, previews: bool = True) -> list[str]:
    """The texts of a content: a string; each text part's text; the preview of a large
    content kept in a blob (unless ``previews`` is False)."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, dict):
        preview = content.get("preview")
        return [str(preview)] if previews and preview else []
    if isinstance(content, list):
        return [
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
    return []


def content_text(content: Any) -> str:
    """The text of a message's content, whatever its shape (string, parts, blob)."""
    return "\n".join(text_parts(content))


def readable(content: Any) -> str:
    """A content as a person reads it: its text, with a mark for each part that is not
    text and for a large content kept in a blob."""
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", f"[{p.get('type')}]")) for p in content if isinstance(p, dict)
        )
    if isinstance(content, dict):  # a blob reference not put back
        return f"[{content.get('bytes')} bytes stored as a blob] {content.get('preview', '')}"
    return "" if content is None else str(content)


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Reading:
    """One event, read: what every rendering needs, whatever the event's kind."""

    seq: Any
    kind: str  # the event's type
    role: str | None = None  # a message's
    text: str = ""  # a message's content, a summary, a title, an eviction's stub
    calls: list[Call] = field(default_factory=list)
    name: str | None = None  # a message's author name, when it has one
    tool_call_id: str | None = None  # a tool message's call, or an eviction's target
    target_seq: Any = None  # an eviction's or a retraction's target, by seq
    through_seq: Any = None  # a summary's


def read_event(event: dict[str, Any]) -> Reading:
    seq, kind = event.get("seq", "?"), str(event.get("type"))
    if kind == "summary":
        return Reading(
            seq, kind, text=str(event.get("content", "")), through_seq=event.get("through_seq")
        )
    if kind == "eviction":
        return Reading(
            seq,
            kind,
            text=str(event.get("stub") or ""),
            tool_call_id=event.get("tool_call_id"),
            target_seq=event.get("target_seq"),
        )
    if kind == "title":
        return Reading(seq, kind, text=str(event.get("title")))
    if kind == "reasoning":
        return Reading(seq, kind, text=readable(event.get("content")))
    if kind == "retraction":
        return Reading(
            seq, kind, text=str(event.get("reason") or ""), target_seq=event.get("target_seq")
        )
    calls = []
    for call in event.get("tool_calls") or []:
        function = call.get("function") or {}
        calls.append(
            Call(str(call.get("id")), str(function.get("name")), str(function.get("arguments", "")))
        )
    return Reading(
        seq,
        kind,
        role=event.get("role"),
        text=readable(event.get("content")),
        calls=calls,
        name=event.get("name"),
        tool_call_id=event.get("tool_call_id"),
    )


def retracted(lines: list[dict[str, Any]]) -> set[int]:
    """The seqs that retractions among ``lines`` took back."""
    return {
        line["target_seq"]
        for line in lines
        if line.get("type") == "retraction" and isinstance(line.get("target_seq"), int)
    }


def unretracted(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``lines`` as every view reads them: without the events a retraction took back,
    nor the retractions themselves."""
    gone = retracted(lines)
    if not gone:
        return lines
    return [
        line for line in lines if line.get("type") != "retraction" and line.get("seq") not in gone
    ]
