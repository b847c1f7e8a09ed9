"""Claude Code's hooks against a real daemon, fed the payloads Claude Code documents for
each event (session id, transcript path, working folder, event name and the event's own
fields): memory at the start of a session, the transcript brought in after each turn
with nothing copied twice, a sub-agent linked to its parent, and a hook that never
breaks the agent. And the settings file they are installed in keeps what it had."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import orjson

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
