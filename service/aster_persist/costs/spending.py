"""``GET /v1/stats`` and ``aster-persist stats``: what the sessions did and cost over a
span of days (UTC, by each event's own time), in total and by day, project or model.

Read from the catalog's ledger of each session (counts by day and model, kept as its
lines are folded in), never from the transcripts. Cost is an estimate from ``Prices``;
tokens of a model without a price are counted and the model named, never priced."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from dataclasses import asdict
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

import orjson

from ..storage.summary import LEDGER
from . import Prices

if TYPE_CHECKING:
    from ..services.sessions import Sessions

GROUPS = ("day", "project", "model")


def _rows(db: sqlite3.Connection, since: str, until: str, root: str | None) -> list[Any]:
    """(session, repository root, "<day>|<model>", counts) from the day ``since`` to
    before the key ``until`` (ledger keys begin with their day, so they compare as days)."""
    sql = (
        "SELECT s.id, s.repo_root, e.key, e.value FROM sessions s, "
        "json_each(s.stats, '$.ledger') e WHERE e.key >= ? AND e.key < ?"
    )
    args: list[Any] = [since, until]
    if root is not None:
        sql += " AND s.repo_root = ?"
        args.append(root)
    return list(db.execute(sql, args))


class Spending:
    """Totals of the sessions' ledgers, priced."""

    def __init__(self, sessions: Sessions, prices: Prices) -> None:
        self._sessions = sessions
        self.prices = prices

    async def report(
        self, since: date | None, until: date | None, group: str | None, repo_root: str | None
    ) -> dict[str, Any]:
        today = self._sessions.now().date()
        first, last = since or today, until or today
        # the first key after the last day's (a key is "<day>|<model>")
        end = "9999-12-32" if last == date.max else (last + timedelta(days=1)).isoformat()
        root = await self._sessions.repo_root(repo_root) if repo_root is not None else None
        rows = await self._sessions.in_catalog(lambda c: _rows(c.db, first.isoformat(), end, root))
        total = _Sum()
        groups: dict[str, _Sum] = defaultdict(_Sum)
        for sid, repo, key, value in rows:
            day, _, model = str(key).partition("|")
            counts = orjson.loads(value) if isinstance(value, str) else value
            cost = self._cost(model, counts)
            total.add(sid, model, counts, cost)
            if group is not None:
                name = {"day": day, "project": repo, "model": model}[group]
                groups[name].add(sid, model, counts, cost)
        return {
            "since": first.isoformat(),
            "until": last.isoformat(),
            "repo_root": root,
            "group": group,
            "prices": self.prices.about(),
            "total": total.shown(),
            "groups": [
                {"key": name or None, **found.shown()}
                for name, found in sorted(groups.items(), key=_order(group))
            ],
        }

    def of_session(self, ledger: dict[str, list[int]], models: list[str]) -> dict[str, Any]:
        """What one session's turns cost (its ledger), and the prices of its models."""
        found = _Sum()
        for key, counts in ledger.items():
            model = key.partition("|")[2]
            found.add("", model, counts, self._cost(model, counts))
        prices = {m: price for m in models if (price := self.prices.of(m)) is not None}
        shown = found.shown()
        return {
            "cost_usd": shown["cost_usd"],
            "unpriced_models": shown["unpriced_models"],
            "prices": {m: asdict(p) for m, p in prices.items()},
        }

    def _cost(self, model: str, counts: list[int]) -> float | None:
        price = self.prices.of(model) if model else None
        if price is None:
            return None
        tokens_in, tokens_out, cached_in = counts[3], counts[4], counts[5]
        return price.of(tokens_in, tokens_out, cached_in)


class _Sum:
    def __init__(self) -> None:
        self.sessions: set[str] = set()
        self.counts = [0] * len(LEDGER)
        self.cost = 0.0
        self.priced = False
        self.unpriced: set[str] = set()

    def add(self, sid: str, model: str, counts: list[int], cost: float | None) -> None:
        self.sessions.add(sid)
        for kind, n in enumerate(counts[: len(LEDGER)]):
            self.counts[kind] += int(n)
        tokens = counts[3] + counts[4]
        if cost is not None:
            self.cost += cost
            self.priced = True
        elif tokens:
            self.unpriced.add(model or "unknown")

    def shown(self) -> dict[str, Any]:
        return {
            "sessions": len(self.sessions),
            **dict(zip(LEDGER, self.counts, strict=True)),
            "cost_usd": round(self.cost, 4) if self.priced else None,
            "unpriced_models": sorted(self.unpriced),
        }


def _order(group: str | None) -> Any:
    if group == "day":
        return lambda item: item[0]
    return lambda item: (-(item[1].counts[3] + item[1].counts[4]), item[0])
