"""The native reader on this store's own exports of the real fixtures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aster_persist.importers import ImportProblem, detect, native, read

from ..conftest import FakeClock, make_client, user

FIXTURES = Path(__file__).parents[1] / "fixtures"
CODEX = next((FIXTURES / "codex").rglob("rollout-*.jsonl"))
CLAUDE = FIXTURES / "claude-code" / "spotter" / "tool_heavy.jsonl"


def export_of(home: Path, clock: FakeClock, path: Path) -> tuple[str, bytes]:
    """A fixture imported by the real app, one keyed append made, then exported."""
    with make_client(home, clock) as client:
        r = client.post("/v1/sessions/import", content=path.read_bytes())
        assert r.status_code == 201, r.text
        sid = r.json()["sessions"][0]["id"]
        clock.advance(seconds=5)
        client.post(
            f"/v1/sessions/{sid}/events",
            json=[user("and now?"), user("still there?")],
            headers={"Idempotency-Key": "turn-x"},
        ).raise_for_status()
        return sid, client.get(f"/v1/sessions/{sid}/export").content


@pytest.mark.parametrize("path", [CODEX, CLAUDE], ids=["codex", "claude-code"])
def test_an_export_reads_back_as_the_session_it_was(
    home: Path, clock: FakeClock, path: Path
) -> None:
    sid, data = export_of(home, clock, path)
    assert detect(data) == native.NAME == native.FORMAT.name
    found, [one] = read(data)
    assert found == "native"
    assert one.id() == one.session_id == sid
    assert one.fingerprint == f"native:{sid}"
    header, *lines = [json.loads(line) for line in data.splitlines()]
    assert (one.created_at, one.cwd, one.model) == (
        header["created_at"],
        header["cwd"],
        header.get("model"),
    )
    assert one.source["repo_root"] == header["repo_root"]
    assert one.source["x_import"] == header["x_import"]  # unknown header fields travel
    server = ("seq", "idempotency_key", "batch_size")
    assert one.events == [{k: v for k, v in e.items() if k not in server} for e in lines]
    assert one.keys == [e.get("idempotency_key") for e in lines]
    assert one.keys[-2:] == ["turn-x", "turn-x"]


def test_times_come_back_as_exported(home: Path, clock: FakeClock) -> None:
    _sid, data = export_of(home, clock, CODEX)
    _found, [one] = read(data)
    lines = [json.loads(line) for line in data.splitlines()[1:]]
    assert [e["ts"] for e in one.events] == [e["ts"] for e in lines]
    assert one.events[0]["ts"] == "2026-05-11T08:27:17.493Z"  # the rollout's, not the clock's
    assert one.events[-1]["ts"] == "2026-01-02T03:04:10.678Z"  # the append's: the clock's


def test_a_file_named_native_must_start_with_a_session_header() -> None:
    with pytest.raises(ImportProblem, match="starts with its session header"):
        read(CLAUDE.read_bytes(), "native")


def test_a_header_alone_is_an_empty_session(home: Path, clock: FakeClock) -> None:
    _sid, data = export_of(home, clock, CLAUDE)
    header: dict[str, Any] = json.loads(data.splitlines()[0])
    _found, [one] = read(json.dumps(header).encode() + b"\n")
    assert one.events == [] and one.keys == [] and one.id() == header["id"]
