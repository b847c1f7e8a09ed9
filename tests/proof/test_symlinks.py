"""Nothing is read or written outside the data home: a link planted anywhere below it is
refused (409 ``symlink_refused``, naming the path inside the home), journaled once,
reported by ``doctor``, and the store is left exactly as it was.

Each case plants one link in a running daemon's home, pointing at a folder or file
outside it, then tries every route that would go through it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from aster_persist.schemas.names import project_slug

from ..conftest import Daemon, assistant, call, tool
from .scale import record

REPO = "/srv/linked-repo"
SLUG = project_slug(REPO)
OUTSIDE_TEXT = "OUTSIDE-THE-HOME: never served"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[httpx.Client, Path, Path, Daemon]]:
    home, outside = tmp_path / "home", tmp_path / "outside"
    outside.mkdir()
    daemon = Daemon(home, env={"ASTER_BLOB_THRESHOLD": "1024"}).start()
    try:
        with httpx.Client(base_url=daemon.url, timeout=10) as client:
            yield client, home, outside, daemon
    finally:
        daemon.kill()


def inside(home: Path) -> dict[str, bytes]:
    """Every file of the home but the journal, the index and the lock, with its bytes."""
    out = {}
    for path in sorted(home.rglob("*")):
        rel = path.relative_to(home)
        if rel.parts[0] in ("index",) or rel.name in (".lock", "journal.jsonl"):
            continue
        if path.is_symlink():
            out[str(rel)] = b"-> " + str(path.readlink()).encode()
        elif path.is_file():
            out[str(rel)] = path.read_bytes()
    return out


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def refused(r: httpx.Response, rel: str) -> None:
    assert r.status_code == 409, (r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/problem+json")
    problem = r.json()
    assert problem["type"].endswith(":symlink_refused"), problem
    assert rel in problem["detail"], problem
    assert OUTSIDE_TEXT not in r.text


def journaled(client: httpx.Client) -> list[str]:
    entries = client.get("/v1/journal", params={"op": "home.symlink_refused"}).json()["items"]
    return [e["detail"]["path"] for e in entries]


def new_session(client: httpx.Client, repo: str = REPO) -> str:
    r = client.post("/v1/sessions", json={"repo_root": repo})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


Case = Callable[[httpx.Client, Path, Path], int]


def core_file_linked_out(client: httpx.Client, home: Path, outside: Path) -> int:
    (outside / "notes.md").write_text(f"- {OUTSIDE_TEXT}\n")
    (home / "memory" / "ASTER.md").symlink_to(outside / "notes.md")
    planted = tree(outside)
    refused(client.get("/v1/memory/core"), "memory/ASTER.md")
    refused(client.put("/v1/memory/core", json={"content": "- mine\n"}), "memory/ASTER.md")
    refused(client.post("/v1/memory/core/notes", json={"note": "a note"}), "memory/ASTER.md")
    context = client.get("/v1/memory/context")
    assert context.status_code == 200 and OUTSIDE_TEXT not in context.text
    hits = client.get("/v1/search", params={"q": "OUTSIDE", "kind": "memory"})
    assert hits.status_code == 200 and OUTSIDE_TEXT not in hits.text
    assert tree(outside) == planted, "a file outside the home changed"
    return 5


def project_folder_linked_out(client: httpx.Client, home: Path, outside: Path) -> int:
    (home / "memory" / "projects").mkdir(parents=True, exist_ok=True)
    (outside / "project").mkdir()
    (home / "memory" / "projects" / SLUG).symlink_to(outside / "project")
    planted = tree(outside)
    rel = f"memory/projects/{SLUG}"
    block = {"name": "port", "content": "The database listens on 5433."}
    refused(client.post("/v1/memory/blocks", params={"repo_root": REPO}, json=block), rel)
    refused(client.put("/v1/memory/core", params={"repo_root": REPO}, json={"content": "x"}), rel)
    refused(
        client.post("/v1/memory/remember", params={"repo_root": REPO}, json={"note": "use uv"}),
        rel,
    )
    context = client.get("/v1/memory/context", params={"repo_root": REPO})
    assert context.status_code == 200
    assert tree(outside) == planted, "a file outside the home changed"
    return 4


def archive_linked_out(client: httpx.Client, home: Path, outside: Path) -> int:
    r = client.post("/v1/memory/blocks", json={"name": "tabs", "content": "Tabs, not spaces."})
    assert r.status_code == 201, r.text
    (outside / "archive").mkdir()
    (home / "memory" / ".archive").symlink_to(outside / "archive")
    planted = tree(outside)
    before = inside(home)
    refused(client.post("/v1/memory/blocks/tabs/archive"), "memory/.archive")
    assert inside(home) == before
    listed = [b["name"] for b in client.get("/v1/memory/blocks").json()["items"]]
    assert listed == ["tabs"]
    assert client.get("/v1/memory/blocks/tabs").status_code == 200
    assert tree(outside) == planted, "a file outside the home changed"
    return 3


def blob_folder_linked_out(client: httpx.Client, home: Path, outside: Path) -> int:
    sid = new_session(client)
    output = "big tool output\n" * 200
    digest = hashlib.sha256(output.encode()).hexdigest()
    (home / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
    (outside / "blobs").mkdir()
    (home / "blobs" / "sha256" / digest[:2]).symlink_to(outside / "blobs")
    planted = tree(outside)
    before = inside(home)
    events = [assistant(calls=[call("c1", "cat", json.dumps({"f": "x"}))]), tool("c1", output)]
    refused(client.post(f"/v1/sessions/{sid}/events", json=events), f"blobs/sha256/{digest[:2]}")
    assert inside(home) == before
    assert client.get(f"/v1/sessions/{sid}").json()["last_seq"] == 0
    assert tree(outside) == planted, "a file outside the home changed"
    return 2


def trash_linked_out(client: httpx.Client, home: Path, outside: Path) -> int:
    sid = new_session(client)
    folder = home / "sessions" / SLUG
    (outside / "trash").mkdir()
    (folder / ".trash").symlink_to(outside / "trash")
    planted = tree(outside)
    before = inside(home)
    refused(client.delete(f"/v1/sessions/{sid}"), f"sessions/{SLUG}/.trash")
    assert inside(home) == before
    # the session stays where it was, readable and writable, with no restart
    assert client.get(f"/v1/sessions/{sid}").status_code == 200
    r = client.post(
        f"/v1/sessions/{sid}/events",
        json={"type": "message", "role": "user", "content": "still here"},
    )
    assert r.status_code == 201, r.text
    listed = [s["id"] for s in client.get("/v1/sessions").json()["items"]]
    assert sid in listed
    assert tree(outside) == planted, "a file outside the home changed"
    return 4


def project_sessions_linked_out(client: httpx.Client, home: Path, outside: Path) -> int:
    repo = "/srv/other-repo"
    (outside / "sessions").mkdir()
    (home / "sessions" / project_slug(repo)).symlink_to(outside / "sessions")
    planted = tree(outside)
    refused(client.post("/v1/sessions", json={"repo_root": repo}), f"sessions/{project_slug(repo)}")
    assert tree(outside) == planted, "a file outside the home changed"
    return 1


def block_file_linked_out(client: httpx.Client, home: Path, outside: Path) -> int:
    (outside / "block.md").write_text(f"---\nname: planted\n---\n{OUTSIDE_TEXT}\n")
    (home / "memory" / "planted.md").symlink_to(outside / "block.md")
    planted = tree(outside)
    rel = "memory/planted.md"
    refused(client.put("/v1/memory/blocks/planted", json={"content": "mine"}), rel)
    r = client.post("/v1/memory/blocks", json={"name": "planted", "content": "new text"})
    refused(r, rel)
    assert OUTSIDE_TEXT not in client.get("/v1/memory/context").text
    assert tree(outside) == planted, "a file outside the home changed"
    return 2


CASES: list[Case] = [
    core_file_linked_out,
    project_folder_linked_out,
    archive_linked_out,
    blob_folder_linked_out,
    trash_linked_out,
    project_sessions_linked_out,
    block_file_linked_out,
]


def doctor(home: Path, *flags: str) -> tuple[int, list[dict[str, Any]]]:
    result = subprocess.run(
        [sys.executable, "-m", "aster_persist", "doctor", "--json", "--home", str(home), *flags],
        capture_output=True,
        text=True,
        timeout=60,
    )
    findings = json.loads(result.stdout)["findings"]
    return result.returncode, [f for f in findings if f["kind"] == "symlink"]


def test_every_link_is_refused_journaled_once_and_reported_by_doctor(
    served: tuple[httpx.Client, Path, Path, Daemon],
) -> None:
    client, home, outside, daemon = served
    refusals = 0
    for case in CASES:
        refusals += case(client, home, outside)
    for _ in range(3):  # met again and again, each link is journaled once
        refused(client.get("/v1/memory/core"), "memory/ASTER.md")
    paths: list[str] = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(set(paths)) < len(CASES):
        paths = journaled(client)
        time.sleep(0.05)
    assert sorted(paths) == sorted(set(paths)), paths
    blob_link = next(
        str(p.relative_to(home)) for p in (home / "blobs").rglob("*") if p.is_symlink()
    )
    assert set(paths) == {
        "memory/ASTER.md",
        f"memory/projects/{SLUG}",
        "memory/.archive",
        blob_link,
        f"sessions/{SLUG}/.trash",
        f"sessions/{project_slug('/srv/other-repo')}",
        "memory/planted.md",
    }
    links = sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_symlink())
    assert len(links) == len(CASES)
    daemon.stop()
    outside_before = tree(outside)
    code, findings = doctor(home)
    assert code == 1 and sorted(f["path"] for f in findings) == links
    code, findings = doctor(home, "--repair")
    assert [f["repaired"] for f in findings] == [True] * len(links)
    assert not [p for p in home.rglob("*") if p.is_symlink() and "lost+found" not in p.parts]
    assert tree(outside) == outside_before  # the links moved; what they named did not
    daemon.start()
    assert client.get("/v1/memory/core").status_code == 200
    record(
        "symbolic links planted in the home",
        rounds=len(CASES),
        faults=len(links),
        checked=refusals,
        lost=0,
        figure=f"{refusals} operations through {len(links)} planted links refused (409), "
        "each link journaled once and found by doctor; nothing outside the home changed",
    )


def wait_journaled(client: httpx.Client, rel: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if rel in journaled(client):
            return
        time.sleep(0.05)
    raise AssertionError(f"{rel} was never journaled as refused")


def test_files_moved_out_and_linked_back_are_never_written_again(tmp_path: Path) -> None:
    """A file the daemon holds open (a session, the journal), moved out of the home with a
    link left in its place, is never written again; other sessions stay listed."""
    home, outside = tmp_path / "sub" / ".." / "home", tmp_path / "outside"
    outside.mkdir()
    daemon = Daemon(home, env={"ASTER_BLOB_THRESHOLD": "1024"}).start()
    real = tmp_path / "home"
    try:
        with httpx.Client(base_url=daemon.url, timeout=10) as client:
            # the home named through ".." is confined all the same
            (real / "memory" / "ASTER.md").symlink_to(outside / "nowhere.md")
            refused(client.get("/v1/memory/core"), "memory/ASTER.md")
            (real / "memory" / "ASTER.md").unlink()

            kept, moved = new_session(client), new_session(client)
            for sid in (kept, moved):
                r = client.post(f"/v1/sessions/{sid}/events", json=user_event("first words"))
                assert r.status_code == 201, r.text
            path = real / "sessions" / SLUG / f"{moved}.jsonl"
            path.rename(outside / "moved.jsonl")
            path.symlink_to(outside / "moved.jsonl")
            wait_journaled(client, f"sessions/{SLUG}/{moved}.jsonl")
            size = (outside / "moved.jsonl").stat().st_size
            r = client.post(f"/v1/sessions/{moved}/events", json=user_event("more"))
            assert r.status_code in (404, 409), r.text
            tail = client.get(f"/v1/sessions/{moved}/events/stream")  # refused before it starts
            refused(tail, f"sessions/{SLUG}/{moved}.jsonl")
            assert (outside / "moved.jsonl").stat().st_size == size
            listed = client.get("/v1/sessions")
            assert listed.status_code == 200 and kept in [s["id"] for s in listed.json()["items"]]
            r = client.post(f"/v1/sessions/{kept}/events", json=user_event("searchable words"))
            assert r.status_code == 201, r.text
            hits = client.get("/v1/search", params={"q": "searchable"}).json()["items"]
            assert [h["session_id"] for h in hits] == [kept]

            # a link at a name the daemon is about to create is refused, not "taken"
            sid = "01JBBBBBBBBBBBBBBBBBBBBBBB"
            (real / "sessions" / SLUG / f"{sid}.jsonl").symlink_to(outside / "made.jsonl")
            r = client.post("/v1/sessions", json={"id": sid, "repo_root": REPO})
            refused(r, f"sessions/{SLUG}/{sid}.jsonl")
            assert not (outside / "made.jsonl").exists()
            # (the refusal is journaled on a thread of its own: written before the move)
            wait_journaled(client, f"sessions/{SLUG}/{sid}.jsonl")

            # the journal itself moved out and linked back: nothing more is written to it
            journal = real / "journal.jsonl"
            journal.rename(outside / "journal.jsonl")
            journal.symlink_to(outside / "journal.jsonl")
            size = (outside / "journal.jsonl").stat().st_size
            r = client.post("/v1/memory/core/notes", json={"note": "after the move"})
            refused(r, "journal.jsonl")
            assert (outside / "journal.jsonl").stat().st_size == size
            assert not (real / "memory" / "ASTER.md").exists()
    finally:
        daemon.kill()
    assert not (real / "sessions" / SLUG / ".trash").exists()
    # at the next start a home whose journal is a link is not served, and says why
    restarted = Daemon(real)
    with pytest.raises(RuntimeError, match=r"journal\.jsonl is a symbolic link"):
        restarted.start()
    code, findings = doctor(real)
    assert code == 1
    assert {f["path"] for f in findings} >= {"journal.jsonl", f"sessions/{SLUG}/{moved}.jsonl"}
    code, findings = doctor(real, "--repair")
    assert all(f["repaired"] for f in findings)
    code, findings = doctor(real)  # what was moved aside is not found again
    assert findings == []


def user_event(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": text}
