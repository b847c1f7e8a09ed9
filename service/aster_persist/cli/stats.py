"""``aster-persist stats``: what the sessions did and cost over a span of days, as the
dashboard shows it (``GET /v1/stats``), in total and by day, project or model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, cast

import typer

from .common import Json, Url, daemon, emit_json, table

Group = Annotated[str | None, typer.Option(help="Split by day, project or model.")]


def stats_command(
    days: Annotated[int, typer.Option(min=1, max=3660, help="The last N days, today too.")] = 1,
    group: Group = None,
    repo_root: Annotated[str | None, typer.Option(help="One project's sessions.")] = None,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Sessions, turns, tool calls, tool errors, tokens (cache reads apart) and the
    estimated cost of the last ``--days`` days (UTC), by ``--group`` day, project or
    model. A model without a price is counted and named, never priced."""
    since = (datetime.now(UTC) - timedelta(days=days - 1)).date().isoformat()
    if group not in (None, "day", "project", "model"):
        raise typer.BadParameter("--group is day, project or model")
    by = cast(Literal["day", "project", "model"] | None, group)
    with daemon(url) as aster:
        found: dict[str, Any] = aster.stats(since=since, group=by, repo_root=repo_root)
    if json_out:
        return emit_json(found)
    rows = [["total", *_figures(found["total"])]]
    rows += [[g["key"] or "(unknown)", *_figures(g)] for g in found["groups"]]
    table(
        group or "span",
        "sessions",
        "turns",
        "tool calls",
        "errors",
        "tokens in",
        "cached",
        "out",
        "cost (est.)",
        rows=rows,
    )
    prices = found["prices"]
    typer.echo(f"{found['since']} to {found['until']} (UTC)")
    typer.echo(f"prices: {prices['source']} (read {prices['date']})", err=True)
    if unpriced := found["total"]["unpriced_models"]:
        typer.echo(f"no price for {', '.join(unpriced)}: tokens counted, not priced", err=True)


def _figures(spent: dict[str, Any]) -> list[Any]:
    cost = spent["cost_usd"]
    return [
        spent["sessions"],
        spent["turns"],
        spent["tool_calls"],
        spent["tool_errors"],
        spent["tokens_in"],
        spent["cached_in"],
        spent["tokens_out"],
        "-" if cost is None else f"${cost:,.2f}",
    ]
