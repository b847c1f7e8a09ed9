"""People and other programs as writers: hand edits of memory and transcripts appended by
another program, picked up by the watcher of a real daemon."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from aster_persist.schemas.names import project_slug

from ..conftest import REPO, Daemon, new_session, user
from .test_live import Reader


def wait_watching(url: str) -> None:
    deadline = time.monotonic() + 10
    while not httpx.get(f"{url}/v1/info").json()["watching"]:
        assert time.monotonic() < deadline, "the watcher never started"
        time.sleep(0.05)


def watcher_entries(url: str, count: int, timeout: float = 10) -> list[dict[str, Any]]:
    """Wait until the journal holds ``count`` watcher entries; return them."""
    deadline = time.monotonic() + timeout
    while True:
        items = httpx.get(f"{url}/v1/journal", params={"limit": 1000}).json()["items"]
        found = [e for e in items if e["actor"] == "watcher"]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def remember(url: str, name: str, content: str) -> Path:
    r = httpx.post(f"{url}/v1/memory/blocks", json={"name": name, "content": content})
    assert r.status_code == 201, r.text
    return Path(r.json()["name"])


def test_hand_edits_are_journaled_once_and_revertible(daemon: Daemon, home: Path) -> None:
    url = daemon.url
    wait_watching(url)
    feed = Reader(f"{url}/v1/events?op=memory")
    feed.start()
    feed.opened.wait(10)
    remember(url, "sed-me", "The build uses make.")
    remember(url, "editor", "Tabs, not spaces.")
    remember(url, "remove-me", "Temporary note.")
    folder = home / "memory"
    originals = {p.name: p.read_bytes() for p in folder.glob("*.md")}
    time.sleep(0.8)  # the daemon's own writes have been seen and ignored by now
    assert watcher_entries(url, 1, timeout=0.5) == []

    subprocess.run(["sed", "-i", "s/make/ninja/", str(folder / "sed-me.md")], check=True)
    target = folder / "editor.md"  # an editor: swap file first, then rename over
    (folder / ".editor.md.swp").write_bytes(b"swap")
    temp = folder / "editor.md.tmp-4913"
    temp.write_bytes(originals["editor.md"].replace(b"Tabs, not spaces.", b"Spaces, not tabs."))
    os.rename(temp, target)
    (folder / ".editor.md.swp").unlink()
    (folder / "remove-me.md").unlink()

    entries = watcher_entries(url, 3)
    assert sorted((e["op"], e["name"]) for e in entries) == [
        ("memory.delete", "remove-me"),
        ("memory.edit", "editor"),
        ("memory.edit", "sed-me"),
    ]
    by_name = {e["name"]: e for e in entries}
    assert by_name["sed-me"]["before"]["content"] == originals["sed-me.md"].decode()
    assert b"ninja" in (folder / "sed-me.md").read_bytes()
    recalled = httpx.get(f"{url}/v1/memory/blocks/editor").json()
    assert recalled["body"] == "Spaces, not tabs.\n"
    assert httpx.get(f"{url}/v1/memory/blocks/remove-me").status_code == 404
    time.sleep(0.8)
    assert len(watcher_entries(url, 4, timeout=0.3)) == 3  # each change once, no echo
    for entry in entries:  # every one can be undone, byte for byte
        r = httpx.post(f"{url}/v1/journal/{entry['id']}/revert")
        assert r.status_code == 200, r.text
    for name, data in originals.items():
        assert (folder / name).read_bytes() == data
    time.sleep(0.8)
    assert len(watcher_entries(url, 4, timeout=0.3)) == 3  # reverts are the daemon's own
    feed.done.set()
    seen = [(e["data"]["op"], e["data"]["name"], e["data"]["actor"]) for e in feed.events]
    assert sorted(x for x in seen if x[2] == "watcher") == [
        ("memory.delete", "remove-me", "watcher"),
        ("memory.edit", "editor", "watcher"),
        ("memory.edit", "sed-me", "watcher"),
    ]


def test_blocks_and_core_memory_added_by_hand(daemon: Daemon, home: Path) -> None:
    url = daemon.url
    wait_watching(url)
    project = home / "memory" / "projects" / project_slug(REPO)
    project.mkdir(parents=True)
    (project / "ASTER.md").write_text("- Run the linter before pushing.\n")
    (project / "hand-made.md").write_text(
        "---\ndescription: Written in an editor\ntags: [okapi]\n---\nThe okapi is a giraffid.\n"
    )
    (project / "Not A Block.md").write_text("ignored: not a block name\n")
    entries = watcher_entries(url, 2)
    assert sorted((e["op"], e["name"], e["before"]) for e in entries) == [
        ("memory.write", "ASTER.md", None),
        ("memory.write", "hand-made", None),
    ]
    context = httpx.get(f"{url}/v1/memory/context", params={"repo_root": REPO}).json()
    assert "Run the linter" in context["content"]
    assert "- hand-made: Written in an editor" in context["content"]
    hits = httpx.get(f"{url}/v1/memory/search", params={"q": "okapi", "repo_root": REPO}).json()
    assert [h["name"] for h in hits["items"]] == ["hand-made"]


def test_transcripts_appended_by_another_program(daemon: Daemon, home: Path) -> None:
    url = daemon.url
    wait_watching(url)
    with httpx.Client(base_url=url) as http:
        sid = new_session(http)
        http.post(f"/v1/sessions/{sid}/events", json=[user("first")]).raise_for_status()
    tail = Reader(f"{url}/v1/sessions/{sid}/events/stream", {"Last-Event-ID": "1"}, stop_after=2)
    tail.start()
    tail.opened.wait(10)
    time.sleep(0.3)
    path = home / "sessions" / project_slug(REPO) / f"{sid}.jsonl"
    with path.open("ab") as f:  # another program appends two whole lines
        for seq, text in ((2, "appended by a script: capybara"), (3, "and another line")):
            line = {"type": "message", "seq": seq, "role": "user", "content": text}
            f.write(json.dumps({**line, "ts": "2026-02-01T00:00:00.000Z"}).encode() + b"\n")
    entries = watcher_entries(url, 1)
    assert [
        (e["op"], e["session"], e["detail"]["first_seq"], e["detail"]["last_seq"]) for e in entries
    ] == [("session.appended", sid, 2, 3)]
    tail.join(10)
    assert [e["data"]["content"] for e in tail.events] == [
        "appended by a script: capybara",
        "and another line",
    ]
    listed = httpx.get(f"{url}/v1/sessions", params={"repo_root": REPO}).json()["items"]
    assert [(s["id"], s["events"]) for s in listed] == [(sid, 3)]
    hits = httpx.get(f"{url}/v1/search", params={"q": "capybara"}).json()["items"]
    assert [(h["session_id"], h["seq"]) for h in hits] == [(sid, 2)]
    # The daemon appends after them, with the next seq.
    r = httpx.post(f"{url}/v1/sessions/{sid}/events", json=user("fourth"))
    assert r.status_code == 201 and r.json()["first_seq"] == 4
    time.sleep(0.8)
    assert len(watcher_entries(url, 2, timeout=0.3)) == 1


def test_a_transcript_another_program_damages_is_journaled_as_damaged(
    daemon: Daemon, home: Path
) -> None:
    url = daemon.url
    wait_watching(url)
    with httpx.Client(base_url=url) as http:
        sid = new_session(http)
        http.post(f"/v1/sessions/{sid}/events", json=[user("first")]).raise_for_status()
    time.sleep(0.6)  # the daemon's own append has been seen
    path = home / "sessions" / project_slug(REPO) / f"{sid}.jsonl"
    with path.open("ab") as f:  # a broken line, then a whole one: the middle is damaged
        f.write(b'{"type": "message", "seq": 2, "role": "us\n')
        line = {"type": "message", "seq": 3, "role": "user", "content": "after the damage"}
        f.write(json.dumps({**line, "ts": "2026-02-01T00:00:00.000Z"}).encode() + b"\n")
    entries = watcher_entries(url, 2)
    assert [(e["op"], e["session"]) for e in entries] == [
        ("session.damaged", sid),
        ("session.appended", sid),
    ]
    assert entries[0]["detail"]["bad_lines"] == [3]
    assert (entries[1]["detail"]["first_seq"], entries[1]["detail"]["last_seq"]) == (2, 3)
    assert httpx.get(f"{url}/v1/sessions/{sid}").json()["state"] == "damaged"


def test_an_import_is_not_taken_for_another_program_but_a_later_change_is(
    daemon: Daemon, home: Path
) -> None:
    url = daemon.url
    wait_watching(url)
    conversations = [
        {
            "messages": [
                {"role": "user", "content": f"imported {n}"},
                {"role": "assistant", "content": "ok"},
            ]
        }
        for n in range(3)
    ]
    r = httpx.post(
        f"{url}/v1/sessions/import",
        content=json.dumps(conversations),
        params={"repo_root": REPO, "format": "openai-chat"},
    )
    assert r.status_code == 201, r.text
    sids = [s["id"] for s in r.json()["sessions"]]
    time.sleep(0.8)  # the watcher has seen the new files: they are the import's own
    assert watcher_entries(url, 1, timeout=0.3) == []
    path = home / "sessions" / project_slug(REPO) / f"{sids[1]}.jsonl"
    with path.open("ab") as f:  # then another program appends to one of them
        line = {"type": "message", "seq": 3, "role": "user", "content": "added by a script"}
        f.write(json.dumps({**line, "ts": "2026-02-01T00:00:00.000Z"}).encode() + b"\n")
    entries = watcher_entries(url, 1)
    assert [(e["op"], e["session"], e["detail"]["first_seq"]) for e in entries] == [
        ("session.appended", sids[1], 3)
    ]
    assert httpx.get(f"{url}/v1/sessions/{sids[1]}").json()["events"] == 3
