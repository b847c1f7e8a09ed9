"""The data home: resolution, slugs, worktrees, the legacy move, the lock and the fallback."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aster_persist.errors import HomeUnavailable, InvalidName
from aster_persist.paths import resolve_home
from aster_persist.schemas.names import project_slug
from aster_persist.storage.home import Home, normalize_repo_root


def test_resolution_order(tmp_path: Path) -> None:
    env = {"HOME": "/home/u", "XDG_DATA_HOME": "/xdg"}
    assert resolve_home(tmp_path / "explicit", env) == tmp_path / "explicit"
    assert resolve_home(None, env) == Path("/xdg/aster")
    assert resolve_home(None, {"HOME": "/home/u"}) == Path("/home/u/.local/share/aster")


def test_slug_is_readable_and_unique() -> None:
    digest = hashlib.sha256(b"/home/me/My Repo!").hexdigest()[:8]
    assert project_slug("/home/me/My Repo!") == f"home-me-My-Repo-{digest}"
    assert project_slug("/a/b") != project_slug("/a-b")
    long = "/" + "x" * 300
    slug = project_slug(long)
    assert slug == "x" * 80 + "-" + hashlib.sha256(long.encode()).hexdigest()[:8]


@given(st.text(min_size=1, max_size=300))
def test_slug_never_escapes(text: str) -> None:
    root = "/" + text.replace("\x00", "")
    slug = project_slug(root)
    assert re.fullmatch(r"[A-Za-z0-9._-]{0,80}-[0-9a-f]{8}", slug)
    assert "/" not in slug and slug not in (".", "..")
    assert (Path("/home") / slug).parent == Path("/home")


def test_worktrees_resolve_to_the_main_repository(tmp_path: Path) -> None:
    main = tmp_path / "main"
    (main / ".git" / "worktrees" / "feature").mkdir(parents=True)
    tree = tmp_path / "feature"
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {main}/.git/worktrees/feature\n")
    assert normalize_repo_root(str(tree)) == str(main)
    assert project_slug(normalize_repo_root(str(tree))) == project_slug(str(main))
    assert normalize_repo_root(str(main) + "/") == str(main)


def test_relative_and_null_roots_refused() -> None:
    for bad in ("rel", "", "/a\x00b"):
        with pytest.raises(InvalidName):
            normalize_repo_root(bad)


def test_layout_permissions_and_lock(tmp_path: Path) -> None:
    home = Home.open(tmp_path / "h")
    try:
        for sub in ("sessions", "memory", "index", "blobs"):
            assert (home.root / sub).stat().st_mode & 0o777 == 0o700
        with pytest.raises(
            HomeUnavailable, match=rf"in use by another aster-persist daemon \(pid {os.getpid()}\)"
        ):
            Home.open(tmp_path / "h")
    finally:
        home.close()
    Home.open(tmp_path / "h").close()


def test_unwritable_home_refused_or_degraded(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(HomeUnavailable, match="not usable"):
        Home.open(blocker / "home")
    home = Home.open(blocker / "home", fallback="memory")
    try:
        assert home.degraded and "temporary" in home.degraded
        assert (home.root / "sessions").is_dir()
    finally:
        home.close()
    assert not home.root.exists()


def test_legacy_home_is_moved_once(tmp_path: Path) -> None:
    legacy = tmp_path / ".aster"
    (legacy / "memory").mkdir(parents=True)
    (legacy / "memory" / "ASTER.md").write_text("- gotcha\n")
    (legacy / "credentials.json").write_text("{}")
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("XDG_DATA_HOME", None)
    env.pop("ASTER_HOME", None)
    code = "from aster_persist.storage.home import Home; Home.open(None).close()"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    new = tmp_path / ".local" / "share" / "aster"
    assert (new / "memory" / "ASTER.md").read_text() == "- gotcha\n"
    assert (new / "credentials.json").exists()
    assert str(new) in (legacy / "MOVED.txt").read_text()
    assert not (legacy / "memory").exists()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    assert (new / "memory" / "ASTER.md").exists()


def test_regression_dot_folders_never_become_hidden_project_folders() -> None:
    """/.devcontainer/repo gave a slug starting with '.', which the start-up scan skipped."""
    for root in ("/.devcontainer/repo", "/.x", "/..hidden/y", "/"):
        slug = project_slug(root)
        assert not slug.startswith((".", "-")), slug
        assert re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,79}-[0-9a-f]{8}", slug)
