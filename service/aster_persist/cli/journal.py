"""``journal``: the journal's entries, one line each, and with ``--follow`` the live
change feed, resumed by itself after the daemon restarts."""

from __future__ import annotations

from typing import Annotated

import typer

from ..schemas.journal import JournalEntry
from .common import Url, daemon


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
