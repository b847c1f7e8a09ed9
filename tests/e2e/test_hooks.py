"""Claude Code's hooks against a real daemon, fed the payloads Claude Code documents for
each event (session id, transcript path, working folder, event name and the event's own
fields): memory at the start of a session, the transcript brought in after each turn
with nothing copied twice, a sub-agent linked to its parent, and a hook that never
breaks the agent. And the settings file they are installed in keeps what it had."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from aster_persist.cli.codex_hooks import BEGIN, END, notify_line
from aster_persist.importers.codex import FORMAT as CODEX
from aster_persist.importers.lines import read_whole

from ..conftest import FIXTURES, Daemon, free_port

PARENT = FIXTURES / "claude-code" / "spotter" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
CHILD = PARENT.with_suffix("") / "subagents" / "agent-aac57f5.jsonl"
SESSION = PARENT.stem


def hook(payload: Any, url: str, *flags: str) -> subprocess.CompletedProcess[bytes]:
    data = payload if isinstance(payload, bytes) else orjson.dumps(payload)
    return subprocess.run(
        [sys.executable, "-m", "aster_persist", "hook", "claude-code", "--url", url, *flags],
        input=data,
        capture_output=True,
        timeout=120,
    )


def payload(event: str, transcript: Path, cwd: Path, **more: Any) -> dict[str, Any]:
    """What Claude Code sends every hook, and the event's own fields."""
    return {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
        **more,
    }


def sessions(url: str) -> list[dict[str, Any]]:
    return list(httpx.get(f"{url}/v1/sessions").json()["items"])


def test_the_hooks_give_memory_and_bring_each_turn_in(daemon: Daemon, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    remembered = httpx.post(
        f"{daemon.url}/v1/memory/blocks",
        params={"repo_root": str(project)},
        json={"name": "build", "content": "Build with `make all`; the tests need Chromium."},
    )
    assert remembered.status_code == 201, remembered.text
    transcript = tmp_path / "claude" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    records = PARENT.read_bytes().splitlines(keepends=True)

    # a session starts, in a folder of the project: its memory, as context for Claude
    started = hook(
        payload("SessionStart", transcript, project / "src", source="startup"), daemon.url
    )
    assert started.returncode == 0, started.stderr
    said = orjson.loads(started.stdout)["hookSpecificOutput"]
    assert said["hookEventName"] == "SessionStart"
    assert "Build with `make all`" in said["additionalContext"]

    # after each turn, the transcript as it stands: one session, grown, never copied
    transcript.write_bytes(b"".join(records[:400]))
    stop = payload("Stop", transcript, project, stop_hook_active=False)
    assert hook(stop, daemon.url).returncode == 0
    [first] = sessions(daemon.url)
    transcript.write_bytes(b"".join(records))
    assert hook(stop, daemon.url).returncode == 0
    [grown] = sessions(daemon.url)
    assert grown["id"] == first["id"] and grown["events"] > first["events"]
    compact = payload("PreCompact", transcript, project, trigger="auto", custom_instructions="")
    assert hook(compact, daemon.url).returncode == 0
    assert sessions(daemon.url) == [grown]  # nothing new, nothing written

    # a sub-agent stops: its own transcript, a child of the session that ran it
    sub = payload(
        "SubagentStop",
        transcript,
        project,
        stop_hook_active=False,
        agent_id="aac57f5",
        agent_transcript_path=str(CHILD),
    )
    done = hook(sub, daemon.url)
    assert done.returncode == 0, done.stderr
    child = next(s for s in sessions(daemon.url) if s["id"] != grown["id"])
    assert child["parent_id"] == grown["id"] and child["parent_tool_call_id"]


def test_a_hook_never_breaks_the_agent(daemon: Daemon, tmp_path: Path) -> None:
    gone = f"http://127.0.0.1:{free_port()}"
    stop = payload("Stop", PARENT, tmp_path, stop_hook_active=False)
    for given, url in (
        (stop, gone),  # no daemon
        (b"{not json", daemon.url),
        (payload("Stop", tmp_path / "missing.jsonl", tmp_path), daemon.url),
        (payload("Notification", PARENT, tmp_path), daemon.url),
        ({**stop, "transcript_path": None}, daemon.url),
    ):
        quiet = hook(given, url)
        assert quiet.returncode == 0 and quiet.stdout == b""
        assert quiet.stderr.startswith(b"aster-persist hook: "), quiet.stderr
        assert hook(given, url, "--strict").returncode == 1
    assert sessions(daemon.url) == []  # and nothing half-written


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aster_persist", "hooks", "claude", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )


def test_installing_the_hooks_keeps_what_the_settings_had(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {
        "model": "opus",
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        },
    }
    settings.write_bytes(orjson.dumps(theirs))
    printed = orjson.loads(run_cli().stdout)["hooks"]
    assert sorted(printed) == ["PreCompact", "SessionStart", "Stop", "SubagentStop"]
    ours = printed["Stop"][0]["hooks"][0]["command"]
    assert ours.endswith("-m aster_persist hook claude-code")

    for _twice in range(2):
        done = run_cli("--install", "--settings", str(settings))
        assert done.returncode == 0, done.stderr
    installed = orjson.loads(settings.read_bytes())
    assert installed["model"] == "opus"
    assert installed["hooks"]["PreToolUse"] == theirs["hooks"]["PreToolUse"]
    commands = [h["command"] for g in installed["hooks"]["Stop"] for h in g["hooks"]]
    assert commands == ["notify-send done", ours]  # theirs kept, ours once
    for event in ("SessionStart", "SubagentStop", "PreCompact"):
        assert [h["command"] for g in installed["hooks"][event] for h in g["hooks"]] == [ours]

    assert run_cli("--uninstall", "--settings", str(settings)).returncode == 0
    assert orjson.loads(settings.read_bytes()) == theirs

    settings.write_text("{ not json")
    refused = run_cli("--install", "--settings", str(settings))
    assert refused.returncode == 1 and "left as it is" in refused.stderr
    assert settings.read_text() == "{ not json"


# Codex: its notify program, the line of config.toml that sets it, and AGENTS.md.

ROLLOUT = (
    FIXTURES
    / "codex"
    / "codemie-code"
    / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
)
THREAD = "019e1625-789d-76c0-80ab-3724b5ddb799"
FIRST_TURN = 19  # the rollout's lines up to the first turn's task_complete


@functools.cache
def notify_program() -> list[str]:
    """The notify program, read from the line `hooks codex` prints for config.toml (once:
    the line is the same every time)."""
    printed = subprocess.run(
        [sys.executable, "-m", "aster_persist", "hooks", "codex"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    return list(tomllib.loads(printed)["notify"])


def codex_notify(
    turn: Any, url: str, codex_home: Path, *flags: str
) -> subprocess.CompletedProcess[bytes]:
    """What Codex does after a turn: the notify program, the turn as its last argument."""
    given = turn if isinstance(turn, str) else orjson.dumps(turn).decode()
    env = {**os.environ, "ASTER_URL": url, "CODEX_HOME": str(codex_home)}
    return subprocess.run(
        [*notify_program(), *flags, given], capture_output=True, env=env, timeout=120
    )


def turn_done(thread: str = THREAD, **more: Any) -> dict[str, Any]:
    """The payload Codex gives its notify program when a turn is complete."""
    return {
        "type": "agent-turn-complete",
        "thread-id": thread,
        "turn-id": "019e1626-0000-7000-8000-000000000001",
        "cwd": "/Users/Sample_User/repos/codemie-ai/codemie-code",
        "input-messages": ["show tools"],
        "last-assistant-message": "Here are the tools.",
        **more,
    }


def events_of(url: str, session_id: str) -> list[dict[str, Any]]:
    page = httpx.get(f"{url}/v1/sessions/{session_id}/events", params={"limit": 1000})
    assert page.status_code == 200, page.text
    return list(page.json()["events"])


def user_texts(events: list[dict[str, Any]]) -> list[str]:
    return [str(e.get("content")) for e in events if e.get("role") == "user"]


def test_codex_notify_brings_each_turn_in_once(daemon: Daemon, tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    rollout = codex_home / "sessions" / "2026" / "05" / "11" / ROLLOUT.name
    rollout.parent.mkdir(parents=True)
    records = ROLLOUT.read_bytes().splitlines(keepends=True)
    [first] = read_whole(CODEX, b"".join(records[:FIRST_TURN]))
    [whole] = read_whole(CODEX, b"".join(records))
    stale = codex_home / "sessions" / "2026" / "05" / "10" / ROLLOUT.name
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"".join(records[:FIRST_TURN]))
    os.utime(stale, (1, 1))  # an older rollout of the same thread: not the one read

    # the first turn is done; Codex is still writing the next line
    rollout.write_bytes(b"".join(records[:FIRST_TURN]) + records[FIRST_TURN][:50])
    done = codex_notify(turn_done(), daemon.url, codex_home)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    [session] = sessions(daemon.url)
    assert session["source_tool"] == "codex"
    before = events_of(daemon.url, session["id"])
    assert len(before) == len(first.events) == 8
    assert user_texts(before)[-1] == "show tools"

    # the second turn is done: what it added, appended to the same session
    rollout.write_bytes(b"".join(records))
    done = codex_notify(turn_done(), daemon.url, codex_home)
    assert done.returncode == 0, done.stderr
    [grown] = sessions(daemon.url)
    after = events_of(daemon.url, grown["id"])
    assert grown["id"] == session["id"] and len(after) == len(whole.events)
    assert after[: len(before)] == before  # the first turn as it was, nothing copied
    assert user_texts(after)[len(user_texts(before)) :] == [
        "let's update the defailt context compart to 90 in env var"
    ]

    # nothing new, nothing written; a payload of another type does nothing
    assert codex_notify(turn_done(), daemon.url, codex_home).returncode == 0
    other = codex_notify({"type": "approval-requested"}, daemon.url, codex_home)
    assert other.returncode == 0 and other.stderr == b""
    assert sessions(daemon.url) == [grown]


@pytest.mark.slow
def test_codex_notify_never_breaks_codex(daemon: Daemon, tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    day = codex_home / "sessions" / "2026" / "05" / "11"
    day.mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    (outside / "12").mkdir(parents=True)
    linked_file = "019e1625-0000-7000-8000-00000000000a"
    linked_folder = "019e1625-0000-7000-8000-00000000000b"
    (outside / f"rollout-2026-05-11T11-26-55-{linked_file}.jsonl").write_bytes(ROLLOUT.read_bytes())
    (outside / "12" / f"rollout-2026-05-12T09-00-00-{linked_folder}.jsonl").write_bytes(
        ROLLOUT.read_bytes()
    )
    (day / f"rollout-2026-05-11T11-26-55-{linked_file}.jsonl").symlink_to(
        outside / f"rollout-2026-05-11T11-26-55-{linked_file}.jsonl"
    )
    (codex_home / "sessions" / "2026" / "05" / "12").symlink_to(outside / "12")
    gone = f"http://127.0.0.1:{free_port()}"
    for given, url in (
        ('{"type": "agent-turn-complete", "thread-id": ', daemon.url),  # not JSON
        ("[1, 2]", daemon.url),
        ({"type": "agent-turn-complete", "turn-id": "1"}, daemon.url),  # no thread-id
        (turn_done(thread="../../etc/passwd"), daemon.url),
        (turn_done(thread="019e1625-0000-7000-8000-00000000ffff"), daemon.url),  # no rollout
        (turn_done(thread=linked_file), daemon.url),  # only through a link to a file
        (turn_done(thread=linked_folder), daemon.url),  # only through a linked folder
        (turn_done(thread=THREAD), daemon.url),  # no rollout yet
    ):
        quiet = codex_notify(given, url, codex_home)
        assert quiet.returncode == 0 and quiet.stdout == b"", quiet.stderr
        assert quiet.stderr.startswith(b"aster-persist hook: "), (given, quiet.stderr)
        assert codex_notify(given, url, codex_home, "--strict").returncode == 1
    (day / ROLLOUT.name).write_bytes(ROLLOUT.read_bytes())
    unreachable = codex_notify(turn_done(), gone, codex_home)
    assert unreachable.returncode == 0 and b"aster-persist hook: " in unreachable.stderr
    assert codex_notify(turn_done(), gone, codex_home, "--strict").returncode == 1
    assert sessions(daemon.url) == []  # and nothing half-written
    flags = ["--url", daemon.url, "--codex-home", str(codex_home)]  # no CODEX_HOME set
    found = subprocess.run(
        [*notify_program(), *flags, orjson.dumps(turn_done()).decode()],
        capture_output=True,
        env={k: v for k, v in os.environ.items() if k != "CODEX_HOME"},
        timeout=120,
    )
    assert found.returncode == 0, found.stderr
    assert len(sessions(daemon.url)) == 1


def hooks_codex(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aster_persist", "hooks", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


CONFIG = """\
# Codex, by hand
model = "gpt-5.5"
approval_policy = "on-request"
writable_roots = [
  "/tmp",
  '''/var/[weird]''',
]

# the servers
[mcp_servers.docs]
command = "docs-server"
notify = ["not", "top-level"]
"""


def test_installing_codex_notify_keeps_the_rest_of_config_toml(tmp_path: Path) -> None:
    config = tmp_path / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CONFIG)
    config.chmod(0o640)
    ours = notify_program()
    assert ours == [sys.executable, "-m", "aster_persist", "hook", "codex"]

    for _twice in range(2):
        done = hooks_codex("codex", "--install", "--config", str(config))
        assert done.returncode == 0, done.stderr
    installed = config.read_text()
    assert tomllib.loads(installed)["notify"] == ours
    assert installed.count('"hook", "codex"]') == 1
    assert installed.replace(notify_line(ours) + "\n", "", 1) == CONFIG  # the rest, as it was
    assert config.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in config.parent.iterdir()] == ["config.toml"]  # no temporary left

    assert hooks_codex("codex", "--uninstall", "--config", str(config)).returncode == 0
    assert config.read_text() == CONFIG

    theirs = 'notify = ["notify-send", "Codex"]\n' + CONFIG
    config.write_text(theirs)
    refused = hooks_codex("codex", "--install", "--config", str(config))
    assert refused.returncode == 1 and "notify-send Codex" in refused.stderr
    assert "--force" in refused.stderr and config.read_text() == theirs
    assert hooks_codex("codex", "--uninstall", "--config", str(config)).returncode == 0
    assert config.read_text() == theirs  # not ours: left alone
    forced = hooks_codex("codex", "--install", "--force", "--config", str(config))
    assert forced.returncode == 0, forced.stderr
    assert config.read_text() == notify_line(ours) + "\n" + CONFIG

    config.write_text("model = [broken")
    broken = hooks_codex("codex", "--install", "--config", str(config))
    assert broken.returncode == 1 and "left as it is" in broken.stderr
    assert config.read_text() == "model = [broken"

    fresh = tmp_path / "new-home" / "config.toml"
    env_home = subprocess.run(
        [sys.executable, "-m", "aster_persist", "hooks", "codex", "--install"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "CODEX_HOME": str(fresh.parent)},
    )
    assert env_home.returncode == 0, env_home.stderr
    assert fresh.read_text() == notify_line(ours) + "\n"


def test_codex_notify_is_never_written_through_a_link(tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "config.toml"
    target.parent.mkdir()
    target.write_text(CONFIG)
    config = tmp_path / "config.toml"
    config.symlink_to(target)
    refused = hooks_codex("codex", "--install", "--config", str(config))
    assert refused.returncode == 1 and "symbolic link" in refused.stderr
    assert config.is_symlink() and target.read_text() == CONFIG


def test_agents_md_holds_the_memory_block(daemon: Daemon, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    agents = project / "AGENTS.md"
    theirs = "# Agents\n\nRun `make check` before you commit.\n"
    agents.write_text(theirs)

    def remember(content: str) -> None:
        saved = httpx.put(
            f"{daemon.url}/v1/memory/blocks/build",
            params={"repo_root": str(project)},
            json={"content": content},
        )
        assert saved.status_code in (200, 201), saved.text

    def instructions(*args: str) -> subprocess.CompletedProcess[str]:
        return hooks_codex("codex-instructions", "--url", daemon.url, *args, cwd=project / "src")

    remember("Build with `make all`; the tests need Chromium.")
    assert instructions().returncode == 0
    written = agents.read_text()
    assert written.startswith(theirs + "\n" + BEGIN + "\n")
    assert written.endswith(END + "\n") and written.count(BEGIN) == 1
    assert "Build with `make all`" in written

    remember("Build with `just build` now.")
    assert instructions("--repo-root", str(project)).returncode == 0
    replaced = agents.read_text()
    assert replaced.count(BEGIN) == 1 and replaced.startswith(theirs + "\n" + BEGIN)
    assert "just build" in replaced and "make all" not in replaced

    agents.write_text(replaced + "\n## More of theirs\n")
    assert instructions().returncode == 0
    assert agents.read_text() == replaced + "\n## More of theirs\n"  # unchanged memory
    removed = instructions("--remove")
    assert removed.returncode == 0, removed.stderr
    assert agents.read_text() == theirs + "\n## More of theirs\n"

    agents.write_text(theirs)
    assert instructions().returncode == 0 and instructions("--remove").returncode == 0
    assert agents.read_text() == theirs  # appended, then taken out: as it was

    other = tmp_path / "notes" / "CODEX.md"
    other.parent.mkdir()
    assert instructions("--file", str(other)).returncode == 0
    assert other.read_text().startswith(BEGIN) and "just build" in other.read_text()
    assert instructions("--file", str(other), "--remove").returncode == 0
    assert not other.exists()  # nothing but the block was there


def test_agents_md_is_never_written_through_a_link(daemon: Daemon, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    target = tmp_path / "shared" / "AGENTS.md"
    target.parent.mkdir()
    target.write_text("# Shared\n")
    (project / "AGENTS.md").symlink_to(target)
    refused = hooks_codex("codex-instructions", "--url", daemon.url, "--repo-root", str(project))
    assert refused.returncode == 1 and "symbolic link" in refused.stderr
    assert (project / "AGENTS.md").is_symlink() and target.read_text() == "# Shared\n"
    half = project / "NOTES.md"
    half.write_text(f"text\n{BEGIN}\nno end\n")
    damaged = hooks_codex(
        "codex-instructions", "--url", daemon.url, "--repo-root", str(project), "--file", str(half)
    )
    assert damaged.returncode == 1 and "left as it is" in damaged.stderr
    assert half.read_text() == f"text\n{BEGIN}\nno end\n"
