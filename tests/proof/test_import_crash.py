"""SIGKILL the daemon at random moments while a tree is imported, its cold sessions are
compressed and appended to: after the import is finished, every session is what a clean
import of the same tree makes (each event once, in order), every change of form left one
whole copy, and the journal names every session the files hold.

The tree is the Claude Code and Codex fixtures, and a resumed copy of one of them (stored
as a reference to the one it resumes). Each round starts the daemon, starts the command
line's import of the whole tree (which resumes: files imported whole are not sent
again), asks for the cold sessions to be compressed and appends to one of them, and kills
the daemon after a random wait. 4 rounds in ``make test``, 40 in ``make proof``.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import pytest

from aster_persist.storage.jsonl import read_bytes

from ..api.test_copies import RECORDS, copy_of
from ..conftest import FIXTURES, Daemon
from .scale import record, rounds

ROUNDS = rounds(4, 40)


def tree_of(folder: Path) -> Path:
    tree = folder / "tree"
    shutil.copytree(FIXTURES / "claude-code", tree / "claude")
    shutil.copytree(FIXTURES / "codex", tree / "codex")
    (tree / "claude" / "resumed.jsonl").write_bytes(copy_of(RECORDS))
    return tree


def command(tree: Path, url: str) -> list[str]:
    return [
        *(sys.executable, "-m", "aster_persist", "sessions", "import", str(tree)),
        *("--json", "--repo-root", "/srv/imported", "--url", url),
    ]


def imported(tree: Path, url: str) -> None:
    """The tree imported to the end (what was imported already is not sent again)."""
    done = subprocess.run(command(tree, url), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def views(url: str) -> dict[str, list[dict[str, object]]]:
    """Every live session's events as a reader sees them (no keys, no source records)."""
    out = {}
    with httpx.Client(base_url=url, timeout=60) as http:
        items = http.get("/v1/sessions", params={"limit": 500}).json()["items"]
        for item in items:
            events = http.get(
                f"/v1/sessions/{item['id']}/events", params={"raw": "false", "limit": 5000}
            ).json()["events"]
            out[item["id"]] = events
    return out


@pytest.mark.slow
def test_kill_9_in_a_loop_while_importing_compressing_and_appending(tmp_path: Path) -> None:
    rng = random.Random(38)
    tree = tree_of(tmp_path)
    clean = Daemon(tmp_path / "clean").start()
    try:
        imported(tree, clean.url)
        expected = views(clean.url)
    finally:
        clean.stop()
    home = tmp_path / "home"
    kills = 0
    for _ in range(ROUNDS):
        daemon = Daemon(home, env={"ASTER_COMPRESS_AFTER_DAYS": "0"}).start()
        cli = subprocess.Popen(
            command(tree, daemon.url), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(rng.uniform(0.05, 1.5))
        with httpx.Client(base_url=daemon.url, timeout=5) as http:
            try:  # a change of form under way when the kill comes, now and then
                if rng.random() < 0.5:
                    http.post(
                        "/v1/sessions/compress", json={"older_than_days": 0, "dry_run": False}
                    )
                items = http.get("/v1/sessions", params={"limit": 5}).json()["items"]
                if items and rng.random() < 0.5:  # an append makes a compressed one plain
                    sid = items[0]["id"]
                    http.post(
                        f"/v1/sessions/{sid}/events",
                        json=[{"type": "title", "title": "renamed in a crash loop"}],
                        headers={"Idempotency-Key": f"crash-{sid}"},
                    )
            except httpx.HTTPError:
                pass
        time.sleep(rng.uniform(0, 0.5))
        assert daemon.proc is not None
        daemon.proc.kill()
        daemon.proc.wait(10)
        kills += 1
        cli.wait(60)
    daemon = Daemon(home).start()
    try:
        imported(tree, daemon.url)
        got = views(daemon.url)
        journal = httpx.get(
            f"{daemon.url}/v1/journal", params={"op": "session.imported", "limit": 1000}
        ).json()["items"]
    finally:
        daemon.stop()
    assert set(got) == set(expected)
    for sid, events in expected.items():
        # a title appended in the loop is the only thing the clean import does not have
        # (and, appended before the rest of its import, it moves the seqs after it)
        mine = [e for e in got[sid] if e.get("title") != "renamed in a crash loop"]
        assert [e["seq"] for e in got[sid]] == list(range(1, len(got[sid]) + 1)), sid
        assert [_unnumbered(e) for e in mine] == [_unnumbered(e) for e in events], sid
    assert {e["session"] for e in journal} >= set(expected)
    for path in (home / "sessions").rglob("*.jsonl*"):
        if path.name.endswith((".jsonl", ".jsonl.zst")):
            twin = path.with_name(path.name.removesuffix(".zst")) if path.suffix == ".zst" else None
            assert twin is None or not twin.exists(), f"both forms of {path.name}"
    assert not list(home.rglob(".aster-tmp-*"))
    copies = [
        orjson.loads(read_bytes(p, 0, 1 << 16).split(b"\n")[0]).get("base")
        for p in (home / "sessions").rglob("*.jsonl*")
        if p.name.endswith((".jsonl", ".jsonl.zst")) and ".trash" not in p.parts
    ]
    assert sum(c is not None for c in copies) == 1  # the resumed copy refers on
    record(
        "import: kill -9 in a loop while importing, compressing and appending",
        rounds=kills,
        faults=kills,
        checked=sum(len(v) for v in expected.values()),
        lost=0,
        figure=f"{len(expected)} sessions as a clean import made them "
        f"({sum(c is not None for c in copies)} stored as references)",
    )


def _unnumbered(event: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in event.items() if k != "seq"}
