"""``journal``: the journal's entries, one line each, filtered, and with ``--follow``
the live change feed (every kind of change, appends too), resumed by itself after the
daemon restarts; ``journal revert`` undoes one entry, or says what it would write."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from ulid import ULID

from ..schemas.journal import JournalEntry
from .common import EXIT_NOT_FOUND, Json, Url, daemon, emit_json, fail, session_id

journal_app = typer.Typer(
    help="The journal: every change, who made it, and how to undo it.",
    invoke_without_command=True,
)


def describe(entry: JournalEntry | dict[str, Any]) -> str:
    """One journal entry (or an append's notice) as a line for people."""
    if isinstance(entry, dict):  # a session.appended notice
        seqs = f"seq {entry.get('first_seq')}-{entry.get('last_seq')}"
        return f"{'':24}  {'session.appended':<17} {entry.get('scope')}  {entry.get('session_id')} {seqs}"
    what = entry.name or entry.session or ""
    detail = entry.detail or {}
    extra = ""
    if "first_seq" in detail:
        extra = f" seq {detail['first_seq']}-{detail['last_seq']}"
    elif "title" in detail:
        extra = f" {detail['title']!r}"
    return f"{entry.ts}  {entry.op:<17} {entry.scope}  {what}{extra}  ({entry.actor})  {entry.id}"


def since_cursor(value: str) -> str:
    """A cursor that starts at a moment: a date or time (UTC unless it says), as a
    journal id of that moment (ids are ULIDs, in time order)."""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not a date or time (2026-12-01, or with T12:00)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    millis = int(moment.timestamp() * 1000) - 1  # every entry of that moment is after it
    return str(ULID.from_bytes(max(millis, 0).to_bytes(6, "big") + b"\xff" * 10))


@journal_app.callback()
def journal_command(
    context: typer.Context,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing changes as they happen.")
    ] = False,
    json_lines: Annotated[bool, typer.Option("--json", help="One JSON entry per line.")] = False,
    after: Annotated[
        str | None, typer.Option(help="Start after this entry id.", callback=checked_entry)
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Start at this date or time (UTC unless it says).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="Only the newest this many (not with --follow).")
    ] = None,
    op: Annotated[
        str | None, typer.Option(help="Only this op (`memory` for every memory.*).")
    ] = None,
    scope: Annotated[str | None, typer.Option(help="Only this scope.")] = None,
    session: Annotated[
        str | None, typer.Option(help="Only this session's changes.", callback=checked_session)
    ] = None,
    url: Url = None,
) -> None:
    """Print the journal, oldest first; with --follow, the live change feed (appends
    too), resuming by itself after the daemon restarts. Without --follow, --after and
    --since, every entry from the first."""
    if context.invoked_subcommand is not None:
        return
    if limit is not None and follow:
        raise fail("--limit takes the newest entries; it does not go with --follow", 2)
    if after is not None and since is not None:
        raise fail("give --after or --since, not both", 2)
    start = since_cursor(since) if since is not None else after

    def emit(entry: JournalEntry | dict[str, Any]) -> None:
        if json_lines:
            emit_json(entry)
        else:
            typer.echo(describe(entry))

    with daemon(url) as aster:
        last = start
        if not follow or start is not None:
            entries = aster.journal(after=start, session=session, op=op, scope=scope)
            if limit is not None:
                entries = iter(list(entries)[-limit:])
            for entry in entries:
                emit(entry)
                last = entry.id
        else:  # from now on: the newest entry is where the feed starts
            for entry in aster.journal():
                last = entry.id
        if follow:
            for item in aster.follow(after=last, notices=True, op=op, scope=scope):
                mine = item.session if isinstance(item, JournalEntry) else item.get("session_id")
                if session is None or mine == session:
                    emit(item)


@journal_app.command("revert")
def journal_revert(
    entry_id: Annotated[
        str, typer.Argument(metavar="ID", help="The entry, as `journal` shows it.")
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what the revert would write; change nothing.")
    ] = False,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Undo one journaled change (the revert is journaled too, so it can be undone in
    turn); with --dry-run, what it would write."""
    entry_id = entry_id_of(entry_id)
    before_it = str(ULID.from_int(int(ULID.from_str(entry_id)) - 1)) if entry_id != MIN_ID else None
    with daemon(url) as aster:
        page = aster.journal_page(cursor=before_it, limit=1)
        if not page.items or page.items[0].id != entry_id:
            raise fail(f"no journal entry {entry_id}", EXIT_NOT_FOUND)
        entry = page.items[0]
        if dry_run:
            plan = planned(entry)
            if json_out:
                emit_json(plan)
            else:
                typer.echo(plan["says"])
            if not plan["would_revert"]:
                raise typer.Exit(1)  # as the revert itself would be refused
            return
        if not entry.revertible:
            raise fail(f"a {entry.op} entry cannot be reverted", 1)
        done = aster.revert(entry_id)
    if json_out:
        return emit_json(done)
    undone = f"{done.op} {done.id}" if done.op else f"session {done.session}"
    typer.echo(f"reverted {entry_id}: {undone}")


MIN_ID = "0" * 26


def entry_id_of(value: str) -> str:
    """A journal entry id as the journal writes it (exit 2 if it is none)."""
    try:
        return str(ULID.from_str(value))
    except (ValueError, OverflowError):
        raise fail(f"{value!r} is not a journal entry id (a ULID)", 2) from None


def checked_entry(value: str | None) -> str | None:
    return None if value is None else entry_id_of(value)


def checked_session(value: str | None) -> str | None:
    return None if value is None else session_id(value)


def planned(entry: JournalEntry) -> dict[str, Any]:
    """What reverting ``entry`` would do, for --dry-run."""
    out: dict[str, Any] = {"entry": entry.id, "op": entry.op, "revertible": entry.revertible}
    before = entry.before if isinstance(entry.before, dict) else None
    after = entry.after if isinstance(entry.after, dict) else None
    moved = after is not None and after.get("path") != (before or {}).get("path")
    refused = False
    if not entry.revertible:
        says, refused = f"{entry.id} ({entry.op}) cannot be reverted; nothing would change", True
    elif entry.op.startswith("memory."):
        if before is None:
            says = f"would remove {entry.scope}/{entry.name}, which this change created"
        elif "withheld" in before:
            says = (
                f"would be refused: what {before.get('path')} held then was a secret, which "
                "the journal never kept and memory never takes back"
            )
            refused = True
        else:
            content = (
                base64.b64decode(before["content_base64"]).decode("utf-8", "replace")
                if "content_base64" in before
                else str(before.get("content", ""))
            )
            out["path"], out["content"] = before.get("path"), content
            gone = f" and remove {after['path']}" if moved and after is not None else ""
            says = f"would write {before.get('path')} back as it was{gone}:\n{content}"
    elif entry.op in ("session.deleted", "session.pruned"):
        says = f"would bring session {entry.session} back from the trash"
    elif entry.op == "session.renamed":
        title = (before or {}).get("title")
        refused = not title
        says = (
            f"would rename session {entry.session} back to {title!r}"
            if title
            else f"{entry.id} cannot be reverted: the session had no title before; rename it"
        )
    else:
        says = f"would move session {entry.session} to the trash"
    out["says"], out["would_revert"] = says, not refused
    return out
