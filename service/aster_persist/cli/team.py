"""``aster-persist team status``: whether this machine shares sessions and memory with a team,
whether the cluster answers, the machines seen, what waits and the replication lag."""

from __future__ import annotations

import time
from typing import Any

import typer

from .common import Json, Url, daemon, emit_json, table

team_app = typer.Typer(
    help="The team this machine shares sessions and memory with.", no_args_is_help=True
)


@team_app.command("status")
def status(json_out: Json = False, url: Url = None) -> None:
    """Connected or not, the machines seen, what waits in each direction, the lag."""
    with daemon(url) as aster:
        found: dict[str, Any] = aster.team()
    if json_out:
        return emit_json(found)
    if not found["enabled"]:
        typer.echo(f"{found['machine']}: alone (set ASTER_TEAM_URL to join a team)")
        return
    state = "connected" if found["connected"] else f"not connected ({found['error']})"
    typer.echo(f"{found['machine']}: {state} to {', '.join(found['servers'])}")
    pending, lag = found["pending"], found["lag_ms"]
    waiting_in = "unknown" if pending["in"] is None else pending["in"]
    typer.echo(
        f"waiting: {pending['out']} sessions to publish, {waiting_in} lines to copy; "
        f"published {found['published']}, copied {found['applied']}"
    )
    memory = found["memory"]
    typer.echo(
        f"memory: {memory['shared_projects']} projects shared, {memory['pending']} files "
        f"waiting to be set, {memory['conflicts']} conflicts to review"
    )
    if lag["p50"] is not None:
        typer.echo(f"lag: {lag['p50']:g} ms median, {lag['max']:g} ms at most")
    now = time.time()
    table(
        "machine",
        "last seen",
        rows=[[m["machine"], f"{now - m['last_seen']:.0f} s ago"] for m in found["machines"]],
    )
