"""How an event reads: one content-to-text function, and one reading of every event
kind that the CLI, MCP and the learner format (schemas/rendering.py)."""

from __future__ import annotations

from typing import Any

import pytest

from aster_persist.cli.sessions import render_event
from aster_persist.learning.turns import render_turn
from aster_persist.mcp.tools import line_of as _line
from aster_persist.schemas.events import EVENT_TYPES, PART_TYPES, ROLES
from aster_persist.schemas.rendering import content_text, read_event, readable, text_parts

BLOB = {"content_ref": "sha256:ab", "bytes": 90000, "preview": "the start of it"}
PARTS = [
    {"type": "text", "text": "look at this"},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    {"type": "text", "text": "and this"},
]


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ("plain", "plain"),
        (PARTS, "look at this\nand this"),
        (BLOB, "the start of it"),
        (None, ""),
        (42, ""),
    ],
)
def test_the_text_of_every_shape_of_content(content: Any, text: str) -> None:
    assert content_text(content) == text


def test_a_title_never_comes_from_a_blob_preview() -> None:
    assert text_parts(BLOB, previews=False) == []


def test_a_person_is_told_what_is_not_text() -> None:
    assert readable(PARTS) == "look at this\n[image_url]\nand this"
    assert readable(BLOB) == "[90000 bytes stored as a blob] the start of it"


EVENTS: list[dict[str, Any]] = [
    {"type": "message", "role": "user", "content": PARTS, "seq": 1},
    {
        "type": "message",
        "role": "assistant",
        "content": None,
        "seq": 2,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}
        ],
    },
    {"type": "message", "role": "tool", "tool_call_id": "c1", "content": "ok", "seq": 3},
    {"type": "summary", "content": "so far", "through_seq": 3, "seq": 4},
    {"type": "eviction", "tool_call_id": "c1", "stub": "gone", "seq": 5},
    {"type": "title", "title": "A title", "seq": 6},
    {"type": "reasoning", "content": "weighing it", "seq": 7},
    {"type": "retraction", "target_seq": 6, "reason": "popped", "seq": 8},
]


def test_every_event_kind_is_read_and_every_rendering_shows_it() -> None:
    readings = [read_event(e) for e in EVENTS]
    assert {r.kind for r in readings} == set(EVENT_TYPES)
    assert readings[1].calls[0].name == "run" and readings[2].tool_call_id == "c1"
    assert readings[3].through_seq == 3 and readings[4].text == "gone"
    cli = ["\n".join(render_event(e)) for e in EVENTS]
    mcp = [_line(e) for e in EVENTS]
    for shown in (cli, mcp):
        assert "[image_url]" in shown[0] and "run" in shown[1] and "ok" in shown[2]
        assert "so far" in shown[3] and "c1" in shown[4] and "A title" in shown[5]
        assert "thinking" in shown[6] and "weighing it" in shown[6]
        assert "took back #6" in shown[7]
    assert readings[7].target_seq == 6 and readings[7].text == "popped"
    prompt = render_turn(EVENTS, 10_000)
    assert "weighing it" not in prompt  # what the model concluded is in its reply
    assert "User: look at this\n[image_url]\nand this" in prompt
    assert "[tool call c1] run({})" in prompt and "[tool result c1] ok" in prompt


def test_the_lists_of_kinds_are_read_from_the_unions() -> None:
    assert EVENT_TYPES == ("message", "summary", "eviction", "title", "reasoning", "retraction")
    assert ROLES == ("user", "assistant", "tool", "system")
    assert PART_TYPES == ("text", "image_url", "input_audio", "file", "refusal")
