"""The registry is where the format names are spelled: the API's ``format`` parameter,
the CLI's ``--format`` and the README read them from it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from aster_persist import importers
from aster_persist.importers import CHOICES, FORMATS, REGISTRY, ImportProblem, read

from ..test_imports import is_server, loaded_by

README = Path(__file__).parents[2] / "README.md"
MODULES = (
    importers.native,
    importers.claude_code,
    importers.codex,
    importers.openai_chat,
    importers.swe_agent,
    importers.chatgpt,
)


def test_each_format_module_is_registered_once() -> None:
    assert FORMATS == ("native", "claude-code", "codex", "openai-chat", "swe-agent", "chatgpt")
    assert [f.name for f in REGISTRY] == list(FORMATS)
    assert [m.FORMAT for m in MODULES] == list(REGISTRY)
    assert [m.NAME for m in MODULES] == list(FORMATS)
    assert ("auto", *FORMATS) == CHOICES
    for entry in REGISTRY:
        assert entry.description and entry.description == entry.description.strip()


def test_the_openapi_import_format_is_the_registry(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    parameters = document["paths"]["/v1/sessions/import"]["post"]["parameters"]
    [schema] = [p["schema"] for p in parameters if p["name"] == "format"]
    assert schema["enum"] == list(CHOICES)
    assert schema["default"] == "auto"


def test_an_unlisted_format_is_refused_by_the_api(client: TestClient) -> None:
    r = client.post("/v1/sessions/import", params={"format": "openai"}, content=b"[]")
    assert r.status_code == 422
    [error] = r.json()["errors"]
    assert (error["loc"], error["type"]) == ("query.format", "literal_error")
    choices = ", ".join(f"'{c}'" for c in CHOICES[:-1]) + f" or '{CHOICES[-1]}'"
    assert error["msg"] == f"Input should be {choices}"


def test_the_cli_import_help_lists_the_registry() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aster_persist", "sessions", "import", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
    )
    assert done.returncode == 0, done.stderr
    found = re.search(r"--format\s+\S+\s+(.+?)\.\s", done.stdout)
    assert found is not None, done.stdout
    listed = re.split(r", | or ", found.group(1))
    assert listed == list(CHOICES)


def test_the_readme_names_the_registry() -> None:
    found = re.search(r"named with `format=([^`]+)`", README.read_text())
    assert found is not None, "the README's list of import formats is missing"
    assert found.group(1).replace("\n", "").split("|") == list(FORMATS)


def test_the_registry_loads_no_server_module() -> None:
    """The CLI reads the names from here, and stays a client of the daemon."""
    loaded = loaded_by("aster_persist.importers")
    # an import refused is one of the error tree's (no framework in it)
    loaded = [m for m in loaded if m != "aster_persist.errors"]
    server = [m for m in loaded if is_server(m)]
    assert server == [], server


@pytest.mark.parametrize("name", ["bogus", "openai", ""])
def test_an_unknown_name_is_refused_with_every_choice(name: str) -> None:
    with pytest.raises(ImportProblem) as caught:
        read(b"[]", name)
    assert caught.value.detail == (
        f"unknown format {name!r}; use one of auto, native, claude-code, codex, openai-chat, "
        "swe-agent, chatgpt"
    )


def test_a_file_of_no_format_names_every_format() -> None:
    with pytest.raises(ImportProblem) as caught:
        read(b'{"nothing": "known"}\n')
    assert caught.value.detail == (
        "line 1: not a format this service reads (native, claude-code, codex, openai-chat, "
        "swe-agent, chatgpt); name it with ?format= if it is one of them"
    )
