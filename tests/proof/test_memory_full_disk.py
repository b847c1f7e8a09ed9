"""Everything on disk is in the journal, across full disks and crashes.

- A full disk (``ENOSPC``) at the 1st, 2nd, … nth write or sync of any memory write —
  the new file, its folder, the journal line — answers 507, never 500, and leaves every
  memory file and the journal exactly as they were: a change never lands without its
  journal line.
- A session synced but killed before its ``session.created`` line is journaled at the
  next start, and the client's retried create with the same id gets that session back.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from ..conftest import Daemon, FakeClock, make_client
from .scale import record

CALLS = ("write", "fsync", "fdatasync")


def full_disk(home: Path, n: int, seen: dict[str, int]) -> dict[str, Callable[..., Any]]:
    """``os.write``, ``os.fsync`` and ``os.fdatasync``, the nth call of them on a file of
    ``home`` failing with ENOSPC."""
    real = {name: getattr(os, name) for name in CALLS}
    prefix = os.path.realpath(home) + "/"

    def wrap(name: str) -> Callable[..., Any]:
        def call(fd: int, *args: Any) -> Any:
            try:
                target = os.readlink(f"/proc/self/fd/{fd}") + "/"
            except OSError:
                target = ""
            if target.startswith(prefix) and "/index/" not in target:
                seen["calls"] += 1
                if seen["calls"] == n:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real[name](fd, *args)

        return call

    return {name: wrap(name) for name in CALLS}


def state(home: Path) -> dict[str, bytes]:
    memory = {
        str(p.relative_to(home)): p.read_bytes()
        for p in (home / "memory").rglob("*")
        if p.is_file()
    }
    return memory | {"journal.jsonl": (home / "journal.jsonl").read_bytes()}


WRITES: list[tuple[str, Callable[[TestClient], httpx.Response]]] = [
    ("PUT core", lambda c: c.put("/v1/memory/core", json={"content": "- replaced\n"})),
    ("a note", lambda c: c.post("/v1/memory/core/notes", json={"note": "one more"})),
    (
        "a new block",
        lambda c: c.post("/v1/memory/blocks", json={"name": "new", "content": "A new block."}),
    ),
    (
        "a project block",
        lambda c: c.post(
            "/v1/memory/blocks",
            params={"repo_root": "/srv/elsewhere"},
            json={"name": "far", "content": "In a project folder not made yet."},
        ),
    ),
    ("PATCH a block", lambda c: c.patch("/v1/memory/blocks/port", json={"importance": 0.9})),
    ("archive a block", lambda c: c.post("/v1/memory/blocks/port/archive")),
    ("forget a block", lambda c: c.delete("/v1/memory/blocks/port")),
]


@pytest.mark.parametrize(("what", "write"), WRITES, ids=[w[0] for w in WRITES])
def test_a_full_disk_at_any_point_of_a_memory_write_is_507_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str, write: Any
) -> None:
    faults = 0
    for n in range(1, 40):
        home = tmp_path / f"home-{n}"
        with make_client(home, FakeClock()) as client:
            r = client.put("/v1/memory/core", json={"content": "- first\n"})
            assert r.status_code == 200, r.text
            r = client.post("/v1/memory/blocks", json={"name": "port", "content": "Port 5433."})
            assert r.status_code == 201, r.text
            before = state(home)
            seen = {"calls": 0}
            for name, call in full_disk(home, n, seen).items():
                monkeypatch.setattr(os, name, call)
            r = write(client)
            monkeypatch.undo()
            if seen["calls"] < n:  # the write made fewer calls than n: every point was tried
                assert r.status_code in (200, 201, 204), r.text
                break
            if r.is_success:  # failed after its journal line: the change stands, journaled
                journal = (home / "journal.jsonl").read_bytes()
                assert len(journal) > len(before["journal.jsonl"]), (n, r.text)
                continue
            faults += 1
            assert r.status_code == 507, (n, r.status_code, r.text)
            assert r.headers["content-type"].startswith("application/problem+json")
            assert r.json()["code"] == "insufficient_storage"
            assert state(home) == before, f"{what}: the {n}th call failed and changed a file"
            again = write(client)  # the disk has room again: the same write now lands
            assert again.status_code in (200, 201, 204), again.text
    assert faults >= 2
    record(
        f"ENOSPC at the nth write or sync of a memory write: {what}",
        rounds=faults,
        faults=faults,
        checked=faults,
        lost=0,
        figure=f"507 at each of {faults} points, every file and the journal as they were",
    )


def test_a_session_synced_but_not_journaled_is_journaled_at_start_and_its_create_replays(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    body = {"id": "01JAAAAAAAAAAAAAAAAAAAAAAA", "repo_root": "/srv/repo-a", "title": "Fix it"}
    with make_client(home, FakeClock()) as client:
        r = client.post("/v1/sessions", json=body)
        assert r.status_code == 201, r.text
        header = r.json()
    journal = home / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    assert b'"session.created"' in lines[-1]
    journal.write_bytes(b"".join(lines[:-1]))  # killed after the sync, before the entry

    daemon = Daemon(home).start()
    try:
        with httpx.Client(base_url=daemon.url, timeout=10) as client:
            created = client.get("/v1/journal", params={"op": "session.created"}).json()
            assert [e["session"] for e in created["items"]] == [body["id"]]
            again = client.post("/v1/sessions", json=body)  # the client's retry
            assert again.status_code == 200, again.text
            assert again.json() == header
            other = client.post("/v1/sessions", json={**body, "title": "Something else"})
            assert other.status_code == 409 and other.json()["code"] == "session_exists"
            created = client.get("/v1/journal", params={"op": "session.created"}).json()
            assert len(created["items"]) == 1
    finally:
        daemon.kill()
