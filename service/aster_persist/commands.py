"""The CLI's client commands: thin wrappers over `aster_persist.client.Client`.

Every read takes ``--json`` (one JSON document, or one JSON line per item for streams);
without it, people get tables. Exit codes scripts can rely on:

    0  done                     3  the daemon is not running (or not at --url)
    1  refused, or failed       4  not found
    2  bad usage                5  conflict: exists, changed meanwhile, damaged
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import orjson
import typer
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from . import client as api
from .schemas.journal import JournalEntry

EXIT_REFUSED, EXIT_UNAVAILABLE, EXIT_NOT_FOUND, EXIT_CONFLICT = 1, 3, 4, 5

Url = Annotated[str | None, typer.Option(help="The daemon (default: ASTER_URL).")]
Json = Annotated[bool, typer.Option("--json", help="JSON instead of a table.")]
RepoRoot = Annotated[
    str | None, typer.Option(help="The project (its repository root); global without.")
]

sessions_app = typer.Typer(help="Sessions in the running daemon.", no_args_is_help=True)
memory_app = typer.Typer(help="Memory in the running daemon.", no_args_is_help=True)


def fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"aster-persist: {message}", err=True)
    return typer.Exit(code)


@contextmanager
def daemon(url: str | None) -> Iterator[api.Client]:
    """A client of the daemon; its refusals become a message and an exit code."""
    try:
        with api.Client(url) as aster:
            yield aster
    except api.DaemonUnavailable as exc:
        raise fail(f"{exc}; start it with `aster-persist serve`", EXIT_UNAVAILABLE) from None
    except api.NotFound as exc:
        raise fail(exc.detail or str(exc), EXIT_NOT_FOUND) from None
    except (api.Conflict, api.PreconditionFailed) as exc:
        raise fail(exc.detail or str(exc), EXIT_CONFLICT) from None
    except api.ApiError as exc:
        raise fail(str(exc), EXIT_REFUSED) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def emit_json(value: Any) -> None:
    """One JSON document on stdout (models as the API sends them)."""
    sys.stdout.write(orjson.dumps(value, default=_plain).decode() + "\n")


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def table(*columns: str, rows: list[list[Any]]) -> None:
    out = Table(*columns)
    for row in rows:
        out.add_row(*("" if cell is None else str(cell) for cell in row))
    Console().print(out)


def short(text: Any, width: int = 60) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


# -- sessions ----------------------------------------------------------------------------


@sessions_app.command("list")
def sessions_list(
    repo_root: RepoRoot = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 50,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Sessions, most recently active first."""
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
        "events",
        "updated",
        "state",
        rows=[
            [s.id, short(s.title, 40), s.repo_root, s.events, s.updated_at, s.state] for s in items
        ],
    )


@sessions_app.command("show")
def sessions_show(
    session_id: str,
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
    console = Console(highlight=False)
    console.print(
        f"[bold]{detail.title or '(untitled)'}[/bold]  {detail.id}\n"
        f"{detail.repo_root}  ·  {detail.events} events  ·  {detail.created_at} → "
        f"{detail.updated_at}  ·  {detail.state}"
    )
    for event in events:
        for line in render_event(event, width):
            console.print(line, markup=False)


def render_event(event: dict[str, Any], width: int = 300) -> list[str]:
    """One event as lines for people."""
    seq = event.get("seq", "?")
    kind = event.get("type")
    if kind == "summary":
        return [
            f"\n#{seq} ── summary of everything through #{event.get('through_seq')} ──",
            str(event.get("content", "")),
        ]
    if kind == "eviction":
        target = event.get("tool_call_id") or f"#{event.get('target_seq')}"
        stub = f": {event['stub']}" if event.get("stub") else ""
        return [f"\n#{seq} ── evicted {target} from the context{stub} ──"]
    if kind == "title":
        return [f"\n#{seq} ── title: {event.get('title')} ──"]
    role = event.get("role", "?")
    out = [f"\n#{seq} {role}" + (f"  ({event['name']})" if event.get("name") else "")]
    content = event.get("content")
    if isinstance(content, list):  # content parts
        content = "\n".join(str(p.get("text", f"[{p.get('type')}]")) for p in content)
    elif isinstance(content, dict):  # a blob reference not inlined
        content = f"[{content.get('bytes')} bytes stored as a blob] {content.get('preview', '')}"
    if role == "tool":
        out.append(f"  → {event.get('tool_call_id')}: {short(content, width)}")
    elif content:
        out.append(str(content))
    for call in event.get("tool_calls") or []:
        function = call.get("function", {})
        arguments = function.get("arguments", "")
        with suppress(orjson.JSONDecodeError, TypeError):
            arguments = orjson.dumps(orjson.loads(arguments), option=orjson.OPT_INDENT_2).decode()
        out.append(f"  ⚙ {function.get('name')} [{call.get('id')}]")
        out += ["    " + line for line in str(arguments).splitlines()]
    return out


@sessions_app.command("latest")
def sessions_latest(
    repo_root: Annotated[
        str | None, typer.Argument(help="The project; the current directory without.")
    ] = None,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """The project's most recently active session."""
    with daemon(url) as aster:
        found = aster.latest_session(repo_root or os.getcwd())
    if json_out:
        return emit_json(found)
    table(
        "id",
        "title",
        "events",
        "updated",
        rows=[[found.id, short(found.title, 50), found.events, found.updated_at]],
    )


@sessions_app.command("rename")
def sessions_rename(session_id: str, title: str, json_out: Json = False, url: Url = None) -> None:
    """Set a session's title (journaled; `journal` shows how to revert it)."""
    with daemon(url) as aster:
        done = aster.rename_session(session_id, title)
    if json_out:
        return emit_json(done)
    typer.echo(f"renamed {done.id} to {done.title!r}")


@sessions_app.command("delete")
def sessions_delete(
    session_id: str,
    purge: Annotated[bool, typer.Option(help="For good, not to the trash.")] = False,
    url: Url = None,
) -> None:
    """Move a session to the trash (`sessions restore` brings it back)."""
    with daemon(url) as aster:
        aster.delete_session(session_id, purge=purge)
    typer.echo(f"{'purged' if purge else 'moved to the trash'}: {session_id}")


@sessions_app.command("restore")
def sessions_restore(session_id: str, json_out: Json = False, url: Url = None) -> None:
    """Bring a session back from the trash."""
    with daemon(url) as aster:
        done = aster.restore_session(session_id)
    if json_out:
        return emit_json(done)
    typer.echo(f"restored {done.id}")


@sessions_app.command("export")
def sessions_export(
    session_id: str,
    format: Annotated[str, typer.Option(help="native (JSONL) or openai (messages).")] = "native",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here, not to stdout.")
    ] = None,
    url: Url = None,
) -> None:
    """A transcript as JSONL, byte for byte (blobs put back), or as chat messages."""
    with daemon(url) as aster:
        if format == "openai":
            data = orjson.dumps(aster.export_openai(session_id), option=orjson.OPT_INDENT_2)
        elif format == "native":
            data = aster.export(session_id)
        else:
            raise fail(f"unknown format {format!r}: use native or openai", 2)
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        output.write_bytes(data)
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
    )
    verb = "would move" if done.dry_run else "moved"
    typer.echo(f"{verb} {len(done.trashed)} sessions to the trash; purged {len(done.purged)}")


# -- memory -----------------------------------------------------------------------------


@memory_app.command("list")
def memory_list(
    repo_root: RepoRoot = None,
    tag: Annotated[str | None, typer.Option(help="Only blocks with this tag.")] = None,
    type: Annotated[str | None, typer.Option(help="semantic or procedural.")] = None,
    archived: Annotated[bool, typer.Option(help="Archived blocks too.")] = False,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """The memory blocks of a scope."""
    with daemon(url) as aster:
        blocks: list[Any] = []
        cursor = None
        while True:
            page = aster.blocks(
                repo_root, tag=tag, type=type, include_archived=archived or None, cursor=cursor
            )
            blocks += page.items
            cursor = page.next_cursor
            if not cursor:
                break
    if json_out:
        return emit_json({"items": blocks})
    table(
        "name",
        "description",
        "tags",
        "importance",
        "updated",
        "state",
        rows=[
            [
                b.name,
                short(b.description, 50),
                ", ".join(b.tags),
                b.importance,
                b.updated_at,
                "archived" if b.archived else ("pinned" if b.pinned else ""),
            ]
            for b in blocks
        ],
    )


@memory_app.command("show")
def memory_show(
    name: Annotated[str, typer.Argument(help="A block's name; ASTER.md for core memory.")],
    repo_root: RepoRoot = None,
    archived: Annotated[bool, typer.Option(help="From the archive.")] = False,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """A block in full (counted as a recall), or core memory with ASTER.md."""
    with daemon(url) as aster:
        if name == "ASTER.md":
            core = aster.core(repo_root)
            return emit_json(core) if json_out else typer.echo(core.content, nl=False)
        block = aster.recall(name, repo_root, archived=archived or None, track=not archived)
    if json_out:
        return emit_json(block)
    typer.echo(block.content, nl=False)


@memory_app.command("add")
def memory_add(
    text: Annotated[str, typer.Argument(help="What to remember.")],
    name: Annotated[str | None, typer.Option(help="As a named block.")] = None,
    title: Annotated[str | None, typer.Option(help="As a block named after this.")] = None,
    description: Annotated[
        str | None, typer.Option(help="The block's one-line index entry.")
    ] = None,
    tag: Annotated[list[str] | None, typer.Option(help="A tag (repeat for more).")] = None,
    importance: Annotated[float | None, typer.Option(min=0, max=1)] = None,
    pinned: Annotated[bool, typer.Option(help="Never pruned.")] = False,
    replace: Annotated[bool, typer.Option(help="Replace a block of that name.")] = False,
    repo_root: RepoRoot = None,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Remember: a bullet in ASTER.md, or with --name/--title a block of its own."""
    with daemon(url) as aster:
        if name is None and title is None:
            note = aster.add_note(text, repo_root)
            if json_out:
                return emit_json(note)
            typer.echo("already noted" if note.duplicate else f"noted in {note.scope} ASTER.md")
            return
        block = aster.remember(
            text,
            repo_root,
            name=name,
            title=title,
            description=description,
            tags=tag or None,
            importance=importance,
            pinned=pinned or None,
            replace=replace or None,
        )
    if json_out:
        return emit_json(block)
    typer.echo(f"{'merged into' if block.merged else 'remembered'} {block.scope}/{block.name}")


@memory_app.command("remove")
def memory_remove(name: str, repo_root: RepoRoot = None, url: Url = None) -> None:
    """Forget a block (the journal keeps it: `journal` shows the entry to revert)."""
    with daemon(url) as aster:
        aster.forget(name, repo_root)
    typer.echo(f"forgot {name}")


@memory_app.command("archive")
def memory_archive(
    name: str, repo_root: RepoRoot = None, json_out: Json = False, url: Url = None
) -> None:
    """Move a block to the archive: out of the context, kept."""
    _move(name, repo_root, json_out, url, archive=True)


@memory_app.command("restore")
def memory_restore(
    name: str, repo_root: RepoRoot = None, json_out: Json = False, url: Url = None
) -> None:
    """Bring a block back from the archive."""
    _move(name, repo_root, json_out, url, archive=False)


def _move(
    name: str, repo_root: str | None, json_out: bool, url: str | None, *, archive: bool
) -> None:
    with daemon(url) as aster:
        block = (aster.archive if archive else aster.restore)(name, repo_root)
    if json_out:
        return emit_json(block)
    typer.echo(f"{'archived' if archive else 'restored'} {block.scope}/{block.name}")


@memory_app.command("context")
def memory_context(
    repo_root: RepoRoot = None,
    query: Annotated[str | None, typer.Option(help="Order the index by relevance to this.")] = None,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """The markdown an agent puts in its prompt, exactly."""
    with daemon(url) as aster:
        context = aster.context(repo_root, query=query)
    if json_out:
        return emit_json(context)
    typer.echo(context.content, nl=False)


@memory_app.command("search")
def memory_search(
    query: str,
    repo_root: RepoRoot = None,
    k: Annotated[int, typer.Option(help="At most this many.")] = 10,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Blocks and core memory by relevance to a question, recent ones first among equals."""
    with daemon(url) as aster:
        hits = aster.search_memory(query, repo_root, k=k)
    if json_out:
        return emit_json(hits)
    table(
        "name",
        "scope",
        "score",
        "snippet",
        rows=[[h.name, h.scope, f"{h.score:.3f}", short(h.snippet, 70)] for h in hits.items],
    )


# -- search and journal ------------------------------------------------------------------


def search_command(
    query: str,
    kind: Annotated[str, typer.Option(help="messages, memory or all.")] = "messages",
    repo_root: Annotated[str | None, typer.Option(help="Only this project.")] = None,
    session: Annotated[str | None, typer.Option(help="Only this session.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 20,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Search past sessions (and memory with --kind): any of the words, best first;
    "phrases", prefix*, AND/OR/NOT and repo:/session:/role:/after:/before: filters work."""
    if kind not in ("messages", "memory", "all"):
        raise fail(f"unknown kind {kind!r}: use messages, memory or all", 2)
    with daemon(url) as aster:
        page = aster.search(
            query,
            kind=cast(Literal["messages", "memory", "all"], kind),
            repo_root=repo_root,
            session_id=session,
            limit=limit,
        )
    if json_out:
        return emit_json(page)
    table(
        "where",
        "kind",
        "when",
        "snippet",
        rows=[
            [
                f"{h.session_id} #{h.seq}" if h.session_id else f"{h.scope}/{h.name}",
                h.kind,
                h.ts,
                short(h.snippet, 80),
            ]
            for h in page.items
        ],
    )


def describe(entry: JournalEntry) -> str:
    """One journal entry as a line for people."""
    what = entry.name or entry.session or ""
    detail = entry.detail or {}
    extra = ""
    if "first_seq" in detail:
        extra = f" seq {detail['first_seq']}-{detail['last_seq']}"
    elif "title" in detail:
        extra = f" {detail['title']!r}"
    return f"{entry.ts}  {entry.op:<17} {entry.scope}  {what}{extra}  ({entry.actor})  {entry.id}"


def journal_command(
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing changes as they happen.")
    ] = False,
    json_lines: Annotated[bool, typer.Option("--json", help="One JSON entry per line.")] = False,
    after: Annotated[str | None, typer.Option(help="Start after this entry id.")] = None,
    op: Annotated[
        str | None, typer.Option(help="Only this op (`memory` for every memory.*).")
    ] = None,
    scope: Annotated[str | None, typer.Option(help="Only this scope.")] = None,
    url: Url = None,
) -> None:
    """Print the journal; with --follow, the live change feed (resuming by itself after
    the daemon restarts). Without --follow and --after, every entry from the first."""

    def emit(entry: JournalEntry) -> None:
        if json_lines:
            typer.echo(entry.model_dump_json())
        else:
            typer.echo(describe(entry))

    with daemon(url) as aster:
        last = after
        if not follow or after is not None:
            for entry in aster.journal(after=after, op=op, scope=scope):
                emit(entry)
                last = entry.id
        else:  # from now on: the newest entry is where the feed starts
            for entry in aster.journal():
                last = entry.id
        if follow:
            for item in aster.follow(after=last, op=op, scope=scope):
                if isinstance(item, JournalEntry):
                    emit(item)


@sessions_app.command("import")
def import_command(
    paths: Annotated[list[Path], typer.Argument(help="Files, or folders to search for them.")],
    format: Annotated[
        str, typer.Option(help="auto, native, claude-code, codex or openai-chat.")
    ] = "auto",
    repo_root: Annotated[
        str | None, typer.Option(help="The project, when a file does not say.")
    ] = None,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Import transcripts written by other tools (a ~/.claude/projects or ~/.codex/sessions
    tree, say). Importing the same files again creates nothing. Exits 1 if any failed."""
    from rich.progress import Progress

    from .importers import FORMATS

    if format != "auto" and format not in FORMATS:
        raise fail(f"unknown format {format!r}; use one of auto, {', '.join(FORMATS)}", 2)
    files = transcript_files(paths)
    if not files:
        raise fail("no .jsonl or .json files found there", 2)
    results: list[dict[str, Any]] = []
    with daemon(url) as aster, Progress(transient=True, disable=json_out) as bar:
        task = bar.add_task("importing", total=len(files))
        for path in files:
            row: dict[str, Any] = {"file": str(path)}
            try:
                done = aster.import_file(path.read_bytes(), format=format, repo_root=repo_root)
                row |= {
                    "format": done.format,
                    "imported": done.imported,
                    "already_imported": done.already_imported,
                    "sessions": [s.id for s in done.sessions],
                }
            except (api.ApiError, OSError) as exc:
                row["failed"] = str(exc)
            results.append(row)
            bar.advance(task)
    failed = [r for r in results if "failed" in r]
    if json_out:
        emit_json({"files": results})
    else:
        table(
            "file",
            "format",
            "imported",
            "already here",
            "failed",
            rows=[
                [
                    r["file"],
                    r.get("format", "-"),
                    r.get("imported", 0),
                    r.get("already_imported", 0),
                    r.get("failed", ""),
                ]
                for r in results
            ],
        )
        typer.echo(
            f"{sum(r.get('imported', 0) for r in results)} sessions imported, "
            f"{sum(r.get('already_imported', 0) for r in results)} already here, "
            f"{len(failed)} files failed"
        )
    if failed:
        raise typer.Exit(EXIT_REFUSED)


def transcript_files(paths: list[Path]) -> list[Path]:
    """The files named, and every .jsonl and .json file under the folders named."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += sorted(
                p for p in path.rglob("*") if p.suffix in (".jsonl", ".json") and p.is_file()
            )
        else:
            out.append(path)
    return out
