"""Every file the command line writes for the user, outside the data home, keeps what is
theirs, the same way for each: Claude Code's settings, Codex's config.toml, AGENTS.md,
an export, a service unit, the OpenAPI document. Each is run as the user runs it (the
installed command, a real daemon where one is needed) on real files: its mode (0600 and
0400, holding a key) and owner stay, a link is refused naming what it leads to and both
are left as they were, a write is all or nothing, a second install changes nothing."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from ..conftest import Daemon, user

SCRIPT = str(Path(sys.executable).with_name("aster-persist"))
SETTINGS = {
    "env": {"ANTHROPIC_API_KEY": "sk-ant-api03-" + "k" * 40},
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
}


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SCRIPT, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Daemon:
    daemon = Daemon(tmp_path_factory.mktemp("outside") / "home").start()
    sid = httpx.post(f"{daemon.url}/v1/sessions", json={"repo_root": "/srv/outside"}).json()["id"]
    httpx.post(f"{daemon.url}/v1/sessions/{sid}/events", json=user("hello"))
    daemon.env["SID"] = sid
    yield daemon  # type: ignore[misc]
    daemon.kill()


# what each writer writes: (the file's name, its first content, the command writing it)
Writer = Callable[[Path, Daemon], list[str]]
WRITERS: dict[str, tuple[str, bytes, Writer]] = {
    "claude settings": (
        "settings.json",
        json.dumps(SETTINGS, indent=2).encode(),
        lambda path, d: ["hooks", "claude", "--install", "--settings", str(path)],
    ),
    "codex config": (
        "config.toml",
        b'model = "o3"\n[shell_environment_policy]\ninherit = "all"\n',
        lambda path, d: ["hooks", "codex", "--install", "--config", str(path)],
    ),
    "AGENTS.md": (
        "AGENTS.md",
        b"# Agents\n\nRun make test.\n",
        lambda path, d: ["hooks", "codex-instructions", "--file", str(path), "--url", d.url],
    ),
    "export": (
        "out.jsonl",
        b"old export\n",
        lambda path, d: ["sessions", "export", d.env["SID"], "-o", str(path), "--url", d.url],
    ),
    "openapi": (
        "openapi.json",
        b"{}\n",
        lambda path, d: ["openapi", "--output", str(path)],
    ),
}


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o640])
@pytest.mark.parametrize("what", sorted(WRITERS))
def test_a_write_keeps_the_files_mode_and_owner(
    server: Daemon, tmp_path: Path, what: str, mode: int
) -> None:
    name, content, command = WRITERS[what]
    path = tmp_path / name
    path.write_bytes(content)
    os.chmod(path, mode)
    before = path.stat()
    done = run(*command(path, server))
    assert done.returncode == 0, done.stderr
    after = path.stat()
    assert path.read_bytes() != content  # written
    assert stat.S_IMODE(after.st_mode) == mode and (after.st_uid, after.st_gid) == (
        before.st_uid,
        before.st_gid,
    )
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


@pytest.mark.parametrize("what", sorted(WRITERS))
def test_a_link_is_refused_naming_what_it_leads_to_and_both_are_left(
    server: Daemon, tmp_path: Path, what: str
) -> None:
    name, content, command = WRITERS[what]
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / name
    real.write_bytes(content)
    os.chmod(real, 0o600)
    link = tmp_path / "config" / name
    link.parent.mkdir()
    link.symlink_to(real)
    done = run(*command(link, server))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "symbolic link" in done.stderr and str(real) in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) <= 2
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_bytes() == content and stat.S_IMODE(real.stat().st_mode) == 0o600


def test_new_files_are_private_when_they_may_hold_secrets(server: Daemon, tmp_path: Path) -> None:
    """A new settings file, config.toml or export is the user's alone (0600): settings
    hold keys, transcripts may; a new AGENTS.md or unit follows the umask."""
    for what in ("claude settings", "codex config", "export"):
        name, _content, command = WRITERS[what]
        path = tmp_path / what.replace(" ", "-") / name
        path.parent.mkdir()
        assert run(*command(path, server)).returncode == 0
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, what


def test_a_second_install_says_so_and_leaves_the_file_byte_for_byte(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps(SETTINGS, indent=2))
    os.chmod(settings, 0o600)
    first = run("hooks", "claude", "--install", "--settings", str(settings))
    assert first.returncode == 0 and "installed in" in first.stderr
    written, when = settings.read_bytes(), settings.stat().st_mtime_ns
    second = run("hooks", "claude", "--install", "--settings", str(settings))
    assert second.returncode == 0 and "already installed in" in second.stderr
    assert settings.read_bytes() == written and settings.stat().st_mtime_ns == when
    kept = json.loads(written)
    assert kept["env"] == SETTINGS["env"] and kept["permissions"] == SETTINGS["permissions"]


def test_an_export_to_a_folder_that_is_not_there_is_a_sentence(
    server: Daemon, tmp_path: Path
) -> None:
    target = tmp_path / "no" / "such" / "dir" / "x.jsonl"
    done = run("sessions", "export", server.env["SID"], "-o", str(target), "--url", server.url)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        f"aster-persist: cannot write {target}: there is no folder {target.parent}"
    )
    assert not (tmp_path / "no").exists()


def test_a_pipe_in_place_of_a_settings_file_is_refused_without_blocking(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    os.mkfifo(settings)
    done = run("hooks", "claude", "--install", "--settings", str(settings))
    assert done.returncode == 1 and "not a regular file" in done.stderr
    assert stat.S_ISFIFO(settings.lstat().st_mode)


def test_a_service_unit_keeps_its_mode_and_refuses_a_link(tmp_path: Path) -> None:
    config = tmp_path / "xdg"
    env = {"XDG_CONFIG_HOME": str(config)}
    done = run("service", "install", "--kind", "systemd", env=env)
    assert done.returncode == 0, done.stderr
    unit = config / "systemd" / "user" / "aster-persist.service"
    os.chmod(unit, 0o600)
    assert run("service", "install", "--kind", "systemd", env=env).returncode == 0
    assert stat.S_IMODE(unit.stat().st_mode) == 0o600
    real = tmp_path / "dotfiles.service"
    real.write_bytes(unit.read_bytes())
    unit.unlink()
    unit.symlink_to(real)
    done = run("service", "install", "--kind", "systemd", env=env)
    assert done.returncode == 1 and "symbolic link" in done.stderr and unit.is_symlink()
