"""A copy is made whole across kill -9 at any step: deleting the session a resumed copy
refers to leaves, after the next start, every event the copy showed (its export byte for
byte), the original where it was or in the trash, and a journal that never says a copy
was made whole when it was not."""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson
import pytest

from ..api.test_copies import RECORDS, copy_of
from ..conftest import CLAUDE_SMALL, Daemon
from .scale import record

KILLPOINT = Path(__file__).parents[1] / "e2e" / "killpoint"  # shared with tests/e2e
FS = "aster_persist.storage.fs"
# (the counts are of calls in the doomed daemon's life: its start rewrites the learning
# queue once)
STEPS = {
    "whole copy written beside it": f"{FS}:write_temp:2:after",
    "renamed into place": f"{FS}:replace:2:after",
    "journaled": "aster_persist.storage.journal:Journal.record:1:after",
    "original moved to the trash": "aster_persist.storage.transcripts.lifecycle:Trash.trash:1:after",
}


def start(home: Path, kill: str = "") -> Daemon:
    env = {"ASTER_COMPRESS_AFTER_DAYS": "0"}
    if kill:
        env |= {"ASTER_TEST_KILL": kill, "PYTHONPATH": str(KILLPOINT)}
    return Daemon(home, env=env).start()


def stored(home: Path) -> tuple[str, str, bytes, bytes]:
    """The original and its resumed copy, imported; each one's export."""
    daemon = start(home)
    try:
        ids = []
        for data in (CLAUDE_SMALL.read_bytes(), copy_of(RECORDS)):
            r = httpx.post(f"{daemon.url}/v1/sessions/import", content=data, timeout=30)
            assert r.status_code == 201, r.text
            ids.append(r.json()["sessions"][0]["id"])
        original, copy = ids
        exports = [httpx.get(f"{daemon.url}/v1/sessions/{i}/export").content for i in ids]
        return original, copy, exports[0], exports[1]
    finally:
        daemon.stop()


def header(home: Path, sid: str) -> dict[str, object]:
    [path] = (home / "sessions").rglob(f"{sid}.jsonl")
    return dict(orjson.loads(path.read_bytes().split(b"\n", 1)[0]))


@pytest.mark.parametrize("step", sorted(STEPS))
def test_kill_9_at_any_step_of_making_a_copy_whole_loses_nothing(home: Path, step: str) -> None:
    original, copy, original_export, copy_export = stored(home)
    assert "base" in header(home, copy)
    doomed = start(home, STEPS[step])
    with pytest.raises(httpx.HTTPError):
        httpx.delete(f"{doomed.url}/v1/sessions/{original}", timeout=30)
    assert doomed.proc is not None and doomed.proc.wait(10) == -9
    daemon = start(home)
    try:
        assert not list(home.rglob(".aster-tmp-*"))  # no temporary left behind
        assert httpx.get(f"{daemon.url}/v1/sessions/{copy}/export").content == copy_export
        events = httpx.get(f"{daemon.url}/v1/sessions/{copy}/events").json()["events"]
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        said = [
            e["op"]
            for e in httpx.get(f"{daemon.url}/v1/journal", params={"limit": 500}).json()["items"]
            if e["session"] in (copy, original)
        ]
        whole = "base" not in header(home, copy)
        if "session.made_whole" in said:
            assert whole  # the journal never says so of a copy that still refers
        left = httpx.get(f"{daemon.url}/v1/sessions/{original}")
        if left.status_code == 200:  # not deleted: as it was
            exported = httpx.get(f"{daemon.url}/v1/sessions/{original}/export").content
            assert exported == original_export
        else:  # in the trash (journaled or not, as any delete a crash cut short)
            assert whole
        # and the delete goes through after, the copy whole
        if left.status_code == 200:
            assert httpx.delete(f"{daemon.url}/v1/sessions/{original}").status_code == 204
        assert "base" not in header(home, copy)
        assert httpx.get(f"{daemon.url}/v1/sessions/{copy}/export").content == copy_export
    finally:
        daemon.stop()
    record(
        f"copies: kill -9 making a copy whole ({step})",
        rounds=1,
        faults=1,
        checked=len(events),
        lost=0,
        figure="whole" if whole else "still referring",
    )
