"""A change of form is whole across kill -9 at any of its steps: compressing a cold
session and making it plain again for an append each leave, after the next start,
exactly one whole copy of every acknowledged event, in the form the journal says."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from ..conftest import Daemon, assistant, user
from .scale import record

ROOT = "/srv/cold"
KILLPOINT = Path(__file__).parents[1] / "e2e" / "killpoint"  # shared with tests/e2e
FS = "aster_persist.storage.fs"
# each step of a change of form (the counts are of calls in the doomed daemon's life)
COMPRESS = {
    "compressed beside it": "aster_persist.storage.packed:compress:1:after",
    "linked into place": f"{FS}:link:1:after",
    "journaled": "aster_persist.storage.journal:Journal.record:1:after",
    "plain file removed": f"{FS}:unlink:2:after",
}
DECOMPRESS = {
    "plain written beside it": f"{FS}:link:1:before",
    "linked into place": f"{FS}:link:1:after",
    "journaled": "aster_persist.storage.journal:Journal.record:1:after",
    "compressed file removed": f"{FS}:unlink:2:after",
}


def start(home: Path, kill: str = "") -> Daemon:
    env = {"ASTER_COMPRESS_AFTER_DAYS": "0"}  # only what the test asks for
    if kill:
        env |= {"ASTER_TEST_KILL": kill, "PYTHONPATH": str(KILLPOINT)}
    return Daemon(home, env=env).start()


def compress(daemon: Daemon) -> httpx.Response:
    return httpx.post(
        f"{daemon.url}/v1/sessions/compress",
        json={"older_than_days": 0, "dry_run": False},
        timeout=30,
    )


def written(home: Path) -> tuple[str, bytes]:
    daemon = start(home)
    try:
        sid = httpx.post(f"{daemon.url}/v1/sessions", json={"repo_root": ROOT}).json()["id"]
        turns = [user(f"step {n} of the kestrel migration") for n in range(30)]
        turns.append(assistant("done"))
        r = httpx.post(f"{daemon.url}/v1/sessions/{sid}/events", json=turns)
        assert r.status_code == 201
        return sid, httpx.get(f"{daemon.url}/v1/sessions/{sid}/export").content
    finally:
        daemon.stop()


def forms_on_disk(home: Path, sid: str) -> list[str]:
    return sorted(p.name for p in (home / "sessions").rglob(f"{sid}.jsonl*"))


def last_form(daemon: Daemon, sid: str) -> str | None:
    """What the journal says of the session's form last (None: never changed)."""
    r = httpx.get(f"{daemon.url}/v1/journal", params={"session": sid, "limit": 500})
    ops = [
        e["op"]
        for e in r.json()["items"]
        if e["op"] in ("session.compressed", "session.decompressed")
    ]
    return ops[-1] if ops else None  # oldest first


def whole_after_restart(home: Path, sid: str, expected: bytes) -> str:
    """One form on disk, every acknowledged byte served, the journal agreeing; the form."""
    daemon = start(home)
    try:
        names = forms_on_disk(home, sid)
        assert len(names) == 1, names
        assert not list(home.rglob(".aster-tmp-*"))  # no temporary left behind
        assert httpx.get(f"{daemon.url}/v1/sessions/{sid}/export").content == expected
        events = httpx.get(f"{daemon.url}/v1/sessions/{sid}/events").json()["events"]
        assert [e["seq"] for e in events] == list(range(1, 32))
        said = last_form(daemon, sid)
        if names[0].endswith(".zst"):
            assert said == "session.compressed"
        else:
            assert said in (None, "session.decompressed")
        return names[0]
    finally:
        daemon.stop()


@pytest.mark.parametrize("step", sorted(COMPRESS))
def test_kill_9_at_any_step_of_compressing_leaves_one_whole_copy(home: Path, step: str) -> None:
    sid, expected = written(home)
    doomed = start(home, COMPRESS[step])
    with pytest.raises(httpx.HTTPError):
        compress(doomed)
    assert doomed.proc is not None and doomed.proc.wait(10) == -9
    form = whole_after_restart(home, sid, expected)
    daemon = start(home)  # and it can be compressed whole after
    try:
        assert compress(daemon).status_code == 200
        assert forms_on_disk(home, sid) == [f"{sid}.jsonl.zst"]
        assert httpx.get(f"{daemon.url}/v1/sessions/{sid}/export").content == expected
    finally:
        daemon.stop()
    record(
        f"cold: kill -9 compressing ({step})",
        rounds=1,
        faults=1,
        checked=31,
        lost=0,
        figure=f"left {form}",
    )


@pytest.mark.parametrize("step", sorted(DECOMPRESS))
def test_kill_9_at_any_step_of_making_it_plain_loses_nothing(home: Path, step: str) -> None:
    sid, expected = written(home)
    daemon = start(home)
    try:
        assert [s["id"] for s in compress(daemon).json()["compressed"]] == [sid]
    finally:
        daemon.stop()
    doomed = start(home, DECOMPRESS[step])
    with pytest.raises(httpx.HTTPError):  # an append, never acknowledged
        httpx.post(f"{doomed.url}/v1/sessions/{sid}/events", json=[user("late")], timeout=30)
    assert doomed.proc is not None and doomed.proc.wait(10) == -9
    form = whole_after_restart(home, sid, expected)
    daemon = start(home)  # and the append goes through after
    try:
        r = httpx.post(f"{daemon.url}/v1/sessions/{sid}/events", json=[user("late")])
        assert r.status_code == 201 and r.json()["first_seq"] == 32
        assert forms_on_disk(home, sid) == [f"{sid}.jsonl"]
    finally:
        daemon.stop()
    record(
        f"cold: kill -9 making plain ({step})",
        rounds=1,
        faults=1,
        checked=31,
        lost=0,
        figure=f"left {form}",
    )
