"""Reading what a crash may leave: torn tails are dropped, bad middle lines are damage."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from aster_persist.storage.jsonl import parse

GOOD = b"".join(
    orjson.dumps({"type": "message", "seq": i, "content": f"line {i}"}) + b"\n" for i in range(5)
)


def test_whole_file() -> None:
    parsed = parse(GOOD)
    assert [line["seq"] for line in parsed.lines] == [0, 1, 2, 3, 4]
    assert parsed.torn is None and parsed.bad == [] and parsed.good_end == len(GOOD)


def test_missing_final_newline_is_torn() -> None:
    parsed = parse(GOOD + b'{"type":"mess')
    assert len(parsed.lines) == 5 and parsed.torn == (len(GOOD), len(GOOD) + 13)


def test_complete_but_invalid_last_line_is_torn() -> None:
    parsed = parse(GOOD + b"\x00\x00\x00\n")
    assert len(parsed.lines) == 5 and parsed.torn == (len(GOOD), len(GOOD) + 4) and parsed.bad == []


def test_bad_middle_line_is_damage_not_truncation() -> None:
    data = GOOD + b"garbage\n" + GOOD
    parsed = parse(data)
    assert parsed.bad == [6] and len(parsed.lines) == 10 and parsed.torn is None
    assert parsed.good_end == len(data)


def test_non_object_json_is_bad() -> None:
    assert parse(b"[1,2]\n" + GOOD).bad == [1]


@settings(max_examples=300)
@given(st.integers(min_value=0, max_value=len(GOOD)))
def test_any_truncation_keeps_every_whole_line(cut: int) -> None:
    parsed = parse(GOOD[:cut])
    whole = GOOD[:cut].count(b"\n")
    assert len(parsed.lines) == whole and parsed.bad == []
    assert parsed.good_end == GOOD[:cut].rfind(b"\n") + 1
    assert (parsed.torn is None) == (cut == parsed.good_end)


@settings(max_examples=300)
@given(st.integers(min_value=0, max_value=len(GOOD) - 1), st.integers(min_value=0, max_value=255))
def test_any_byte_flip_is_reported_never_raises(position: int, value: int) -> None:
    data = bytearray(GOOD)
    data[position] = value
    parsed = parse(bytes(data))
    lost = len(parsed.bad) + (1 if parsed.torn else 0)
    assert len(parsed.lines) + lost >= 4
    assert parsed.good_end <= len(data)
