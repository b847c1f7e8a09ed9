"""What tokens cost: a price table kept in the project (``prices.toml``: per model and
token kind, with the date and source it was read from), overridden or added to by the
``prices`` setting. A model without a price costs nothing made up: its tokens are
counted and it is named as unpriced."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

_DATED = re.compile(r"(-\d{8}|-latest)$")
KINDS = ("input", "cached_input", "output")


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens of each kind."""

    input: float
    cached_input: float
    output: float

    def of(self, tokens_in: int, tokens_out: int, cached_in: int) -> float:
        """``tokens_in`` counts the cached ones too (as every usage here does)."""
        fresh = max(tokens_in - cached_in, 0)
        spent = fresh * self.input + cached_in * self.cached_input + tokens_out * self.output
        return spent / 1_000_000


class Prices:
    """The price table and its overrides, by model."""

    def __init__(self, overrides: dict[str, dict[str, float]] | None = None) -> None:
        table = tomllib.loads(resources.files(__package__).joinpath("prices.toml").read_text())
        self.source = str(table["source"])
        self.date = str(table["date"])
        self._models = {name: _price(found) for name, found in table["models"].items()}
        self.overridden = sorted(overrides or {})
        for name, found in (overrides or {}).items():
            base = self._models.get(name)
            self._models[name] = _price({**(base.__dict__ if base else {}), **found})

    def of(self, model: str) -> Price | None:
        return self._models.get(model) or self._models.get(_DATED.sub("", model))

    def about(self) -> dict[str, Any]:
        return {"source": self.source, "date": self.date, "overridden": self.overridden}


def _price(found: dict[str, Any]) -> Price:
    missing = [kind for kind in KINDS if kind not in found and kind != "cached_input"]
    if missing:
        raise ValueError(f"a price needs {' and '.join(missing)} (US dollars a million tokens)")
    return Price(
        input=float(found["input"]),
        cached_input=float(found.get("cached_input", found["input"])),
        output=float(found["output"]),
    )
