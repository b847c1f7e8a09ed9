"""One project, many paths: a repository is the same project on every machine whatever
its path, by its git remote in one normal form (or, without one, its first commit); by
default the team shares the projects with a remote, and a machine lists and searches the
copies of its project's sessions made elsewhere under its own path."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from aster_persist.team.projects import normalize_remote, project_key

from ..conftest import Daemon, wait_until
from .test_sessions import append, create, events


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:team/proj.git",
        "https://github.com/team/proj",
        "https://user@GitHub.com/team/proj.git/",
        "ssh://git@github.com:22/team/proj.git",
        "github.com:team/proj",
    ],
)
def test_every_form_of_a_remote_is_one_key(url: str) -> None:
    assert normalize_remote(url) == "github.com/team/proj"


def test_what_is_not_a_remote_has_no_key() -> None:
    assert normalize_remote("/srv/mirror/proj.git") is None
    assert normalize_remote("") is None


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


def repo(folder: Path, remote: str | None) -> Path:
    folder.mkdir(parents=True)
    git(folder, "init", "-q")
    git(
        folder,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "start",
    )
    if remote is not None:
        git(folder, "remote", "add", "origin", remote)
    return folder


def test_a_repository_without_a_remote_is_its_first_commit(tmp_path: Path) -> None:
    local = repo(tmp_path / "local", None)
    key = project_key(str(local))
    assert key is not None and key.startswith("commit:") and len(key) == len("commit:") + 40
    assert project_key(str(tmp_path / "nothing-here")) is None


def test_the_same_project_at_two_paths_is_one_project(
    machines: Callable[..., Daemon], tmp_path: Path
) -> None:
    on_a = repo(tmp_path / "a" / "proj", "git@github.com:team/proj.git")
    on_b = repo(tmp_path / "b" / "src" / "project", "https://github.com/team/proj")
    private = repo(tmp_path / "a" / "scratch", None)  # no remote: not shared by default
    a, b = machines("laptop", projects=None), machines("workstation", projects=None)
    sid = create(a, str(on_a))
    append(a, sid, "shared by its remote").raise_for_status()
    kept = create(a, str(private))
    append(a, kept, "stays here").raise_for_status()
    wait_until(lambda: events(b, sid), timeout=5)
    listed = httpx.get(f"{b.url}/v1/sessions", params={"repo_root": str(on_b)}).json()["items"]
    assert [(s["id"], s["project_key"], s["machine"]) for s in listed] == [
        (sid, "github.com/team/proj", "laptop")
    ]
    assert httpx.get(f"{b.url}/v1/sessions/{kept}").status_code == 404
    # search by that repository root too, on either machine's path
    for root in (on_b, on_a):
        found = httpx.get(
            f"{b.url}/v1/search", params={"q": "shared remote", "repo_root": str(root)}
        ).json()["items"]
        assert [(h["session_id"], h["seq"]) for h in found] == [(sid, 1)], root
