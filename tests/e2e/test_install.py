"""Installing for a person's everyday use: ``pipx install .`` and ``uv tool install .``
give a working
``aster-persist`` in an environment of its own with only what the daemon needs, ``make
run`` installs no test tools, and ``service install`` writes a systemd user unit or a
launchd agent (and ``uninstall`` takes it away)."""

from __future__ import annotations

import json
import os
import plistlib
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ..conftest import free_port

REPO = Path(__file__).resolve().parents[2]
SCRIPT = str(Path(sys.executable).with_name("aster-persist"))


def source_copy(into: Path) -> Path:
    """What an install reads (so a build never writes into the checkout)."""
    into.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "models.txt"):
        shutil.copy2(REPO / name, into / name)
    shutil.copytree(
        REPO / "service",
        into / "service",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
    )
    return into


@pytest.mark.parametrize("installer", ["pipx", "uv"])
def test_a_tool_install_gives_a_working_command_without_the_test_tools(
    tmp_path: Path, installer: str
) -> None:
    """`pipx install .` and `uv tool install .`, each into a place of its own."""
    env = {
        **os.environ,
        "PIPX_HOME": str(tmp_path / "tools"),
        "PIPX_BIN_DIR": str(tmp_path / "bin"),
        "PIPX_MAN_DIR": str(tmp_path / "man"),
        "UV_TOOL_DIR": str(tmp_path / "tools"),
        "UV_TOOL_BIN_DIR": str(tmp_path / "bin"),
    }
    source = source_copy(tmp_path / "src")
    install = (
        [sys.executable, "-m", "pipx", "install", str(source)]
        if installer == "pipx"
        else [str(Path(sys.executable).with_name("uv")), "tool", "install", str(source)]
    )
    done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    command = tmp_path / "bin" / "aster-persist"
    version = subprocess.run([command, "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("aster-persist ")
    tools = tmp_path / "tools"  # pipx keeps venvs/<name>, uv <name>
    (python,) = [
        *tools.glob("venvs/aster-persist/bin/python"),
        *tools.glob("aster-persist/bin/python"),
    ]
    for tool in ("pytest", "playwright", "schemathesis"):
        absent = subprocess.run([python, "-c", f"import {tool}"], capture_output=True)
        assert absent.returncode != 0, f"{tool} was installed"

    port = free_port()
    daemon = subprocess.Popen(
        [command, "serve", "--port", str(port), "--home", str(tmp_path / "home")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and daemon.poll() is None, "never ready"
            time.sleep(0.1)
        made = httpx.post(f"http://127.0.0.1:{port}/v1/sessions", json={"repo_root": "/srv/x"})
        assert made.status_code == 201
    finally:
        daemon.terminate()
        daemon.wait(30)


def test_make_run_installs_the_daemon_alone() -> None:
    planned = subprocess.run(
        ["make", "-n", "run", "VENV=/nonexistent/venv"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    installs = [line for line in planned.splitlines() if "pip install" in line and "-e" in line]
    assert installs and all("[test]" not in line for line in installs), planned
    assert "aster-persist serve" in planned


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, env=env, timeout=60)


def test_service_install_writes_a_unit_and_uninstall_takes_it_away(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    shown = run("service", "install", "--kind", "systemd", "--print", env=env)
    assert shown.returncode == 0 and f"ExecStart={sys.executable} -m aster_persist serve" in (
        shown.stdout
    )
    unit = tmp_path / "config" / "systemd" / "user" / "aster-persist.service"
    assert not unit.exists()  # --print writes nothing

    done = run("service", "install", "--kind", "systemd", "--home", str(tmp_path / "d"), env=env)
    assert done.returncode == 0 and "systemctl --user enable --now aster-persist" in done.stderr
    text = unit.read_text()
    assert (
        f'Environment="ASTER_HOME={tmp_path / "d"}"' in text and "WantedBy=default.target" in text
    )
    odd = run(
        "service", "install", "--print", "--kind", "systemd", "--home", "/srv/a b%c$d", env=env
    )
    assert 'Environment="ASTER_HOME=/srv/a b%%c$$d"' in odd.stdout  # systemd reads it back whole
    from_env = run(
        "service", "install", "--print", "--kind", "systemd", env={**env, "ASTER_HOME": "/srv/h"}
    )
    assert 'Environment="ASTER_HOME=/srv/h"' in from_env.stdout  # the home the CLI uses
    again = run("service", "install", "--kind", "systemd", "--json", env=env)  # again: ours
    assert json.loads(again.stdout)["path"] == str(unit)

    agent = tmp_path / "Library" / "LaunchAgents" / "dev.aster-persist.daemon.plist"
    assert run("service", "install", "--kind", "launchd", env=env).returncode == 0
    loaded = plistlib.loads(agent.read_bytes())
    assert loaded["ProgramArguments"] == [sys.executable, "-m", "aster_persist", "serve"]
    assert loaded["RunAtLoad"] is True

    for kind, path in (("systemd", unit), ("launchd", agent)):
        gone = run("service", "uninstall", "--kind", kind, "--json", env=env)
        assert json.loads(gone.stdout) == {"kind": kind, "removed": str(path)}
        assert not path.exists()
        assert run("service", "uninstall", "--kind", kind, env=env).returncode == 4

    unit.write_text("[Service]\nExecStart=/usr/bin/something-else\n")  # a person's own
    refused = run("service", "install", "--kind", "systemd", env=env)
    assert refused.returncode == 1 and "not ours" in refused.stderr
    assert unit.read_text() == "[Service]\nExecStart=/usr/bin/something-else\n"
    assert run("service", "uninstall", "--kind", "systemd", env=env).returncode == 1
    assert unit.exists()


@pytest.mark.slow
def test_every_install_line_of_the_readme_works_from_what_exists(tmp_path: Path) -> None:
    """The package is not on PyPI: no line of the README installs it by name (whoever
    registered the name would run their code on the reader's machine). Every `pip`
    line it shows (each extra from the checkout, then a wheel built there and installed
    with an extra) runs as written in a fresh virtual environment, and gives what it
    says: the adapters, search by meaning and the team's client import."""
    readme = (REPO / "README.md").read_text()
    assert not re.search(r"(pip|pipx|uv tool) install +['\"]?aster-persist", readme)
    lines = [
        line.split("  #", 1)[0].strip()
        for line in readme.splitlines()
        if re.match(r"pip (install|wheel) ", line)
    ]
    extras = set(re.findall(r"pip install '\.\[([a-z-]+)\]'", readme))
    assert extras == {"semantic", "openai-agents", "langchain", "langgraph", "team"}, lines
    assert any(line.startswith("pip wheel") for line in lines), lines
    source = source_copy(tmp_path / "src")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = {
        **os.environ,
        "PATH": f"{venv / 'bin'}:{os.environ['PATH']}",
        "VIRTUAL_ENV": str(venv),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    env.pop("PYTHONPATH", None)  # only what the lines install
    for line in lines:
        done = subprocess.run(
            ["bash", "-c", f"set -euo pipefail; {line} --quiet"],
            cwd=source,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, (line, done.stdout[-2000:], done.stderr[-4000:])
    imports = (
        "import aster_persist.integrations.openai_agents, aster_persist.integrations.langchain,"
        " aster_persist.integrations.langgraph, aster_persist;"
        " from aster_persist.index import encoder; encoder.load();"  # the model, checked
        " import nats;"  # the team's client
        " print(aster_persist.__file__)"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", imports],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(str(venv))  # installed there, not read from the checkout
