"""A client generated from `openapi/openapi.json` by an independent generator
(openapi-python-client) compiles, and does create → append → list → read against a real
daemon: the document is complete enough to program against without this project's code."""

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


@pytest.mark.slow
def test_a_generated_client_does_a_round_trip(tmp_path: Path, daemon: Daemon) -> None:
    package = tmp_path / "aster_generated"
    bin_dir = Path(sys.executable).parent
    config = tmp_path / "generator.yaml"  # markdown bodies as raw bytes: it has no text/*
    config.write_text("content_type_overrides:\n  text/markdown: application/octet-stream\n")
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
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("aster_generated")]:
            del sys.modules[name]
