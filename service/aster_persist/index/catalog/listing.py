"""How a listing of sessions is filtered and ordered: the catalog's SQL for each filter
and each sort key, kept apart from the catalog's upkeep."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..ranking import NUMBER_OF

# Each sort key's SQL over a catalog row; numbers except the two times.
_STAT = "json_extract(stats, '$.{}')"
SORTS: dict[str, str] = {
    "updated": "activity_at",  # a session with no times of its own after every other
    "created": "created_at",
    "events": "events",
    "turns": _STAT.format("turns"),
    "tool_calls": _STAT.format("tool_calls"),
    "tool_errors": _STAT.format("tool_errors"),
    "tokens": f"({_STAT.format('tokens_in')} + {_STAT.format('tokens_out')})",
    "duration": (
        "CAST(round((julianday(updated_at) - julianday(coalesce(nullif("
        f"{_STAT.format('first_ts')}, ''), created_at))) * 86400000) AS INTEGER)"
    ),
}
TEXT_SORTS = ("updated", "created")
_NUMBER = re.compile(r"-?[0-9]{1,18}")
API_SOURCE = "api"  # what a session written through the API (no source tool) is listed as


@dataclass(frozen=True)
class Listing:
    """Filters and order of a listing: the tool a session came from (``api`` for one
        written through the API), a model that wrote in it, its last activity from ``since``
        and before ``until`` (stored times), whether it had tool errors, whether its text
    holds secrets, only sessions no
        other started; sorted by ``sort``, the largest or latest first unless not
        ``descending``."""

    source_tool: str | None = None
    model: str | None = None
    since: str | None = None
    until: str | None = None
    errors: bool | None = None
    secrets: bool | None = None
    top_level: bool = False
    sort: str = "updated"
    descending: bool = True
    # with a repository root: its project's key, so the team's copies of the project's
    # sessions made at other paths are listed too
    project_key: str | None = None

    def where(self) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        args: list[Any] = []
        if self.source_tool == API_SOURCE:
            where.append("source_tool IS NULL")
        elif self.source_tool is not None:
            where.append("source_tool = ?")
            args.append(self.source_tool)
        if self.model is not None:
            where.append("EXISTS (SELECT 1 FROM json_each(stats, '$.models') WHERE value = ?)")
            args.append(self.model)
        if self.since is not None:
            where.append("updated_at >= ?")
            args.append(self.since)
        if self.until is not None:
            where.append("updated_at < ?")
            args.append(self.until)
        if self.errors is not None:
            where.append(f"{SORTS['tool_errors']} {'>' if self.errors else '='} 0")
        if self.secrets is not None:
            number = NUMBER_OF.format("sessions.id")
            held = f"EXISTS (SELECT 1 FROM docs WHERE docs.session = {number} AND secrets > 0)"
            where.append(held if self.secrets else f"NOT {held}")
        if self.top_level:
            where.append("parent_source IS NULL")
        return where, args

    def after(self, value: str, key: str) -> tuple[str, list[Any]]:
        """The condition for rows after the cursor ``value~key`` in this order."""
        sort = SORTS[self.sort]
        # in a number order, a value that is no number SQLite holds is text, which SQLite
        # puts after every number: still a place in the order, as every cursor is
        number = self.sort not in TEXT_SORTS and _NUMBER.fullmatch(value)
        wanted: Any = int(value) if number else value
        return f"({sort}, id) {'<' if self.descending else '>'} (?, ?)", [wanted, key]

    def order(self) -> str:
        way = "DESC" if self.descending else "ASC"
        return f"{SORTS[self.sort]} {way}, id {way}"

    def key(self) -> str:
        return SORTS[self.sort]


NEWEST = Listing()  # every session, the latest activity first
