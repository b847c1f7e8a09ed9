"""No secret is kept in memory, and ordinary notes are not refused: every secret form of
the corpus (every kind, several forms each) is refused on the write path with its kind,
and at most 1% of the ordinary technical notes are refused.

The corpora are in ``corpus/``: ``secret_forms.txt`` (each secret cut by ¦, so the
repository holds none) and ``ordinary_notes.md`` (notes as agents keep them, many of
them about passwords, tokens and keys without holding one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from .scale import record

CORPUS = Path(__file__).parent / "corpus"


def secret_forms() -> list[tuple[str, str]]:
    """(kind, text) for every case of the positive corpus."""
    cases = []
    for line in (CORPUS / "secret_forms.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            kind, text = line.split("\t", 1)
            cases.append((kind, text.replace("¦", "").replace("⏎", "\n")))
    return cases


def ordinary_notes() -> list[str]:
    text = (CORPUS / "ordinary_notes.md").read_text()
    return [note for note in text.split("\n%%\n")[1:] if note.strip()]


def echoed(text: str, problem: dict[str, Any], reply: str) -> list[str]:
    """Pieces of ``text`` from each place the problem names to the end of its line that
    the reply repeats (a refusal names kind and place, never the secret)."""
    lines = text.splitlines()
    pieces = [
        piece
        for error in problem.get("errors") or []
        for piece in lines[error["line"] - 1][error["column"] - 1 :].split()
    ]
    kinds = " ".join(str(e["kind"]).lower() for e in problem.get("errors") or [])
    return [p for p in pieces if len(p) >= 6 and p in reply and p.lower() not in kinds]


def test_every_secret_form_is_refused_and_ordinary_notes_are_kept(
    client: TestClient, home: Path
) -> None:
    forms, notes = secret_forms(), ordinary_notes()
    kinds = {kind for kind, _ in forms}
    assert len(notes) >= 200 and len(kinds) >= 25 and len(forms) >= 100

    missed = []
    for n, (kind, text) in enumerate(forms):
        r = client.post("/v1/memory/blocks", json={"name": f"secret-{n}", "content": text})
        problem = r.json()
        found = {e["kind"] for e in problem.get("errors") or []}
        if r.status_code != 422 or problem.get("code") != "secret_detected" or kind not in found:
            missed.append((kind, r.status_code, sorted(found)))
        assert not echoed(text, problem, r.text), (kind, r.text)
    assert missed == []
    assert not list((home / "memory").rglob("secret-*.md"))

    refused = []
    for n, note in enumerate(notes):
        r = client.post("/v1/memory/blocks", json={"name": f"note-{n}", "content": note})
        if r.status_code == 422 and r.json()["code"] == "secret_detected":
            refused.append(note[:80])
        else:
            assert r.status_code in (200, 201), r.text
    rate = len(refused) / len(notes)
    assert rate <= 0.01, refused

    record(
        "secrets: every form refused on the write path, ordinary notes kept",
        rounds=len(forms) + len(notes),
        faults=len(forms),
        checked=len(forms) + len(notes),
        lost=len(missed),
        figure=f"{len(forms) - len(missed)} of {len(forms)} secret forms caught across "
        f"{len(kinds)} kinds; false refusals {len(refused)} of {len(notes)} notes "
        f"({rate:.1%})",
    )
