"""Fuzzing the parsers with hypothesis: whatever the bytes, each one answers or refuses
with its own error (which the API turns into a 422) and never crashes; what it keeps
is what was written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aster_persist.errors import Invalid
from aster_persist.importers import FORMATS
from aster_persist.importers import read as read_import
from aster_persist.index.search import SCHEMA
from aster_persist.index.sqlite import sqlite3
from aster_persist.index.text import parse_query
from aster_persist.schemas import frontmatter
from aster_persist.schemas.validation import validate_events
from aster_persist.storage.jsonl import parse

from .scale import record, rounds

EXAMPLES = rounds(150, 3000)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIXTURE_LINES = [
    line
    for path in sorted(FIXTURES.rglob("*.jsonl"))
    for line in path.read_bytes().splitlines()[:40]
]
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)  # what JSON can carry
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@FUZZ
@given(
    st.lists(st.dictionaries(st.text(max_size=6), json_values, max_size=4), max_size=8),
    st.binary(max_size=60),
)
def test_jsonl_keeps_every_whole_line_and_nothing_else(
    lines: list[dict[str, Any]], tail: bytes
) -> None:
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    parsed = parse(data + tail.replace(b"\n", b" "))  # a torn last line, maybe
    assert parsed.lines[: len(lines)] == lines
    assert len(parsed.lines) <= len(lines) + 1
    assert parsed.good_end >= len(data) or parsed.good_end == len(data)
    if parsed.torn is not None:
        assert parsed.torn == (len(data), len(data) + len(tail))


@FUZZ
@given(st.binary(max_size=400))
def test_jsonl_never_raises_on_any_bytes(data: bytes) -> None:
    parsed = parse(data)
    assert all(isinstance(line, dict) for line in parsed.lines)
    assert 0 <= parsed.good_end <= len(data)


@FUZZ
@given(st.text(max_size=300))
def test_frontmatter_parses_or_says_why(text: str) -> None:
    try:
        doc = frontmatter.parse(text)
    except Invalid as exc:
        assert exc.detail
        return
    assert isinstance(doc.meta, dict)
    assert frontmatter.body_of(text) == doc.body


@FUZZ
@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True),
        st.none()
        | st.booleans()
        | st.integers()
        | st.text(max_size=30)
        | st.lists(st.text(max_size=10), max_size=3),
        max_size=5,
    ),
    st.text(max_size=200),
)
def test_frontmatter_round_trips(meta: dict[str, Any], body: str) -> None:
    doc = frontmatter.new_document(meta, body)
    again = frontmatter.parse(doc.render())
    expected = body if not body or body.endswith("\n") else body + "\n"  # files end in a newline
    assert again.meta == meta and again.body == expected


@FUZZ
@given(st.text(max_size=80))
def test_every_query_is_refused_clearly_or_runs_in_fts5(text: str) -> None:
    try:
        query = parse_query(text)
    except Invalid as exc:
        assert exc.detail
        return
    if query.match is None:
        return
    db = sqlite3.connect(":memory:")
    db.executescript(SCHEMA)
    db.execute("SELECT rowid FROM doc_text WHERE doc_text MATCH ?", (query.match,)).fetchall()


@FUZZ
@given(st.lists(json_values, max_size=4))
def test_events_validate_or_name_the_field(events: list[Any]) -> None:
    try:
        validate_events(events)
    except Invalid as exc:
        assert exc.detail


@FUZZ
@given(
    st.lists(st.sampled_from(FIXTURE_LINES), min_size=1, max_size=6),
    st.integers(min_value=0, max_value=400),
    st.binary(max_size=8),
    st.sampled_from(["auto", *FORMATS]),
)
def test_importers_read_or_refuse_damaged_transcripts(
    lines: list[bytes], cut: int, junk: bytes, format: str
) -> None:
    data = b"\n".join(lines) + b"\n"
    damaged = data[:cut] + junk + data[cut:] if cut < len(data) else data + junk
    for candidate in (data, damaged):
        try:
            _kind, conversations = read_import(candidate, format)
        except Invalid as exc:
            assert exc.detail
            continue
        for conversation in conversations:
            validate_events(conversation.events)


def test_the_fuzzing_is_recorded() -> None:
    record(
        "hypothesis over 7 parsers",
        rounds=EXAMPLES,
        faults=EXAMPLES * 7,
        checked=EXAMPLES * 7,
        lost=0,
    )
