"""Redactions worked out ahead: an import's reading process redacts what the index will
make of the events it read, and the daemon's index takes those instead of redacting
them again; what it is given is what it would have found."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from aster_persist.importers.pool import SMALLEST
from aster_persist.index.text import docs_of, redacted_ahead
from aster_persist.secrets import redact
from aster_persist.secrets.redact import Prescanned, redactions

from ..conftest import FIXTURES, make_client

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
TEXTS = [f"use the token {TOKEN} for the deploy", "nothing secret here", "password = hunter2"]


def test_what_is_taken_is_what_redacting_gives_once_for_each_time_it_was_added() -> None:
    ahead = Prescanned()
    ahead.add(redactions(TEXTS))
    ahead.add(redactions(TEXTS[:1]))  # a text two files hold: taken twice
    assert [ahead.take(text) for text in TEXTS] == [redact.redact_text(t) for t in TEXTS]
    assert ahead.take(TEXTS[0]) == ("use the token [redacted: github-token] for the deploy", 1)
    assert [ahead.take(text) for text in TEXTS] == [None] * 3
    assert len(ahead) == 0


def test_the_oldest_go_past_the_most_kept() -> None:
    ahead = Prescanned(most=2)
    for text in TEXTS:
        ahead.add(redactions([text]))
    assert ahead.take(TEXTS[0]) is None and len(ahead) == 2
    assert ahead.take(TEXTS[2]) == redact.redact_text(TEXTS[2])


def test_the_documents_of_events_are_redacted_ahead_as_the_index_redacts_them() -> None:
    events = [
        {"type": "message", "role": "user", "content": TEXTS[0]},
        {
            "type": "message",
            "role": "assistant",
            "content": "x" * 70_000 + TEXTS[2],  # past the cut: the cut text is what counts
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "sh", "arguments": TEXTS[2]}}
            ],
        },
        {"type": "title", "title": TEXTS[1]},
    ]
    ahead = Prescanned()
    ahead.add(redacted_ahead(events))
    asked: list[str] = []

    def taken(text: str) -> tuple[str, int]:
        got = ahead.take(text)
        asked.append(text)
        assert got is not None, text[:80]
        return got

    numbered = [{**event, "seq": n} for n, event in enumerate(events, 1)]
    assert [docs_of(e, redact=taken) for e in numbered] == [docs_of(e) for e in numbered]
    assert len(asked) == 4 and len(ahead) == 0


def test_an_import_read_on_another_process_is_indexed_with_what_it_redacted(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = (
        FIXTURES
        / "claude-code"
        / "claude-code-viewer"
        / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    )
    data = source.read_bytes()
    last = orjson.loads(data.splitlines()[-1])
    said = {
        **{k: last[k] for k in ("sessionId", "cwd", "version", "timestamp") if k in last},
        "type": "user",
        "uuid": "5e55a0e0-0000-4000-8000-0000000000aa",
        "parentUuid": last.get("uuid"),
        "message": {"role": "user", "content": f"zebrafinch deploy: {TEXTS[0]}"},
    }
    data += orjson.dumps(said) + b"\n"
    assert len(data) >= SMALLEST  # read on a reading process
    here: list[str] = []
    redacting = redact._redact
    monkeypatch.setattr(redact, "_redact", lambda text: (here.append(text), redacting(text))[1])
    with make_client(home) as client:
        r = client.post("/v1/sessions/import", content=data)
        assert r.status_code == 201, r.text
        [session] = client.get("/v1/sessions").json()["items"]  # a read: indexed first
        # this process redacted next to none of what it indexed: the reading process had
        assert session["events"] > 100 and len(here) < 10, here
        hits = client.get("/v1/search", params={"q": "zebrafinch"}).json()["items"]
        assert len(hits) == 1
        assert TOKEN not in hits[0]["snippet"] and "[redacted: github-token]" in hits[0]["snippet"]
