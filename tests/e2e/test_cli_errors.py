"""Every mistake a user can make on the command line gets one or two lines that say
what to do, with a documented exit code (``aster-persist --help``), never a traceback:
a missing path, a folder that is not there, a bad flag value, an unknown flag, a full
disk, no daemon, a daemon on another home, an id that cannot be one, one not found."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..conftest import Daemon, serving, user

SCRIPT = str(Path(sys.executable).with_name("aster-persist"))
ABSENT = "01J0000000000000000000ABCD"
NOWHERE = "/no/such/dir/x.jsonl"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    yield from serving(tmp_path_factory, "cli-errors")


@pytest.fixture(scope="module")
def session(server: Daemon) -> str:
    sid = str(httpx.post(f"{server.url}/v1/sessions", json={"repo_root": "/srv/app"}).json()["id"])
    httpx.post(f"{server.url}/v1/sessions/{sid}/events", json=user("hello"))
    return sid


def command(server: Daemon, *args: str, stdout: int | None = None) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ASTER_HOME", "COLUMNS")}
    done = subprocess.run(
        [SCRIPT, *args],
        stdout=subprocess.PIPE if stdout is None else stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        env={**env, "ASTER_URL": server.url, "ASTER_HOME": str(server.home)},
    )
    return done.returncode, done.stderr


CASES = [
    ("a missing path to import", ["sessions", "import", "/no/such/place.jsonl"], 2),
    ("an export into a folder not there", ["sessions", "export", "{sid}", "-o", NOWHERE], 1),
    ("a bad flag value", ["sessions", "list", "--limit", "many"], 2),
    ("an unknown flag", ["sessions", "list", "--frobnicate"], 2),
    ("a missing argument", ["sessions", "show"], 2),
    ("an unknown command", ["sessions", "frobnicate"], 2),
    ("an id that cannot be one", ["sessions", "show", "not-an-id"], 2),
    ("an id not found", ["sessions", "show", ABSENT], 4),
    ("no daemon", ["sessions", "list", "--url", "http://127.0.0.1:1"], 3),
    ("a daemon on another home", ["follow", "add", "/tmp", "--home", "/tmp/another-home"], 1),
    ("the home a daemon holds", ["doctor", "--home", "{home}"], 3),
]


@pytest.mark.parametrize(("what", "argv", "code"), CASES, ids=[c[0] for c in CASES])
def test_a_mistake_is_a_sentence_and_an_exit_code(
    server: Daemon, session: str, what: str, argv: list[str], code: int
) -> None:
    args = [a.format(sid=session, home=server.home) for a in argv]
    returned, said = command(server, *args)
    lines = said.strip().splitlines()
    assert returned == code, (what, said)
    assert "Traceback" not in said and 1 <= len(lines) <= 2, (what, said)
    assert lines[0].startswith("aster-persist: "), (what, said)


def test_a_full_disk_under_the_output_is_a_sentence(server: Daemon, session: str) -> None:
    """stdout on a device that is always full (ENOSPC on every write)."""
    with open("/dev/full", "w") as full:
        returned, said = command(server, "sessions", "export", session, stdout=full.fileno())
    lines = said.strip().splitlines()
    assert returned == 1 and "Traceback" not in said and len(lines) == 1, said
    assert "No space left on device" in said and lines[0].startswith("aster-persist: ")
