"""An integer past 64 bits inside an imported record is refused the way an append
refuses one (orjson would read it as a float, and the line stored would not say what
the source said): a 422 naming the line, nothing written. Every format, JSON Lines and
one-document files alike; what fits in 64 bits is kept exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ..conftest import CLAUDE_SMALL, snapshot

FIXTURES = Path(__file__).parents[1] / "fixtures"
CODEX = sorted((FIXTURES / "codex").rglob("*.jsonl"))[0]
TAU = FIXTURES / "openai-chat" / "tau-bench" / "gpt-4o-airline.json"
CHATGPT = sorted((FIXTURES / "chatgpt").rglob("*.json"))[0]
BIG = 123456789012345678901234567890


def with_big_line(path: Path, line: int, value: int) -> bytes:
    """A JSON Lines file with ``value`` put into the record on ``line``."""
    lines = path.read_bytes().splitlines(keepends=True)
    record = json.loads(lines[line - 1])
    record["x_count"] = value
    lines[line - 1] = json.dumps(record).encode() + b"\n"
    return b"".join(lines)


def with_big_document(path: Path, value: int) -> tuple[bytes, int]:
    """A one-document file, indented, with ``value`` in its first record, and the line
    it lands on."""
    document = json.loads(path.read_bytes())
    first = document[0] if isinstance(document, list) else document
    first["x_count"] = value
    text = json.dumps(document, indent=1)
    return text.encode(), text[: text.index(str(value))].count("\n") + 1


@pytest.mark.parametrize(
    "source,line", [(CLAUDE_SMALL, 7), (CODEX, 3)], ids=["claude-code", "codex"]
)
def test_a_line_holding_one_is_refused_by_its_number(
    client: TestClient, home: Path, source: Path, line: int
) -> None:
    before = snapshot(home)
    r = client.post("/v1/sessions/import", content=with_big_line(source, line, BIG))
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert f"line {line}: the integer {BIG} does not fit in 64 bits" in r.json()["detail"]
    assert snapshot(home) == before  # nothing written, nothing journaled


@pytest.mark.parametrize(
    "source,params",
    [(TAU, {"repo_root": "/srv/airline"}), (CHATGPT, {"repo_root": "/srv/chats"})],
    ids=["openai-chat", "chatgpt"],
)
def test_a_document_holding_one_is_refused_naming_its_line(
    client: TestClient, home: Path, source: Path, params: dict[str, str]
) -> None:
    data, line = with_big_document(source, -BIG)
    before = snapshot(home)
    r = client.post("/v1/sessions/import", content=data, params=params)
    assert r.status_code == 422, r.text
    assert f"line {line}: the integer -{BIG} does not fit in 64 bits" in r.json()["detail"]
    assert snapshot(home) == before


def test_what_fits_in_64_bits_is_kept_exactly(client: TestClient) -> None:
    """The largest unsigned and the smallest signed 64-bit integers, and long digit runs
    inside strings, are not refused, and read back as they were sent (an export of this
    store keeps an event's own fields verbatim)."""
    sid = client.post("/v1/sessions", json={"repo_root": "/srv/numbers"}).json()["id"]
    turn = {"type": "message", "role": "user", "content": "count"}
    assert client.post(f"/v1/sessions/{sid}/events", json=turn).status_code == 201
    lines = client.get(f"/v1/sessions/{sid}/export").content.splitlines(keepends=True)
    event = json.loads(lines[1])
    event |= {"x_high": 2**64 - 1, "x_low": -(2**63), "x_text": "9" * 40}
    lines[1] = json.dumps(event).encode() + b"\n"
    assert client.delete(f"/v1/sessions/{sid}", params={"purge": "true"}).status_code == 204
    r = client.post("/v1/sessions/import", content=b"".join(lines))
    assert r.status_code == 201, r.text
    raw = client.get(f"/v1/sessions/{sid}/export").content
    assert b'"x_high":18446744073709551615' in raw and b'"x_low":-9223372036854775808' in raw
    assert b"9" * 40 in raw
