"""``du``: what the data home takes (by kind, project and tool) and what emptying the
trash or compressing cold sessions would free, from the running daemon."""

from __future__ import annotations

from typing import Any

import typer

from .common import Json, Url, daemon, emit_json, table


def du_command(json_out: Json = False, url: Url = None) -> None:
    """What the data home takes, by kind, project and tool, and what could be freed."""
    with daemon(url) as aster:
        space: dict[str, Any] = aster.info(space=True)["space"]
    if json_out:
        return emit_json(space)
    kinds = [[kind, _size(n)] for kind, n in space["kinds"].items() if n]
    table("kind", "size", rows=[*kinds, ["total", _size(space["total"])]])
    typer.echo("")
    table(
        "project",
        "sessions",
        "size",
        rows=[[p["repo_root"], p["sessions"], _size(p["bytes"])] for p in space["projects"]],
        keys=("project",),
    )
    typer.echo("")
    table(
        "tool",
        "sessions",
        "size",
        rows=[[t["tool"], t["sessions"], _size(t["bytes"])] for t in space["tools"]],
    )
    cold, trash = space["compression"], space["trash"]
    if cold["sessions"]:
        typer.echo(
            f"compressing {cold['sessions']} sessions idle {cold['after_days']:g} days or more "
            f"would free about {_size(cold['would_free'])} "
            "(aster-persist sessions compress --apply)",
            err=True,
        )
    if trash["sessions"]:
        typer.echo(
            f"emptying the trash ({trash['sessions']} sessions) would free "
            f"{_size(trash['bytes'])} "
            "(aster-persist sessions prune --purge-trash-older-than-days 0 --apply)",
            err=True,
        )


def _size(n: int) -> str:
    for unit, step in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= step:
            return f"{n / step:.1f} {unit}"
    return f"{n} B"
