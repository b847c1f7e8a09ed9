"""Writing from the command line, for hosts with no HTTP client of their own:
``sessions create`` and ``sessions append`` (events as JSON or JSON Lines on stdin),
and ``memory success`` / ``memory failure`` (how a task went, as a procedure)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from .common import Json, RepoRoot, SessionId, Url, daemon, emit_json, fail, project, top_level


def read_events(data: bytes) -> list[dict[str, Any]]:
    """Events from stdin: one JSON event, an array, ``{"events": [...]}``, or JSON
    Lines (one event per line); exit 2 saying what is wrong."""
    if not data.strip():
        raise fail("no events on stdin: send JSON or JSON Lines", 2)
    try:
        whole = orjson.loads(data)
    except orjson.JSONDecodeError:
        events = []
        for n, line in enumerate(data.splitlines(), 1):
            if line.strip():
                try:
                    events.append(orjson.loads(line))
                except orjson.JSONDecodeError as exc:
                    raise fail(f"line {n} of stdin is not JSON: {exc}", 2) from None
        whole = events
    if isinstance(whole, dict):
        whole = whole["events"] if isinstance(whole.get("events"), list) else [whole]
    if not isinstance(whole, list) or not all(isinstance(e, dict) for e in whole):
        raise fail("stdin holds no events: each must be a JSON object", 2)
    return whole


def sessions_create(
    repo_root: Annotated[
        str | None,
        typer.Option(
            help="The project: its repository, or a folder in it (default: where you stand).",
            callback=project,
        ),
    ] = None,
    title: Annotated[str | None, typer.Option(help="Its title.")] = None,
    model: Annotated[str | None, typer.Option(help="The model the agent runs.")] = None,
    alias: Annotated[
        str | None, typer.Option(help="Your own name for it (one live session each).")
    ] = None,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Start a session and print its id (how to append to it goes to stderr)."""
    root = repo_root or str(top_level(Path.cwd()))
    with daemon(url) as aster:
        header = aster.create_session(root, title=title, model=model, alias=alias)
    if json_out:
        return emit_json(header)
    typer.echo(header.id)
    typer.echo(f"append with: aster-persist sessions append {header.id} < events.jsonl", err=True)


def sessions_append(
    session_id: SessionId,
    idempotency_key: Annotated[
        str | None,
        typer.Option(help="A retry with the same key writes nothing and says so."),
    ] = None,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Append events read from stdin (one JSON event, an array, or JSON Lines), durably,
    all or none."""
    events = read_events(sys.stdin.buffer.read())
    with daemon(url) as aster:
        done = aster.append(session_id, events, idempotency_key=idempotency_key)
    if json_out:
        return emit_json(done)
    said = "already appended (a retry)" if done.replayed else "appended"
    typer.echo(f"{said}: seq {done.first_seq}-{done.last_seq} of {session_id}")
    typer.echo(f"resume with: aster-persist sessions show {session_id}", err=True)


def _procedure(
    outcome: str,
    task: str,
    tool: list[str] | None,
    detail: str | None,
    repo_root: str | None,
    json_out: bool,
    url: str | None,
) -> None:
    with daemon(url) as aster:
        block = aster.remember_procedure(
            outcome,  # type: ignore[arg-type]
            task,
            repo_root,
            tools=tool or None,
            result=detail if outcome == "success" else None,
            error=detail if outcome == "failure" else None,
        )
    if json_out:
        return emit_json(block)
    typer.echo(
        f"{'already recorded as' if block.merged else 'recorded as'} {block.scope}/{block.name}"
    )


Task = Annotated[str, typer.Argument(help="The task, in a few words.")]
Tools = Annotated[list[str] | None, typer.Option("--tool", help="A tool used (repeat for more).")]


def memory_success(
    task: Task,
    tool: Tools = None,
    result: Annotated[str | None, typer.Option(help="What came of it.")] = None,
    repo_root: RepoRoot = None,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Record how a task was done, so a later session repeats it."""
    _procedure("success", task, tool, result, repo_root, json_out, url)


def memory_failure(
    task: Task,
    error: Annotated[str, typer.Option(help="What went wrong, and why.")],
    tool: Tools = None,
    repo_root: RepoRoot = None,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Record how a task failed, so a later session avoids it."""
    _procedure("failure", task, tool, error, repo_root, json_out, url)
