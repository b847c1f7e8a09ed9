"""Claude Code writes one assistant turn over several records (the same message id, one
record a content block). A file read while a turn was half written (a growth import, or
following a live file, which reads wherever the writer stopped) stored part of it; the
read that meets the rest completes the turn: the part is taken back and the whole turn
written, in one append. Whatever the cuts, the session reads as one import of the whole
file reads: every turn once, whole."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest

from aster_persist.schemas.rendering import unretracted

from ..conftest import CLAUDE_SMALL, make_client

RECORDS = CLAUDE_SMALL.read_bytes().splitlines(keepends=True)


def split_cuts() -> list[int]:
    """Each place between two records of one assistant turn (same message id)."""
    cuts, previous = [], None
    for n, line in enumerate(RECORDS):
        record = orjson.loads(line)
        message = record.get("message")
        mid = (
            message.get("id")
            if record.get("type") == "assistant" and isinstance(message, dict)
            else None
        )
        if mid is not None and mid == previous:
            cuts.append(n)
        previous = mid
    return cuts


CUTS = split_cuts()


def visible(home: Path, parts: list[int]) -> tuple[list[dict[str, Any]], int]:
    """The turns a session shows after importing the file cut at each of ``parts`` in
    turn, then whole; and how many events it holds."""
    with make_client(home) as client:
        for end in [*parts, len(RECORDS)]:
            r = client.post("/v1/sessions/import", content=b"".join(RECORDS[:end]))
            assert r.status_code in (200, 201), r.text
        [session] = client.get("/v1/sessions").json()["items"]
        events = client.get(f"/v1/sessions/{session['id']}/events", params={"limit": 10_000})
        lines = events.json()["events"]
    shown = [
        {k: e.get(k) for k in ("type", "role", "content", "tool_calls", "reasoning", "usage")}
        | {"uuid": (e.get("x_source") or {}).get("uuid")}
        for e in unretracted(lines)
    ]
    return shown, len(lines)


def test_the_fixture_has_turns_written_over_several_records() -> None:
    assert len(CUTS) >= 5  # and one turn over more than two (a cut can fall twice in it)
    assert any(b - a == 1 for a, b in itertools.pairwise(CUTS))


@pytest.mark.parametrize("cut", CUTS)
def test_a_turn_cut_in_two_reads_once_and_whole(tmp_path: Path, cut: int) -> None:
    whole, count = visible(tmp_path / "whole", [])
    grown, held = visible(tmp_path / "grown", [cut])
    assert grown == whole
    assert held == count + 2  # the part stored first, and its retraction


def test_a_turn_cut_at_each_of_its_records_reads_once_and_whole(tmp_path: Path) -> None:
    """Read after every record: each read completes what the last one stored."""
    whole, _ = visible(tmp_path / "whole", [])
    every, _ = visible(tmp_path / "every", list(range(1, len(RECORDS))))
    assert every == whole


def test_the_same_file_again_adds_nothing(tmp_path: Path) -> None:
    cut = CUTS[0]
    first, held = visible(tmp_path / "home", [cut])
    again, held_again = visible(tmp_path / "home", [cut, len(RECORDS)])
    assert again == first and held_again == held
