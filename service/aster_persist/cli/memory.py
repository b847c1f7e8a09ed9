"""``memory``: list, show, add, remove, archive, restore, context, search and
consolidate, against the running daemon (output and exit codes as in `common.py`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .common import (
    Json,
    ProjectArgument,
    RepoRoot,
    Url,
    daemon,
    emit_json,
    fail,
    one_project,
    short,
    table,
)

memory_app = typer.Typer(help="Memory in the running daemon.", no_args_is_help=True)


@memory_app.command("list")
def memory_list(
    named: ProjectArgument = None,
    repo_root: RepoRoot = None,
    tag: Annotated[str | None, typer.Option(help="Only blocks with this tag.")] = None,
    type: Annotated[str | None, typer.Option(help="semantic or procedural.")] = None,
    archived: Annotated[bool, typer.Option(help="Archived blocks too.")] = False,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """The memory blocks of a scope (a project's when it is named)."""
    repo_root = one_project(named, repo_root)
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
        lesser=("importance", "state", "tags"),
        times=("updated",),
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
    text: Annotated[
        str, typer.Argument(help="What to remember (text that starts with - goes after --).")
    ],
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
def memory_remove(
    name: str, repo_root: RepoRoot = None, json_out: Json = False, url: Url = None
) -> None:
    """Forget a block (the journal keeps it: `journal revert` brings it back)."""
    with daemon(url) as aster:
        aster.forget(name, repo_root)
    if json_out:
        return emit_json({"name": name, "repo_root": repo_root, "forgotten": True})
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
    """Blocks and core memory (ASTER.md) by relevance to words, best first; `match` is
    each hit's score against the best one's (1.00)."""
    if not query.strip():
        raise fail('say what to search for: a word, a "phrase" or prefix*', 2)
    with daemon(url) as aster:
        page = aster.search(query, kind="memory", repo_root=repo_root, limit=k)
    if json_out:
        return emit_json(page)
    best = max((h.score for h in page.items), default=0.0)
    table(
        "name",
        "scope",
        "match",
        "snippet",
        rows=[
            [
                "ASTER.md" if h.kind == "core" else h.name,
                h.scope,
                f"{h.score / best:.2f}" if best > 0 else "",
                short(h.snippet, 70),
            ]
            for h in page.items
        ],
        lesser=("scope",),
    )


@memory_app.command("consolidate")
def memory_consolidate(
    repo_root: RepoRoot = None,
    apply: Annotated[
        bool, typer.Option(help="Make the changes (journaled, revertible); else a dry run.")
    ] = False,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """What the model proposes for a scope's blocks (merges, archives, new), with its
    reasons: a dry run unless --apply. Needs a model (ASTER_LLM_BASE_URL)."""
    with daemon(url) as aster:
        plan = aster.consolidate(repo_root, apply=apply)
    if json_out:
        return emit_json(plan)
    rows = [["merge", f"{', '.join(m['from'])} → {m['into']}", m["reason"]] for m in plan.merges]
    rows += [["archive", a["name"], a["reason"]] for a in plan.archives]
    rows += [["new", n["title"], n["reason"]] for n in plan.new]
    rows += [["refused", "", r["reason"]] for r in plan.rejected]
    if not rows:
        typer.echo("Nothing to change.")
        return None
    table("change", "blocks", "reason", rows=rows)
    if not plan.applied:
        typer.echo("A dry run: nothing was changed (--apply makes these).", err=True)
    return None
