"""`aster-persist sessions import`: whole folders of other tools' transcripts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..conftest import Daemon

FIXTURES = Path(__file__).parents[1] / "fixtures"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aster_persist", "sessions", "import", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_a_folder_twice(daemon: Daemon, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "claude-code", tree / "claude")
    shutil.copytree(FIXTURES / "codex", tree / "codex")
    files = len(list(tree.rglob("*.jsonl")))  # each one session
    (tree / "broken.jsonl").write_text('{"type": "user"}\n{oops\n')
    first = run(str(tree), "--json", "--url", daemon.url)
    assert first.returncode == 1, first.stderr  # one file failed
    results = json.loads(first.stdout)["files"]
    assert sum(r.get("imported", 0) for r in results) == files
    [broken] = [r for r in results if "failed" in r]
    assert broken["file"].endswith("broken.jsonl") and "line 2" in broken["failed"]
    (tree / "broken.jsonl").unlink()
    second = run(str(tree), "--url", daemon.url)
    assert second.returncode == 0, second.stderr
    assert (
        f"0 sessions imported, 0 brought up to date, {files} already here ({files} files "
        "unchanged, not sent), 0 files failed" in second.stderr
    )
    # a transcript its agent went on writing: brought up to date, in the same session
    [small] = sorted((tree / "claude").rglob("1af7fc5e-*.jsonl"))
    whole = small.read_bytes()
    small.write_bytes(b"".join(whole.splitlines(keepends=True)[:10]))
    shutil.rmtree(tree / "codex")
    third = run(str(small), "--url", daemon.url)
    assert "0 sessions imported, 0 brought up to date, 1 already here" in third.stderr
    small.write_bytes(whole)
    with small.open("ab") as handle:  # and one record more than the fixture holds
        handle.write(whole.splitlines(keepends=True)[-1].replace(b'"uuid":"', b'"uuid":"x', 1))
    fourth = run(str(small), "--json", "--url", daemon.url)
    [row] = json.loads(fourth.stdout)["files"]
    assert row["updated"] == 1 and row["imported"] == 0, row


def test_import_says_when_the_daemon_is_not_running(tmp_path: Path) -> None:
    from ..conftest import free_port

    done = run(str(FIXTURES / "codex"), "--url", f"http://127.0.0.1:{free_port()}")
    assert done.returncode == 3 and "not running" in done.stderr


def test_an_unknown_format_is_bad_usage(tmp_path: Path) -> None:
    from ..conftest import free_port

    done = run(
        str(FIXTURES / "codex"), "--format", "bogus", "--url", f"http://127.0.0.1:{free_port()}"
    )
    assert done.returncode == 2 and "unknown format 'bogus'" in done.stderr


def test_the_readme_line_for_someone_with_one_of_the_two_tools(
    daemon: Daemon, tmp_path: Path
) -> None:
    """`sessions import ~/.claude/projects ~/.codex/sessions` with only Claude Code: the
    missing folder is one row that says so, the other is imported, exit 1; nothing at
    all is a usage error in a sentence. Never a traceback."""
    claude, codex = tmp_path / ".claude" / "projects", tmp_path / ".codex" / "sessions"
    shutil.copytree(FIXTURES / "claude-code", claude)
    files = len(list(claude.rglob("*.jsonl")))
    done = run(str(claude), str(codex), "--json", "--url", daemon.url)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    results = json.loads(done.stdout)["files"]
    assert {"file": str(codex), "failed": "no such file or folder"} in results
    assert sum(r.get("imported", 0) for r in results) == files
    people = run(str(codex), str(tmp_path / "typo.jsonl"), "--url", daemon.url)
    assert people.returncode == 2 and "Traceback" not in people.stderr
    assert people.stderr.strip() == (
        f"aster-persist: no .jsonl or .json files to import: nothing at {codex}, "
        f"{tmp_path / 'typo.jsonl'}"
    )


def test_links_below_a_folder_named_are_not_followed(daemon: Daemon, tmp_path: Path) -> None:
    """A linked file or folder below the folder named is someone else's: not imported."""
    elsewhere, tree = tmp_path / "elsewhere", tmp_path / "tree"
    shutil.copytree(FIXTURES / "codex", elsewhere)
    tree.mkdir()
    [rollout, *_] = sorted(elsewhere.rglob("rollout-*.jsonl"))
    (tree / "linked-folder").symlink_to(elsewhere, target_is_directory=True)
    (tree / "linked.jsonl").symlink_to(rollout)
    (tree / "own.jsonl").write_bytes(rollout.read_bytes())
    done = run(str(tree), "--json", "--url", daemon.url)
    assert done.returncode == 0, done.stderr
    assert [r["file"] for r in json.loads(done.stdout)["files"]] == [str(tree / "own.jsonl")]


def test_an_interrupted_import_of_a_tree_sends_only_what_it_had_not(
    daemon: Daemon, tmp_path: Path
) -> None:
    """A tree imported in part (the command stopped half way), then whole: the files
    imported already are not sent again, the rest are; a file changed since is sent;
    ``--again`` sends every one."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "claude-code", tree / "claude")
    shutil.copytree(FIXTURES / "codex", tree / "codex")
    files = sorted(tree.rglob("*.jsonl"))
    half = files[: len(files) // 2]
    first = run(*map(str, half), "--json", "--url", daemon.url)
    assert first.returncode == 0, first.stderr
    whole = run(str(tree), "--json", "--url", daemon.url)
    rows = {r["file"]: r for r in json.loads(whole.stdout)["files"]}
    assert {f for f, r in rows.items() if r.get("unchanged")} == {str(p) for p in half}
    assert sum(r.get("imported", 0) for r in rows.values()) == len(files) - len(half)
    with half[0].open("ab") as handle:  # grown since: sent, and brought up to date
        last = half[0].read_bytes().splitlines(keepends=True)[-1]
        handle.write(last.replace(b'"uuid":"', b'"uuid":"y', 1))
    again = run(str(tree), "--json", "--url", daemon.url)
    rows = {r["file"]: r for r in json.loads(again.stdout)["files"]}
    assert [f for f, r in rows.items() if not r.get("unchanged")] == [str(half[0])]
    assert rows[str(half[0])]["updated"] == 1
    every = run(str(tree), "--again", "--json", "--url", daemon.url)
    rows = {r["file"]: r for r in json.loads(every.stdout)["files"]}
    assert not any(r.get("unchanged") for r in rows.values())
    assert sum(r.get("already_imported", 0) for r in rows.values()) == len(files)


def test_files_are_sent_a_few_at_a_time_and_listed_in_their_order(
    daemon: Daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from aster_persist.cli import imports, main

    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "claude-code", tree)
    files = sorted(str(p) for p in tree.rglob("*.jsonl"))
    assert len(files) >= 2 and imports.IN_FLIGHT >= 2
    # the first two files' bytes wait for each other: sent one after the other, the
    # first would wait alone, and fail
    together = threading.Barrier(2, timeout=20)
    reading = imports.chunks

    def chunks(path: Path, sent: Any) -> Iterator[bytes]:
        if str(path) in files[:2]:
            together.wait()
        yield from reading(path, sent)

    monkeypatch.setattr(imports, "chunks", chunks)
    with pytest.raises(SystemExit) as done:
        main(["sessions", "import", str(tree), "--json", "--url", daemon.url])
    assert done.value.code in (0, None)
    rows = json.loads(capsys.readouterr().out)["files"]
    found, _missing = imports.transcript_files([tree])
    assert [row["file"] for row in rows] == [str(path) for path, _size in found]  # in order
    assert sorted(row["file"] for row in rows) == files  # each file once
    assert all("failed" not in row and row["sessions"] for row in rows), rows
