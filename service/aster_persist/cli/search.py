"""``search``: past sessions (and memory with ``--kind``) by relevance, against the
running daemon."""

from __future__ import annotations

from typing import Annotated, Literal, cast

import typer

from .common import Json, Url, daemon, emit_json, fail, project, short, table
from .common import more as more_of


def search_command(
    query: str,
    kind: Annotated[str, typer.Option(help="messages, memory or all.")] = "messages",
    repo_root: Annotated[
        str | None,
        typer.Option(
            help="Only this project (its repository, or a folder in it).", callback=project
        ),
    ] = None,
    session: Annotated[str | None, typer.Option(help="Only this session.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 20,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Search past sessions (and memory with --kind): any of the words, best first;
    "phrases", prefix*, AND/OR/NOT and repo:/session:/role:/after:/before: filters work."""
    if kind not in ("messages", "memory", "all"):
        raise fail(f"unknown kind {kind!r}: use messages, memory or all", 2)
    if not query.strip():
        raise fail('say what to search for: a word, a "phrase", prefix* or a filter', 2)
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
        lesser=("kind",),
        times=("when",),
    )
    if page.next_cursor:
        more = f"--limit {min(2 * limit, 100)}" if limit < 100 else "filters (repo:, after:…)"
        more_of(f"the best {len(page.items)} of more; see more with {more}")
