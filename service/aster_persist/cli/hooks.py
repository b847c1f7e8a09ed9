"""``hooks`` and ``hook``: Claude Code plugged into the store (and Codex: its notify
program and its AGENTS.md, in ``codex_hooks.py``, registered here).

``hooks claude`` prints the hooks (a fragment of Claude Code's ``settings.json``); with
``--install`` it merges them into a settings file, keeping every hook already there,
and ``--uninstall`` takes them out again. They run ``hook claude-code``, which reads
the payload Claude Code sends on stdin:

- ``SessionStart``: the project's memory context, given back to Claude as additional
  context (``hookSpecificOutput.additionalContext``);
- ``Stop``, ``SubagentStop``, ``PreCompact``: the session's transcript (and a
  sub-agent's, when the payload names it) imported as it stands, as a stream: an
  import of a source already here appends exactly what it gained, so a hook that runs
  after every turn never copies a session, and a sub-agent's session is linked to its
  parent's.

A hook must never break the agent: whatever goes wrong is a warning on stderr and exit
0, unless ``--strict`` asks for exit 1 (never 2, which Claude Code reads as "block").
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from .codex_hooks import codex_hook, codex_instructions, codex_notify
from .common import Json, Url, emit_json, fail, top_level
from .userfiles import UserFile, UserFileError

hooks_app = typer.Typer(help="Plug agents in: their hooks, to print or install.")
hook_app = typer.Typer(help="What an agent's hooks run (given its payload).", hidden=True)

EVENTS = ("SessionStart", "Stop", "SubagentStop", "PreCompact")
IMPORTING = ("Stop", "SubagentStop", "PreCompact")
RUNS = "hook claude-code"  # what marks a hook of ours in a settings file
SETTINGS = Path("~/.claude/settings.json")


def hooks_for(command: str) -> dict[str, Any]:
    """The ``hooks`` of a Claude Code settings file that run ``command`` on each event."""
    entry = {"type": "command", "command": command, "timeout": 60}
    return {event: [{"hooks": [dict(entry)]}] for event in EVENTS}


def this_command() -> str:
    """How a hook runs this program: the interpreter it runs in, whatever PATH is."""
    return f"{shlex.quote(sys.executable)} -m aster_persist {RUNS}"


def merged(settings: dict[str, Any], command: str | None) -> dict[str, Any]:
    """``settings`` with every hook of ours taken out, and ours put in (``command``)."""
    hooks = settings.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise ValueError("its `hooks` is not an object")
    kept: dict[str, Any] = {}
    for event, groups in (hooks or {}).items():
        if not isinstance(groups, list):
            kept[event] = groups
            continue
        left = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(inner, list):
                mine = [h for h in inner if RUNS in str(h.get("command", ""))]
                others = [h for h in inner if h not in mine]
                if mine and not others:
                    continue  # a group of ours alone
                group = {**group, "hooks": others}
            left.append(group)
        if left:
            kept[event] = left
    if command is not None:
        for event, groups in hooks_for(command).items():
            kept[event] = [*kept.get(event, []), *groups]
    out = {k: v for k, v in settings.items() if k != "hooks"}
    return {**out, "hooks": kept} if kept else out


@hooks_app.command("claude")
def claude_hooks(
    install: Annotated[bool, typer.Option(help="Merge them into the settings file.")] = False,
    uninstall: Annotated[bool, typer.Option(help="Take them out of it.")] = False,
    settings: Annotated[
        Path, typer.Option(help="Claude Code's settings file (a project's: .claude/).")
    ] = SETTINGS,
    command: Annotated[str | None, typer.Option(help="What the hooks run.")] = None,
    json_out: Json = False,
) -> None:
    """Claude Code's hooks for this store: memory at the start of a session, the session
    brought in after every turn, sub-agent and compaction. Printed, or installed."""
    run = command or this_command()
    if not install and not uninstall:
        sys.stdout.write(
            orjson.dumps({"hooks": hooks_for(run)}, option=orjson.OPT_INDENT_2).decode()
        )
        sys.stdout.write("\n")
        return
    if install and uninstall:
        raise fail("say --install or --uninstall, not both", 2)
    path = settings.expanduser()
    file = UserFile(path)
    try:
        data = file.read()
        current = orjson.loads(data) if data is not None else {}
    except UserFileError as exc:
        raise fail(str(exc), 1) from None
    except orjson.JSONDecodeError as exc:
        raise fail(f"{path} cannot be read as JSON ({exc}); it was left as it is", 1) from None
    if not isinstance(current, dict):
        raise fail(f"{path} is not a JSON object; it was left as it is", 1)
    try:
        updated = merged(current, run if install else None)
    except ValueError as exc:
        raise fail(f"{path}: {exc}; it was left as it is", 1) from None
    if updated == current and data is not None:  # nothing to do: the file is not touched
        done = "already installed in" if install else "not in"
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:  # its mode and owner kept, a link refused; whole or not at all
            file.write(orjson.dumps(updated, option=orjson.OPT_INDENT_2) + b"\n")
        except UserFileError as exc:
            raise fail(str(exc), 1) from None
        done = "installed in" if install else "removed from"
    if json_out:
        emit_json({"settings": str(path), "installed": install, "changed": updated != current})
    typer.echo(f"Claude Code hooks {done} {path}", err=True)


@hook_app.command("claude-code")
def claude_code_hook(
    strict: Annotated[bool, typer.Option(help="Exit 1 when it fails (else 0).")] = False,
    url: Url = None,
) -> None:
    """Read a Claude Code hook payload on stdin and do what its event asks."""
    try:
        payload = orjson.loads(sys.stdin.buffer.read())
        if not isinstance(payload, dict):
            raise ValueError("the payload is not a JSON object")
        _run(payload, url)
    except Exception as exc:  # a hook never breaks the agent
        typer.echo(f"aster-persist hook: {exc}", err=True)
        raise typer.Exit(1 if strict else 0) from None


def _run(payload: dict[str, Any], url: str | None) -> None:
    from .. import client as api

    event = payload.get("hook_event_name")
    if event not in EVENTS:
        raise ValueError(f"not an event these hooks are for: {event!r}")
    with api.Client(url) as aster:
        if event == "SessionStart":
            cwd = payload.get("cwd")
            root = top_level(Path(cwd)) if isinstance(cwd, str) and cwd else None
            context = aster.context(str(root) if root else None)
            out = {
                "hookSpecificOutput": {
                    "hookEventName": "SessionStart",
                    "additionalContext": context.content,
                }
            }
            sys.stdout.write(orjson.dumps(out).decode() + "\n")
            return
        names = [payload.get("transcript_path"), payload.get("agent_transcript_path")]
        paths = [Path(p) for p in names if isinstance(p, str) and p]
        if not paths:
            raise ValueError(f"a {event} payload without a transcript_path")
        for path in paths:
            _import(aster, path)


def _import(aster: Any, path: Path) -> None:
    """A transcript imported as it stands, sent as it is read, never through a link."""
    from datetime import UTC, datetime

    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        moment = datetime.fromtimestamp(os.fstat(handle.fileno()).st_mtime, UTC)

        def chunks() -> Iterator[bytes]:
            while chunk := handle.read(1 << 20):
                yield chunk

        when = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        aster.import_file(chunks(), modified_at=when)


hooks_app.command("codex")(codex_notify)
hooks_app.command("codex-instructions")(codex_instructions)
hook_app.command("codex")(codex_hook)
