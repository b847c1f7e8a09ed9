"""A create that was never acknowledged leaves nothing that blocks its retry: a header
is written whole or not at all (kill -9 between its write and its link into place), and
a session file that holds no whole line (as a crash of an older version, or another
tool, leaves it) is moved aside at start, its bytes kept, its id free again."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from ulid import ULID

from aster_persist.schemas.names import project_slug

from ..conftest import Daemon, user

ROOT = "/srv/unborn"
KILLPOINT = Path(__file__).with_name("killpoint")


def create(daemon: Daemon, sid: str) -> httpx.Response:
    return httpx.post(f"{daemon.url}/v1/sessions", json={"repo_root": ROOT, "id": sid}, timeout=10)


def listed(daemon: Daemon) -> set[str]:
    r = httpx.get(f"{daemon.url}/v1/sessions", params={"limit": 200})
    return {s["id"] for s in r.json()["items"]}


def retried_whole(daemon: Daemon, sid: str) -> None:
    """The client's retry: the same id, created, appended to, listed with its project."""
    r = create(daemon, sid)
    assert r.status_code == 201, r.text
    r = httpx.post(f"{daemon.url}/v1/sessions/{sid}/events", json=[user("hello again")])
    assert r.status_code == 201, r.text
    [summary] = [
        s for s in httpx.get(f"{daemon.url}/v1/sessions").json()["items"] if s["id"] == sid
    ]
    assert summary["repo_root"] == ROOT and summary["created_at"]


@pytest.mark.parametrize(
    "left", [b"", b'{"type":"session","id":"X","repo_root":"/srv/un'], ids=["empty", "torn"]
)
def test_a_session_file_with_no_whole_line_is_moved_aside_at_start(home: Path, left: bytes) -> None:
    daemon = Daemon(home).start()
    kept = str(ULID())
    assert create(daemon, kept).status_code == 201
    daemon.stop()
    sid = str(ULID())
    folder = home / "sessions" / project_slug(ROOT)
    (folder / f"{sid}.jsonl").write_bytes(left.replace(b"X", sid.encode()))

    daemon = Daemon(home).start()
    try:
        assert listed(daemon) == {kept}  # not listed with no project and no time
        [aside] = folder.glob(f"{sid}.jsonl.torn-*")
        assert aside.read_bytes() == left.replace(b"X", sid.encode())  # its bytes kept
        assert "never whole" in daemon.output()
        retried_whole(daemon, sid)  # no doctor --repair needed
        assert listed(daemon) == {kept, sid}
    finally:
        daemon.kill()


def test_kill_9_as_a_header_is_written_leaves_the_id_free(home: Path) -> None:
    Daemon(home).start().stop()  # the home made, so the next start links nothing
    sid = str(ULID())
    doomed = Daemon(
        home,
        env={
            "ASTER_TEST_KILL": "aster_persist.storage.fs:link:1:before",
            "PYTHONPATH": str(KILLPOINT),
        },
    ).start()
    with pytest.raises(httpx.HTTPError):
        create(doomed, sid)  # the header written and synced, killed before its link
    assert doomed.proc is not None and doomed.proc.wait(10) == -9
    assert not (home / "sessions" / project_slug(ROOT) / f"{sid}.jsonl").exists()

    daemon = Daemon(home).start()
    try:
        retried_whole(daemon, sid)
    finally:
        daemon.kill()
