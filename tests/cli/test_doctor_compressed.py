"""`doctor` reads compressed transcripts: a healthy one is well (and counted at its
length for the index check), one that does not decompress is reported and left as it
is, and a compressed copy beside its plain file is moved aside by a repair."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from aster_persist.cli import main
from aster_persist.storage.home import Home
from aster_persist.storage.transcripts import TranscriptStore

from ..conftest import stored_session

EVENTS = [{"type": "message", "role": "user", "content": f"turn {n}"} for n in range(20)]


def doctor(capsys: pytest.CaptureFixture[str], home: Path, *args: str) -> tuple[int, Any]:
    try:
        main(["doctor", "--home", str(home), "--json", *args])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, json.loads(capsys.readouterr().out)


def packed_sessions(root: Path, n: int) -> list[tuple[Path, bytes]]:
    """``n`` sessions written and compressed by the store; each one's plain path and bytes."""
    store = TranscriptStore(Home.open(root))
    store.scan()
    out = []
    for _ in range(n):
        sid = stored_session(store, EVENTS, "/srv/doctor")
        plain = store.live_path(sid)
        data = plain.read_bytes()
        assert store.pack(sid, store.compress(sid), {})
        out.append((plain, data))
    store.close()
    store.home.close()
    return out


def test_doctor_checks_compressed_transcripts_and_moves_a_doubled_copy_aside(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (healthy, _), (doubled, data), (broken, _) = packed_sessions(home, 3)
    doubled.write_bytes(data)  # the plain form back beside the compressed one
    zst = broken.with_name(broken.name + ".zst")
    zst.write_bytes(zst.read_bytes()[:40])  # cut short: it no longer decompresses
    cut = zst.read_bytes()

    code, found = doctor(capsys, home)
    kinds = {(f["kind"], Path(f["path"]).name, f["repairable"]) for f in found["findings"]}
    assert ("both_forms", doubled.name + ".zst", True) in kinds
    assert ("unreadable", zst.name, False) in kinds
    assert not any(name.startswith(healthy.stem) for _kind, name, _r in kinds)
    assert code == 1

    code, repaired = doctor(capsys, home, "--repair")
    [moved] = [f for f in repaired["findings"] if f["kind"] == "both_forms"]
    assert moved["repaired"] and (home / moved["moved_to"]).is_file()
    assert not doubled.with_name(doubled.name + ".zst").exists()
    assert doubled.read_bytes() == data  # the plain file is the session, untouched
    assert zst.read_bytes() == cut  # a compressed file is never rewritten
    assert sorted(os.listdir(healthy.parent)) == sorted(
        [healthy.name + ".zst", doubled.name, zst.name, Path(moved["moved_to"]).name]
    )
