"""What the data home takes, measured from names and sizes alone: each kind apart, each
live session's transcript in either form, and a link counted as nothing, never entered."""

from __future__ import annotations

import os
from pathlib import Path

from aster_persist.storage.space import measure

A, B, C = "01J" + "A" * 23, "01J" + "B" * 23, "01J" + "C" * 23


def put(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)


def test_every_kind_apart_and_a_link_never_entered(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = home / "sessions" / "srv-a-12345678"
    put(project / f"{A}.jsonl", 1000)
    put(project / f"{B}.jsonl.zst", 100)
    put(project / f"{A}.jsonl.torn-20260101T000000Z", 7)  # set aside: other
    put(project / ".trash" / f"{C}.jsonl", 500)
    put(project / ".trash" / f"{C}.jsonl.trashed", 40)
    put(home / "index" / "catalog.sqlite3", 300)
    put(home / "index" / "catalog.sqlite3-wal", 30)
    put(home / "index" / "vectors.bin", 200)
    put(home / "blobs" / "ab" / ("ab" + "0" * 62), 4000)
    put(home / "journal.jsonl", 60)
    put(home / "memory" / "ASTER.md", 20)
    put(home / "token", 5)
    outside = tmp_path / "outside"
    put(outside / "huge.jsonl", 1_000_000)
    os.symlink(outside, project / "linked")  # a folder link: never entered
    os.symlink(outside / "huge.jsonl", project / f"{C}.jsonl")  # a file link: nothing

    space = measure(home)
    assert space.kinds == {
        "plain": 1000,
        "compressed": 100,
        "trash": 540,
        "catalog": 330,
        "vectors": 200,
        "blobs": 4000,
        "journal": 60,
        "memory": 20,
        "other": 12,
    }
    assert space.total == 6262
    assert space.sessions == {A: 1000, B: 100} and space.compressed == {B}
    assert space.trashed == 1


def test_a_home_that_is_not_there_takes_nothing(tmp_path: Path) -> None:
    assert measure(tmp_path / "nowhere").total == 0
