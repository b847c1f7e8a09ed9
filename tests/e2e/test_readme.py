"""The README's quick-start curl block works as written against a real daemon."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import httpx
import orjson
import pytest

from ..conftest import Daemon

README = Path(__file__).parents[2] / "README.md"


def test_readme_curl_examples(daemon: Daemon) -> None:
    if shutil.which("curl") is None:
        pytest.fail("curl is needed to run the README's examples")
    text = README.read_text()
    block = re.search(r"works as written\):\n\n```sh\n(.*?)```", text, re.S)
    assert block is not None, "the README's curl block is missing"
    script = block.group(1).replace("localhost:4627", f"127.0.0.1:{daemon.port}")
    script = "set -euo pipefail\n" + script.replace("curl -s", "curl -sf") + '\necho "SID=$SID"\n'
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr + done.stdout
    sid = done.stdout.strip().rsplit("SID=", 1)[1]
    session = httpx.get(f"{daemon.url}/v1/sessions/{sid}").json()
    assert (session["title"], session["events"], session["state"]) == ("main.rs tour", 5, "ok")
    messages = httpx.get(
        f"{daemon.url}/v1/sessions/{sid}/messages", params={"view": "context"}
    ).json()
    assert [m["role"] for m in messages["messages"]] == ["user", "assistant", "tool", "assistant"]
    hits = httpx.get(f"{daemon.url}/v1/search", params={"q": "what is the entrypoint"}).json()
    assert (hits["items"][0]["session_id"], hits["items"][0]["seq"]) == (sid, 4)
    exported = httpx.get(f"{daemon.url}/v1/sessions/{sid}/export").content
    assert orjson.loads(exported.splitlines()[2])["idempotency_key"] == "turn-1"


def test_readme_settings_table_matches_the_settings() -> None:
    """Every setting is in the README's table with its default, and nothing else is."""
    from aster_persist.settings import Settings

    rows = dict(re.findall(r"^\| `ASTER_([A-Z_]+)` \| ([^|]+) \|", README.read_text(), re.M))
    fields = Settings.model_fields
    assert set(rows) == {name.upper() for name in fields}
    for name, field in fields.items():
        default = field.default
        if default is None or not isinstance(default, (bool, int, float, str)):
            continue  # documented in words (derived, or empty)
        shown = str(default).lower() if isinstance(default, bool) else str(default)
        if isinstance(default, float) and default.is_integer():
            shown = str(int(default))
        assert rows[name.upper()].strip() == f"`{shown}`", name


@pytest.mark.slow
def test_readme_cli_examples(home: Path, tmp_path: Path) -> None:
    """The command line section's two blocks, as written: the first against a running
    daemon from inside a repository, the second with the daemon stopped."""
    import os
    import sys

    text = README.read_text()
    section = text.split("## Command line", 1)[1].split("\n## ", 1)[0]
    online, offline = re.findall(r"```sh\n(.*?)```", section, re.S)[:2]
    user = tmp_path / "user"
    (user / "src" / "app" / ".git").mkdir(parents=True)
    claude = user / ".claude" / "projects" / "-src-app"
    claude.mkdir(parents=True)
    fixture = (
        Path(__file__).parents[1] / "fixtures" / "claude-code" / "spotter" / "tool_heavy.jsonl"
    )
    shutil.copy(fixture, claude / fixture.name)
    env = {
        **os.environ,
        "HOME": str(user),
        "ASTER_HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    daemon = Daemon(home)
    env["ASTER_URL"] = daemon.url
    daemon.start()
    try:
        script = "set -euo pipefail\n" + online + '\necho "SID=$sid"\n'
        done = subprocess.run(
            ["bash", "-c", script], capture_output=True, text=True, timeout=180, env=env
        )
        assert done.returncode == 0, done.stderr + done.stdout
        sid = done.stdout.strip().rsplit("SID=", 1)[1]
        session = httpx.get(f"{daemon.url}/v1/sessions/{sid}").json()
        assert session["title"] == "Flaky websocket" and session["repo_root"] == str(
            user / "src" / "app"
        )
        assert (user / "chat.json").exists()
        root = {"repo_root": str(user / "src" / "app")}

        def names(**params: str) -> set[str]:
            found = httpx.get(f"{daemon.url}/v1/memory/blocks", params=params).json()
            return {b["name"] for b in found["items"]}

        assert "database" in names(**root)  # --repo-root . in the repository
        assert {"release-success", "deploy-failure"} <= names()  # global
        listed = httpx.get(f"{daemon.url}/v1/sessions").json()["items"]
        assert [s["source_tool"] for s in listed].count("claude-code") == 1  # imported once
    finally:
        assert daemon.stop() == 0
    done = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + offline],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert "all well" in done.stdout and "reindexed" in done.stdout


def test_the_quick_start_says_where_the_command_is() -> None:
    """After `make run`, the README says where `aster-persist` is, and it is there: the
    virtual environment the Makefile makes (the one these tests run in)."""
    import sys

    quick = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "`.venv/bin/aster-persist`" in quick
    makefile = (README.parent / "Makefile").read_text()
    assert "VENV := .venv" in makefile and "$(BIN)/aster-persist serve" in makefile
    assert Path(sys.executable).with_name("aster-persist").is_file()
