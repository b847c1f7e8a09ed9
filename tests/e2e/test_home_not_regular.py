"""A pipe (or any file that is not a regular one) where the data home keeps a file is
refused with a sentence in the log, never opened for reading (a pipe would block the
reader for ever), and never stops the start: derived data and the job queue, which a
pipe holds nothing of, are made again; a block or a transcript is left out, said."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import httpx
import pytest

from ..conftest import Daemon, user


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home a real daemon wrote: a block, core memory, a session, the queue."""
    home = tmp_path_factory.mktemp("written") / "home"
    daemon = Daemon(home).start()
    try:
        with httpx.Client(base_url=daemon.url) as http:
            http.post("/v1/memory/blocks", json={"name": "db", "content": "Port 5433."})
            http.post("/v1/memory/blocks", json={"name": "ci", "content": "CI runs make test."})
            http.post("/v1/memory/core/notes", json={"note": "Deploys on Fridays."})
            sid = http.post("/v1/sessions", json={"repo_root": "/srv/pipes"}).json()["id"]
            http.post(f"/v1/sessions/{sid}/events", json=user("hello there"))
    finally:
        assert daemon.stop() == 0
    (home / "queue").mkdir(exist_ok=True)
    (home / "queue" / "jobs.jsonl").touch()
    return home


def session_file(home: Path) -> str:
    [path] = home.glob("sessions/*/*.jsonl")
    return str(path.relative_to(home))


CASES = {
    "vectors": ("index/vectors.bin", {"ASTER_SEMANTIC": "true"}),
    "queue": ("queue/jobs.jsonl", {}),
    "follow state": ("follow-state.json", {}),
    "a block": ("memory/ci.md", {}),
    "core memory": ("memory/ASTER.md", {}),
    "a transcript": ("", {}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_pipe_in_the_home_is_refused_in_words_and_the_daemon_starts(
    written: Path, tmp_path: Path, case: str
) -> None:
    name, env = CASES[case]
    home = tmp_path / "home"
    shutil.copytree(written, home)
    name = name or session_file(home)
    pipe = home / name
    pipe.unlink(missing_ok=True)
    pipe.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(pipe)
    daemon = Daemon(home, env=env)
    daemon.start(wait=False)
    try:
        daemon.wait_ready(timeout=30)  # a pipe opened for reading would wait for ever
        with httpx.Client(base_url=daemon.url) as http:
            context = http.get("/v1/memory/context").json()["content"]
            listed = http.get("/v1/sessions").json()["items"]
            assert http.post(
                "/v1/memory/core/notes", json={"note": "Still writable."}
            ).status_code in (
                200,
                201,
                409,
            )
        said = daemon.output()
        assert f"{name} is not a regular file" in said, said
        assert "Traceback" not in said
        if case != "a block":
            assert "Port 5433." in context or "db" in context  # the rest of memory is there
        if case != "a transcript":
            assert len(listed) == 1
        if case in ("queue", "follow state", "vectors"):  # holds nothing: gone, or made again
            assert not pipe.exists() or stat.S_ISREG(pipe.lstat().st_mode)
    finally:
        daemon.kill()
