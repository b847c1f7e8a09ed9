"""No hand edit is lost unseen: while the API rewrites memory files, what an editor saves
in between is merged, journaled first, or the write is refused (412 for ``If-Match``).

Two ways in: a real editor racing a real daemon (each saved line must end up in the
file or in a journal entry's content), and an edit landed at the worst moment, between
the daemon's read of the file and its replace, so each outcome is seen every time.
"""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient

from aster_persist.storage import fs

from ..conftest import Daemon
from .scale import record, rounds


def save_like_an_editor(path: Path, line: str) -> None:
    """Read, add a line, write a temp file and rename it over (what most editors do)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        text = ""
    tmp = path.with_name(f".{path.name}.swp-{os.getpid()}")
    tmp.write_text(text + line + "\n")
    os.replace(tmp, path)


def append_like_a_shell(path: Path, line: str) -> None:
    with path.open("a") as handle:  # echo "..." >> ASTER.md
        handle.write(line + "\n")


def journal_texts(client: httpx.Client | TestClient) -> str:
    items: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 1000}
    while True:
        page = client.get("/v1/journal", params=params).json()
        items += page["items"]
        if not page.get("next_cursor"):
            break
        params["cursor"] = page["next_cursor"]
    return "\n".join(
        str((e.get("before") or {}).get("content", "")) for e in items if e.get("before")
    )


def test_an_editor_racing_the_api_loses_no_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    daemon = Daemon(home).start()
    core = home / "memory" / "ASTER.md"
    edits = rounds(150, 1500)
    saved: list[str] = []
    stop = threading.Event()

    def editor() -> None:
        rng = random.Random(7)
        for n in range(edits):
            if stop.is_set():
                break
            line = f"- hand line {n}"
            (save_like_an_editor if n % 2 else append_like_a_shell)(core, line)
            saved.append(line)
            time.sleep(rng.random() * 0.01)

    try:
        with httpx.Client(base_url=daemon.url, timeout=30) as client:
            notes: list[str] = []
            refused = 0
            thread = threading.Thread(target=editor)
            thread.start()
            n = 0
            while thread.is_alive() and n < edits * 4:
                note = f"api note {n}"
                r = client.post("/v1/memory/core/notes", json={"note": note})
                n += 1
                if r.status_code == 409:  # edited by hand at every try: refused, not kept
                    assert r.json()["code"] == "conflict", r.text
                    refused += 1
                    continue
                assert r.status_code in (200, 201), r.text
                notes.append(note)
            stop.set()
            thread.join()
            time.sleep(0.5)  # the watcher's last batch
            r = client.post("/v1/memory/core/notes", json={"note": "the last note"})
            assert r.status_code == 201, r.text
            final = core.read_text()
            seen = final + "\n" + journal_texts(client)
    finally:
        daemon.kill()
    lost_lines = [line for line in saved if line not in seen]
    lost_notes = [note for note in notes if note not in seen]
    assert not lost_lines and not lost_notes, (lost_lines[:5], lost_notes[:5])
    record(
        "hand edits of ASTER.md racing API notes",
        rounds=len(saved) + len(notes),
        faults=len(saved),
        checked=len(saved) + len(notes),
        lost=len(lost_lines) + len(lost_notes),
        figure=f"{len(saved)} editor saves against {len(notes)} API notes "
        f"({refused} more refused, 409): {len(lost_lines) + len(lost_notes)} lines lost",
    )


class EditAtTheWorstMoment:
    """Saves ``line`` by hand into ``path`` right after the daemon wrote its new bytes
    beside the file and before it swaps them in (once)."""

    def __init__(self, path: Path, line: str) -> None:
        self.path, self.line, self.done = path, line, False
        self.real = fs.write_temp

    def __call__(self, target: Path | str, data: bytes, **kw: Any) -> str:
        tmp = self.real(target, data, **kw)
        if not self.done and os.fspath(target) == os.fspath(self.path):
            self.done = True
            save_like_an_editor(self.path, self.line)
        return tmp


def test_an_edit_between_read_and_replace_is_merged_refused_or_journaled(
    client: TestClient, home: Path, monkeypatch: Any
) -> None:
    core = home / "memory" / "ASTER.md"
    r = client.put("/v1/memory/core", json={"content": "- first\n"})
    assert r.status_code == 200, r.text
    etag = r.headers["etag"]

    # a note: the edit is kept and the note added to it
    monkeypatch.setattr(fs, "write_temp", EditAtTheWorstMoment(core, "- by hand 1"))
    r = client.post("/v1/memory/core/notes", json={"note": "from the api"})
    assert r.status_code == 201, r.text
    assert core.read_text() == "- first\n- by hand 1\n- from the api\n"

    # If-Match of a version the editor has since replaced: 412, the edit stays
    monkeypatch.setattr(fs, "write_temp", EditAtTheWorstMoment(core, "- by hand 2"))
    etag = client.get("/v1/memory/core").headers["etag"]
    r = client.put("/v1/memory/core", json={"content": "- replaced\n"}, headers={"If-Match": etag})
    assert r.status_code == 412, r.text
    assert core.read_text().endswith("- by hand 2\n")

    # a whole replace without If-Match: the edit it overwrites is journaled first
    monkeypatch.setattr(fs, "write_temp", EditAtTheWorstMoment(core, "- by hand 3"))
    r = client.put("/v1/memory/core", json={"content": "- replaced\n"})
    assert r.status_code == 200, r.text
    assert core.read_text() == "- replaced\n"
    entries = client.get("/v1/journal", params={"limit": 1000}).json()["items"]
    hand = [e for e in entries if e["actor"] == "watcher"]
    assert any("- by hand 3" in str((e.get("before") or {}).get("content")) for e in entries)
    assert len(hand) >= 3
    # the order is the one a revert needs: each entry's "before" is what it replaced
    last = entries[-1]
    assert "- by hand 3" in last["before"]["content"]

    # a block: PATCH keeps the hand edit of its body and sets the key on it
    r = client.post("/v1/memory/blocks", json={"name": "port", "content": "Port 5433."})
    assert r.status_code == 201, r.text
    block = home / "memory" / "port.md"
    monkeypatch.setattr(fs, "write_temp", EditAtTheWorstMoment(block, "Also on 5434."))
    r = client.patch("/v1/memory/blocks/port", json={"importance": 0.9})
    assert r.status_code == 200, r.text
    text = block.read_text()
    assert "Also on 5434." in text and "importance: 0.9" in text
