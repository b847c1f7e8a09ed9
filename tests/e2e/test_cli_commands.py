"""The command line lost no command when it was split into one module per group:
``aster-persist --help`` (the installed script, and ``python -m aster_persist``) and each
group's ``--help`` list exactly the commands they listed before the split, in order."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# Read from `aster-persist --help`, `sessions --help` and `memory --help` before the split
# (and `follow`, `hooks` and `mcp`, added since; `hook`, what hooks run, is hidden).
BEFORE = {
    (): [
        *("serve", "reindex", "search", "du", "stats", "mcp", "doctor", "openapi"),
        *("sessions", "memory", "follow", "hooks", "service", "journal", "team"),
    ],  # journal: a group since revert; team, stats: added since
    ("service",): ["install", "uninstall"],
    ("team",): ["status"],
    ("journal",): ["revert"],
    ("hooks",): ["claude", "codex", "codex-instructions"],
    ("sessions",): [
        *("list", "show", "latest", "rename", "delete", "restore", "export", "prune"),
        *("compress", "import", "create", "append"),
    ],
    ("memory",): [
        *("list", "show", "add", "remove", "archive", "restore", "context", "search"),
        *("consolidate", "success", "failure"),
    ],
}

SCRIPT = Path(sys.executable).with_name("aster-persist")


def listed(help_text: str) -> list[str]:
    """The command names in the Commands box of a help page."""
    box = help_text.split(" Commands ", 1)[1].split("╰", 1)[0]
    return re.findall(r"^│ (\S+)", box, flags=re.MULTILINE)


def help_of(*argv: str) -> str:
    env = {**os.environ, "COLUMNS": "100"}
    done = subprocess.run(
        [*argv, "--help"], capture_output=True, text=True, env=env, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("group", list(BEFORE), ids=lambda g: " ".join(g) or "top")
def test_help_lists_the_same_commands_as_before_the_split(group: tuple[str, ...]) -> None:
    assert listed(help_of(str(SCRIPT), *group)) == BEFORE[group]


def test_python_m_lists_the_same_commands_as_the_script() -> None:
    assert listed(help_of(sys.executable, "-m", "aster_persist")) == BEFORE[()]


def test_every_command_has_its_help() -> None:
    """Each command still loads and answers ``--help`` (run in process: one per command)."""
    from typer.testing import CliRunner

    from aster_persist.cli import app

    runner = CliRunner()
    for group, names in BEFORE.items():
        for name in names:
            if (name,) in BEFORE:
                continue  # a group: checked above
            result = runner.invoke(app, [*group, name, "--help"], prog_name="aster-persist")
            assert result.exit_code == 0, (group, name, result.output)
            assert f"aster-persist {' '.join([*group, name])}" in result.output
