"""How hard the proof tests push: a quick version in `make test`, the long one in
`make proof` (ASTER_PROOF=1). Each test records what it did for the table `make proof`
prints (test-artifacts/proof.jsonl)."""

from __future__ import annotations

import json
import os
from pathlib import Path

PROOF = os.environ.get("ASTER_PROOF") == "1"
RESULTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "proof.jsonl"


def rounds(quick: int, long: int) -> int:
    return long if PROOF else quick


def record(
    name: str, *, rounds: int, faults: int, checked: int, lost: int, figure: str = ""
) -> None:
    """One row of the proof table; ``figure`` is the promise's own measure, in words."""
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    row = {"test": name, "rounds": rounds, "faults": faults, "checked": checked, "lost": lost}
    if figure:
        row["figure"] = figure
    with RESULTS.open("a") as handle:
        handle.write(json.dumps(row) + "\n")
