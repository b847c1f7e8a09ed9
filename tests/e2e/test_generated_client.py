"""A client generated from `openapi/openapi.json` by an independent generator
(openapi-python-client) passes `mypy --strict` with code that uses it, and does create →
append → retry → list → read against a real daemon: the document is complete enough to
program against without this project's code."""

from __future__ import annotations

import compileall
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import Daemon

REPO = Path(__file__).resolve().parents[2]
USAGE = """
from aster_generated import Client
from aster_generated.api.sessions import sessions_append, sessions_create
from aster_generated.models import AppendOut, SessionHeader, SessionIn, UserMessage


def retried(url: str) -> tuple[int, AppendOut, int, AppendOut]:
    \"\"\"Append a turn with an idempotency key, then retry it: the statuses and replies.\"\"\"
    with Client(base_url=url) as client:
        header = sessions_create.sync(client=client, body=SessionIn(repo_root="/srv/typed"))
        assert isinstance(header, SessionHeader)
        turn = UserMessage(type_="message", role="user", content="once only")
        first = sessions_append.sync_detailed(
            header.id, client=client, body=turn, idempotency_key="turn-1"
        )
        again = sessions_append.sync_detailed(
            header.id, client=client, body=turn, idempotency_key="turn-1"
        )
        assert isinstance(first.parsed, AppendOut) and isinstance(again.parsed, AppendOut)
        return first.status_code, first.parsed, again.status_code, again.parsed
"""


@pytest.mark.slow
def test_a_generated_client_does_a_round_trip(tmp_path: Path, daemon: Daemon) -> None:
    package = tmp_path / "aster_generated"
    bin_dir = Path(sys.executable).parent
    config = tmp_path / "generator.yaml"
    # markdown bodies as raw bytes (it has no text/*); no formatter run over what it writes
    config.write_text(
        "content_type_overrides:\n  text/markdown: application/octet-stream\npost_hooks: []\n"
    )
    done = subprocess.run(
        [
            str(bin_dir / "openapi-python-client"),
            "generate",
            "--path",
            str(REPO / "openapi" / "openapi.json"),
            "--output-path",
            str(package),
            "--meta",
            "none",
            "--config",
            str(config),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout, done.stdout  # nothing in the document was skipped
    assert compileall.compile_dir(str(package), quiet=1)
    (tmp_path / "usage.py").write_text(USAGE)
    # strict everywhere; in the generated package, the generator's casts of a list it has
    # already narrowed (its arrays of any JSON, below the levels JsonValue spells out)
    # are redundant, which says nothing of the document's types
    (tmp_path / "mypy.ini").write_text(
        "[mypy]\nstrict = True\n\n[mypy-aster_generated.*]\ndisable_error_code = redundant-cast\n"
    )
    checked = subprocess.run(
        [str(bin_dir / "mypy"), "--strict", "--no-incremental", "aster_generated", "usage.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout[-4000:]

    sys.path.insert(0, str(tmp_path))
    try:
        generated = importlib.import_module("aster_generated")
        sessions = importlib.import_module("aster_generated.api.sessions")
        models = importlib.import_module("aster_generated.models")
        create, append, listing, events = (
            importlib.import_module(f"aster_generated.api.sessions.{name}")
            for name in ("sessions_create", "sessions_append", "sessions_list", "sessions_events")
        )
        assert sessions is not None
        with generated.Client(base_url=daemon.url) as client:
            header = create.sync(client=client, body=models.SessionIn(repo_root="/srv/generated"))
            assert isinstance(header, models.SessionHeader), header
            turn = models.UserMessage(type_="message", role="user", content="hello from a stranger")
            appended = append.sync(header.id, client=client, body=turn)
            assert isinstance(appended, models.AppendOut), appended
            assert (appended.first_seq, appended.last_seq) == (1, 1)
            batch = [
                models.AssistantMessage(type_="message", role="assistant", content="hi"),
                models.TitleEvent(type_="title", title="Greetings"),
            ]
            assert append.sync(header.id, client=client, body=batch).last_seq == 3
            page = listing.sync(client=client, repo_root="/srv/generated")
            assert isinstance(page, models.SessionPage)
            assert [(s.id, s.events, s.title) for s in page.items] == [(header.id, 3, "Greetings")]
            read = events.sync(header.id, client=client)
            assert isinstance(read, models.EventPage)
            contents = [e.additional_properties.get("content") for e in read.events]
            assert contents == ["hello from a stranger", "hi", None]
            missing = events.sync("01J0000000000000000000ABCD", client=client)
            assert isinstance(missing, models.Problem) and missing.status == 404
        usage = importlib.import_module("usage")
        status, first, again_status, again = usage.retried(daemon.url)
        assert (status, again_status) == (201, 200)  # a replay is declared, not unexpected
        assert (first.first_seq, first.last_seq) == (again.first_seq, again.last_seq) == (1, 1)
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("aster_generated") or m == "usage"]:
            del sys.modules[name]
