"""``sessions``: list, show, latest, rename, delete, restore, export, prune, compress and import,
against the running daemon (output and exit codes as in `common.py`)."""

from __future__ import annotations

import sys
from contextlib import suppress
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console

from ..schemas.rendering import read_event, retracted
from .common import (
    EXIT_REFUSED,
    Json,
    ProjectArgument,
    RepoRoot,
    SessionId,
    Url,
    daemon,
    emit_json,
    fail,
    more,
    one_project,
    project,
    short,
    table,
    top_level,
)
from .userfiles import PRIVATE, UserFile, UserFileError

sessions_app = typer.Typer(help="Sessions in the running daemon.", no_args_is_help=True)


@sessions_app.command("list")
def sessions_list(
    named: ProjectArgument = None,
    repo_root: RepoRoot = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 50,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Sessions, most recently active first (of one project when it is named)."""
    repo_root = one_project(named, repo_root)
    with daemon(url) as aster:
        items: list[Any] = []
        cursor = None
        while len(items) < limit:
            page = aster.list_sessions(repo_root, limit=min(500, limit - len(items)), cursor=cursor)
            items += page.items
            cursor = page.next_cursor
            if not cursor:
                break
    if json_out:
        return emit_json({"items": items, "next_cursor": cursor})
    table(
        "id",
        "title",
        "project",
        "from",
        "turns",
        "tool calls",
        "updated",
        "state",
        rows=[
            [
                s.id,
                short(s.title, 40),
                s.repo_root,
                s.source_tool or "api",
                s.turns,
                f"{s.tool_calls} ({s.tool_errors} failed)" if s.tool_errors else s.tool_calls,
                s.updated_at,
                s.state,
            ]
            for s in items
        ],
        group="project",
        lesser=("from", "tool calls", "state", "turns"),
        times=("updated",),
    )
    if cursor:
        more(f"the {len(items)} most recently active; more with --limit {2 * max(limit, 1)}")


@sessions_app.command("show")
def sessions_show(
    session_id: SessionId,
    width: Annotated[int, typer.Option(help="Tool results are cut to this many characters.")] = 300,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """A transcript, readably: roles, tool calls with their arguments, results shortened,
    summaries and evictions marked. ``--json`` gives the summary and every event."""
    with daemon(url) as aster:
        detail = aster.get_session(session_id)
        events: list[dict[str, Any]] = []
        after = 0
        while True:
            page = aster.events(session_id, after=after, limit=5000)
            events += page.events
            if not page.next_cursor:
                break
            after = int(page.next_cursor)
    if json_out:
        return emit_json({"session": detail.model_dump(mode="json"), "events": events})
    console = Console(highlight=False, soft_wrap=not sys.stdout.isatty())  # a pipe: unwrapped
    console.print(
        f"[bold]{detail.title or '(untitled)'}[/bold]  {detail.id}\n"
        f"{detail.repo_root}  ·  {detail.events} events  ·  {detail.created_at} → "
        f"{detail.updated_at}  ·  {detail.state}"
    )
    gone = retracted(events)  # taken back: shown as such, their text left out
    for event in events:
        if event.get("seq") in gone:
            console.print(f"\n#{event['seq']} ── taken back ──", markup=False)
            continue
        for line in render_event(event, width):
            console.print(line, markup=False)


def render_event(line: dict[str, Any], width: int = 300) -> list[str]:
    """One event as lines for people."""
    event = read_event(line)
    seq = event.seq
    if event.kind == "summary":
        return [f"\n#{seq} ── summary of everything through #{event.through_seq} ──", event.text]
    if event.kind == "eviction":
        target = event.tool_call_id or f"#{event.target_seq}"
        stub = f": {event.text}" if event.text else ""
        return [f"\n#{seq} ── evicted {target} from the context{stub} ──"]
    if event.kind == "title":
        return [f"\n#{seq} ── title: {event.text} ──"]
    if event.kind == "reasoning":
        return (
            [f"\n#{seq} ── thinking ──", event.text] if event.text else [f"\n#{seq} ── thinking ──"]
        )
    if event.kind == "retraction":
        why = f": {event.text}" if event.text else ""
        return [f"\n#{seq} ── took back #{event.target_seq}{why} ──"]
    role = event.role or "?"
    out = [f"\n#{seq} {role}" + (f"  ({event.name})" if event.name else "")]
    if role == "tool":
        out.append(f"  → {event.tool_call_id}: {short(event.text, width)}")
    elif event.text:
        out.append(event.text)
    for call in event.calls:
        arguments = call.arguments
        with suppress(orjson.JSONDecodeError, TypeError):
            arguments = orjson.dumps(orjson.loads(arguments), option=orjson.OPT_INDENT_2).decode()
        out.append(f"  ⚙ {call.name} [{call.id}]")
        out += ["    " + text for text in arguments.splitlines()]
    return out


@sessions_app.command("latest")
def sessions_latest(
    repo_root: Annotated[
        str | None,
        typer.Argument(
            help="The project: its repository, or any folder in it; where you stand without.",
            callback=project,
        ),
    ] = None,
    repo_root_option: Annotated[
        str | None,
        typer.Option(
            "--repo-root",
            help="The project, as every command names it (the same as the argument).",
            callback=project,
        ),
    ] = None,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """The project's most recently active session."""
    repo_root = one_project(repo_root, repo_root_option)
    with daemon(url) as aster:
        found = aster.latest_session(repo_root or str(top_level(Path.cwd())))
    if json_out:
        return emit_json(found)
    table(
        "id",
        "title",
        "events",
        "updated",
        rows=[[found.id, short(found.title, 50), found.events, found.updated_at]],
        times=("updated",),
    )


@sessions_app.command("rename")
def sessions_rename(
    session_id: SessionId, title: str, json_out: Json = False, url: Url = None
) -> None:
    """Set a session's title (journaled: `journal revert` undoes it)."""
    with daemon(url) as aster:
        done = aster.rename_session(session_id, title)
    if json_out:
        return emit_json(done)
    typer.echo(f"renamed {done.id} to {done.title!r}")


@sessions_app.command("delete")
def sessions_delete(
    session_id: SessionId,
    purge: Annotated[bool, typer.Option(help="For good, not to the trash.")] = False,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Move a session to the trash (`sessions restore` brings it back)."""
    with daemon(url) as aster:
        aster.delete_session(session_id, purge=purge)
    if json_out:
        return emit_json({"id": session_id, "purged": purge, "trashed": not purge})
    typer.echo(f"{'purged' if purge else 'moved to the trash'}: {session_id}")


@sessions_app.command("restore")
def sessions_restore(session_id: SessionId, json_out: Json = False, url: Url = None) -> None:
    """Bring a session back from the trash."""
    with daemon(url) as aster:
        done = aster.restore_session(session_id)
    if json_out:
        return emit_json(done)
    typer.echo(f"restored {done.id}")


@sessions_app.command("export")
def sessions_export(
    session_id: SessionId,
    format: Annotated[str, typer.Option(help="native (JSONL) or openai (messages).")] = "native",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here, not to stdout.")
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="With -o: what was written, as JSON on stdout.")
    ] = False,
    raw: Annotated[
        bool, typer.Option("--raw", help="Keep secrets as they are (redacted otherwise).")
    ] = False,
    url: Url = None,
) -> None:
    """A transcript as JSONL (blobs put back), or as chat messages. A secret in it (a key,
    a token, a password) is written as [redacted: <kind>] unless --raw, which writes the
    transcript byte for byte."""
    if json_out and output is None:
        raise fail("--json reports the file written: give it with -o", 2)
    with daemon(url) as aster:
        if format == "openai":
            messages = aster.export_openai(session_id, redact=not raw)
            data = orjson.dumps(messages, option=orjson.OPT_INDENT_2)
        elif format == "native":
            data = aster.export(session_id, redact=not raw)
        else:
            raise fail(f"unknown format {format!r}: use native or openai", 2)
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        try:  # a transcript may hold secrets: a new file is the user's alone
            UserFile(output).write(data, new_mode=PRIVATE)
        except UserFileError as exc:
            raise fail(str(exc), EXIT_REFUSED) from None
        if json_out:
            report = {"id": session_id, "format": format, "bytes": len(data), "output": str(output)}
            return emit_json(report)
        typer.echo(f"wrote {len(data)} bytes to {output}", err=True)


@sessions_app.command("prune")
def sessions_prune(
    older_than_days: Annotated[float | None, typer.Option(help="Idle this long.")] = None,
    keep_latest: Annotated[int | None, typer.Option(help="Keep this many per project.")] = None,
    purge_trash_older_than_days: Annotated[
        float | None, typer.Option(help="Empty the trash of sessions there this long.")
    ] = None,
    apply: Annotated[bool, typer.Option(help="Do it; without, only say what would go.")] = False,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Move old sessions to the trash: a dry run unless --apply."""
    if older_than_days is None and keep_latest is None and purge_trash_older_than_days is None:
        raise fail(
            "say what to prune: --older-than-days, --keep-latest or --purge-trash-older-than-days",
            2,
        )
    with daemon(url) as aster:
        done = aster.prune_sessions(
            older_than_days=older_than_days,
            keep_latest=keep_latest,
            purge_trash_older_than_days=purge_trash_older_than_days,
            dry_run=not apply,
        )
    if json_out:
        return emit_json(done)
    table(
        "id",
        "title",
        "updated",
        "why",
        rows=[[s.id, short(s.title, 40), s.updated_at, s.reason] for s in done.trashed],
        times=("updated",),
    )
    verb = "would move" if done.dry_run else "moved"
    typer.echo(
        f"{verb} {len(done.trashed)} sessions to the trash; purged {len(done.purged)}", err=True
    )


@sessions_app.command("compress")
def sessions_compress(
    older_than_days: Annotated[
        float | None,
        typer.Option(help="With no event this long (default: ASTER_COMPRESS_AFTER_DAYS)."),
    ] = None,
    apply: Annotated[bool, typer.Option(help="Do it; without, only say what it frees.")] = False,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Keep idle sessions compressed (<id>.jsonl.zst, read with zstdcat): a dry run
    unless --apply."""
    with daemon(url) as aster:
        done = aster.compress_sessions(older_than_days=older_than_days, dry_run=not apply)
    if json_out:
        return emit_json(done)
    table(
        "id",
        "bytes",
        "compressed",
        rows=[[s.id, str(s.bytes), str(s.compressed_bytes)] for s in done.compressed],
    )
    verb = "would compress" if done.dry_run else "compressed"
    typer.echo(
        f"{verb} {len(done.compressed)} sessions: {done.bytes} bytes to "
        f"{done.compressed_bytes} ({done.freed_bytes} freed)",
        err=True,
    )
