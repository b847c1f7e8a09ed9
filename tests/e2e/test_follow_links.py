"""Following never reads through a link below the folder named, in any component, at
the first scan or while watching; a link or a pipe where the home keeps its follow list
or its state is refused once, in words, and never stops following or the start."""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx

from ..conftest import CLAUDE_SMALL, Daemon, wait_until
from .test_follow import taken_in

RECORDS = CLAUDE_SMALL.read_bytes()


def transcript(path: Path, session: str) -> None:
    """A Claude Code transcript of its own (its session id is its source)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(RECORDS.replace(b"1af7fc5e-8455-4414-9ccd-011d40f70b2a", session.encode()))


def sources(url: str) -> set[str]:
    items = httpx.get(f"{url}/v1/sessions", params={"limit": 100}).json()["items"]
    return {
        httpx.get(f"{url}/v1/sessions/{s['id']}").json()["header"]["x_import"]["fingerprint"]
        for s in items
    }


def sid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def test_links_below_a_followed_folder_are_never_followed(tmp_path: Path) -> None:
    followed, outside = tmp_path / "projects", tmp_path / "elsewhere"
    transcript(outside / "deep" / "a.jsonl", sid(1))  # out there at start
    transcript(followed / "real" / "b.jsonl", sid(2))
    (followed / "linked").symlink_to(outside, target_is_directory=True)
    (followed / "real" / "nested").symlink_to(outside / "deep", target_is_directory=True)
    (followed / "file.jsonl").symlink_to(outside / "deep" / "a.jsonl")
    daemon = Daemon(tmp_path / "home", env={"ASTER_FOLLOW": str(followed)}).start()
    try:
        wait_until(lambda: len(sources(daemon.url)) == 1)
        transcript(outside / "deep" / "c.jsonl", sid(3))  # made out there while watched
        transcript(outside / "e.jsonl", sid(5))
        transcript(followed / "real" / "d.jsonl", sid(4))
        wait_until(lambda: taken_in(daemon.home, followed / "real" / "d.jsonl"))
        time.sleep(1.5)  # the watch has seen the others by now
        found = sources(daemon.url)
        assert found == {f"claude-code:source:{sid(2)}", f"claude-code:source:{sid(4)}"}
        assert "Traceback" not in daemon.output()
    finally:
        daemon.stop()


def test_a_linked_follow_list_is_refused_once_and_the_configured_folders_followed(
    tmp_path: Path,
) -> None:
    home, followed = tmp_path / "home", tmp_path / "projects"
    home.mkdir()
    decoy = tmp_path / "decoy.json"
    decoy.write_text('{"folders": []}')
    (home / "follow.json").symlink_to(decoy)
    transcript(followed / "x" / "a.jsonl", sid(1))
    daemon = Daemon(home, env={"ASTER_FOLLOW": str(followed)}).start()
    try:
        wait_until(lambda: len(sources(daemon.url)) == 1)
        time.sleep(2.5)  # long enough for a loop that said it every second to say it again
        said = daemon.output()
        assert said.count("follow.json is a symbolic link") == 1, said
        assert "Traceback" not in said and "following failed" not in said
        assert (home / "follow.json").is_symlink() and decoy.read_text() == '{"folders": []}'
    finally:
        daemon.stop()


def test_a_linked_or_piped_follow_state_is_made_again_and_the_daemon_starts(
    tmp_path: Path,
) -> None:
    for kind in ("link", "pipe"):
        made_again(tmp_path / kind, kind)


def made_again(place: Path, kind: str) -> None:
    """A follow state that is a link or a pipe, at start: the daemon starts, follows,
    and makes the state again; what a link led to is untouched."""
    home, followed = place / "home", place / "projects"
    home.mkdir(parents=True)
    state = home / "follow-state.json"
    target = place / "state-elsewhere.json"
    target.write_text("{}")
    if kind == "link":
        state.symlink_to(target)
    else:
        os.mkfifo(state)
    transcript(followed / "x" / "a.jsonl", sid(1))
    daemon = Daemon(home, env={"ASTER_FOLLOW": str(followed)}).start()
    try:
        wait_until(lambda: len(sources(daemon.url)) == 1)
        wait_until(lambda: state.is_file() and not state.is_symlink())  # made again
        assert target.read_text() == "{}"  # what a link led to: untouched
        assert "made again from the files" in daemon.output()
    finally:
        daemon.stop()
