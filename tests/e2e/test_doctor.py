"""`aster-persist doctor [--repair]`: every kind of damage found in a real home, and
repaired without losing a byte (everything taken out of a file is in a file beside it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from aster_persist.cli import main

from ..conftest import Daemon, snapshot, user

ROOT = "/srv/doctor"


def doctor(capsys: pytest.CaptureFixture[str], home: Path, *args: str) -> tuple[int, Any, str]:
    try:
        main(["doctor", "--home", str(home), *args])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, (json.loads(out.out) if "--json" in args else out.out), out.err


def damaged_home(home: Path) -> dict[str, Path]:
    """A home written by a real daemon, then hurt the ways crashes and people hurt one."""
    daemon = Daemon(home).start()
    try:
        with httpx.Client(base_url=daemon.url) as http:
            sids = [
                http.post("/v1/sessions", json={"repo_root": ROOT}).json()["id"] for _ in range(4)
            ]
            for sid in sids:
                for n in range(3):
                    r = http.post(f"/v1/sessions/{sid}/events", json=user(f"turn {n} of {sid}"))
                    assert r.status_code == 201
            big = "y" * 100_000  # stored as a blob
            r = http.post(f"/v1/sessions/{sids[2]}/events", json=user(big))
            assert r.status_code == 201
            http.post("/v1/memory/blocks", json={"name": "fact", "content": "A fact."})
    finally:
        assert daemon.stop() == 0
    files = {p.stem: p for p in (home / "sessions").rglob("*.jsonl")}
    torn, bad, blobbed, healthy = (files[sid] for sid in sids)
    with torn.open("ab") as f:  # a crash in the middle of a write
        f.write(b'{"type":"message","role":"user","content":"half')
    lines = bad.read_bytes().splitlines(keepends=True)  # a bad line in the middle
    bad.write_bytes(b"".join(lines[:2]) + b"\x00garbage}{\n" + b"".join(lines[2:]))
    for blob in (home / "blobs").rglob("*"):
        if blob.is_file():
            blob.unlink()  # a blob lost
    temp = home / "memory" / ".aster-tmp-fact.md.0a1b2c"
    temp.write_bytes(b"half a rewrite")
    with (home / "journal.jsonl").open("ab") as f:
        f.write(b'{"id":"01J')
    return {"torn": torn, "bad": bad, "blobbed": blobbed, "healthy": healthy, "temp": temp}


def test_doctor_finds_each_kind_of_damage_and_repairs_it_losing_nothing(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = damaged_home(home)
    before = snapshot(home)

    code, report, _ = doctor(capsys, home, "--json")
    assert code == 1
    kinds = {(f["kind"], Path(f["path"]).name) for f in report["findings"]}
    assert ("torn_tail", paths["torn"].name) in kinds
    assert ("bad_line", paths["bad"].name) in kinds
    assert ("missing_blob", paths["blobbed"].name) in kinds
    assert ("temp_file", paths["temp"].name) in kinds
    assert ("torn_tail", "journal.jsonl") in kinds
    assert ("index_drift", "index") in kinds
    assert not any(Path(f["path"]).name == paths["healthy"].name for f in report["findings"])
    assert snapshot(home) == before  # a check changes nothing

    code, out, _ = doctor(capsys, home)  # the same, for people
    assert code == 1 and "torn_tail" in out and "run with --repair" in out

    code, report, _ = doctor(capsys, home, "--repair", "--json")
    assert code == 1  # the lost blob cannot be brought back
    left = [f for f in report["findings"] if not f["repaired"]]
    assert [f["kind"] for f in left] == ["missing_blob"]
    after = snapshot(home)

    # every byte is still on disk: what left a file is in the file beside it
    torn_rel = str(paths["torn"].relative_to(home))
    torn_aside = [k for k in after if k.startswith(torn_rel + ".torn-")]
    assert len(torn_aside) == 1
    assert after[torn_rel] + after[torn_aside[0]] == before[torn_rel]
    bad_rel = str(paths["bad"].relative_to(home))
    bad_aside = [k for k in after if k.startswith(bad_rel + ".bad-")]
    assert after[bad_aside[0]] == b"\x00garbage}{\n"
    assert sorted((after[bad_rel] + after[bad_aside[0]]).splitlines()) == sorted(
        before[bad_rel].splitlines()
    )
    kept_temp = [k for k in after if k.startswith("lost+found/") and k.endswith(paths["temp"].name)]
    assert len(kept_temp) == 1 and after[kept_temp[0]] == b"half a rewrite"
    journal_aside = [k for k in after if k.startswith("journal.jsonl.torn-")]
    assert after["journal.jsonl"] + after[journal_aside[0]] == before["journal.jsonl"]
    for name, data in before.items():  # untouched files are byte for byte the same
        if name not in (torn_rel, bad_rel, "journal.jsonl", str(paths["temp"].relative_to(home))):
            assert after[name] == data, name

    code, report, _ = doctor(capsys, home, "--json")  # only the unrepairable is left
    assert code == 1 and [f["kind"] for f in report["findings"]] == ["missing_blob"]

    daemon = Daemon(home).start()  # the damaged session takes appends again
    try:
        sid = paths["bad"].stem
        r = httpx.post(f"{daemon.url}/v1/sessions/{sid}/events", json=user("after repair"))
        assert r.status_code == 201, r.text
        assert httpx.get(f"{daemon.url}/v1/sessions/{sid}").json()["state"] == "ok"
    finally:
        daemon.kill()


def test_a_healthy_home_is_all_well(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    daemon = Daemon(home).start()
    httpx.post(f"{daemon.url}/v1/sessions", json={"repo_root": ROOT})
    assert daemon.stop() == 0
    code, out, _ = doctor(capsys, home)
    assert code == 0 and "all well" in out
    code, report, _ = doctor(capsys, home, "--json")
    assert code == 0 and report["findings"] == []


def test_doctor_waits_for_the_daemon_to_stop_and_says_how(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    daemon = Daemon(home).start()
    try:
        code, _, err = doctor(capsys, home)
        assert code == 3 and "no daemon is using" in err and str(daemon.proc.pid) in err  # type: ignore[union-attr]
        assert "Ctrl-C where it runs" in err  # how to stop it, as no unit of ours is installed
        code, report, err = doctor(capsys, home, "--json")  # programs get a document too
        assert code == 3 and report["findings"] is None and report["exit_code"] == 3
        assert report["error"] in err and "no daemon is using" in report["error"]
        unit = tmp_path / "config" / "systemd" / "user" / "aster-persist.service"
        unit.parent.mkdir(parents=True)
        unit.write_text("[Service]\n")
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
        code, _, err = doctor(capsys, home)
        assert code == 3 and "`systemctl --user stop aster-persist`" in err
    finally:
        daemon.kill()


def test_doctor_on_a_home_that_is_not_there_says_so_and_makes_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo"
    code, _, err = doctor(capsys, missing)
    assert code == 4 and "no data home" in err
    code, report, _ = doctor(capsys, missing, "--json")
    assert code == 4 and "no data home" in report["error"]
    assert not missing.exists()
