"""Configuration: flags, then ASTER_* variables, then `<home>/config.toml`, then defaults;
every bad value refused at start with its name, value and source."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from aster_persist.cli import main
from aster_persist.settings import Settings, SettingsError, load_settings

from ..conftest import free_port


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("ASTER_"):
            monkeypatch.delenv(name)


def test_the_file_fills_in_what_flags_and_the_environment_leave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        'port = 4700\nASTER_DURABILITY = "interval"\nallowed_hosts = ["dev.box"]\n'
        "Heartbeat_Seconds = 2.5\n"
    )
    monkeypatch.setenv("ASTER_HOME", str(home))
    monkeypatch.setenv("ASTER_DURABILITY", "none")
    settings = load_settings()
    assert settings.port == 4700  # from the file
    assert settings.durability == "none"  # the environment beats the file
    assert settings.allowed_hosts == ["dev.box"] and settings.heartbeat_seconds == 2.5
    assert load_settings(port=4800).port == 4800  # a flag beats both
    assert Settings().port == 4627  # the class alone knows no file


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("port = 99999\n", "ASTER_PORT=99999 in"),
        ('durability = "sometimes"\n', "ASTER_DURABILITY='sometimes' in"),
        ("prot = 1\n", "unknown setting 'prot'"),
        ('home = "/elsewhere"\n', "home cannot be set"),
        ("port = \n", "cannot be read"),
    ],
)
def test_a_bad_file_is_refused_naming_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(text)
    monkeypatch.setenv("ASTER_HOME", str(home))
    with pytest.raises(SettingsError, match=message) as caught:
        load_settings()
    assert "config.toml" in str(caught.value)


def test_serve_starts_with_the_file_and_refuses_a_bad_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    port = free_port()
    (home / "config.toml").write_text(f"port = {port}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASTER_")}
    env["ASTER_HOME"] = str(home)
    serve = [sys.executable, "-m", "aster_persist", "serve"]
    proc = subprocess.Popen(serve, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:  # it listens on the port the file names
            assert proc.poll() is None and time.monotonic() < deadline
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()

    (home / "config.toml").write_text('log_level = "loud"\n')
    done = subprocess.run(serve, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "ASTER_LOG_LEVEL='loud'" in done.stderr and "config.toml" in done.stderr


def test_serve_help_lists_every_setting_and_default(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    with pytest.raises(SystemExit) as done:
        main(["serve", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for name, field in Settings.model_fields.items():
        default = field.get_default(call_default_factory=True)
        shown = str(default).lower() if isinstance(default, bool) else default
        shown = "-" if shown in (None, []) else shown
        assert f"ASTER_{name.upper()} (default: {shown})" in text, name
