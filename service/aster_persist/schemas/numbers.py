"""Whole numbers as JSON Schema counts them: ``5`` and ``5.0`` are both the integer 5 (a
number with no fractional part), and neither ``"5"`` nor ``true`` is one. Strict models
mark an integer ``WHOLE``, after its bounds (``Annotated[int, Field(ge=1), WHOLE]``: in
that order the document keeps the bounds), so a value valid by the document is accepted."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BeforeValidator


def integral(value: Any) -> Any:
    """A float with no fractional part as the int it is; anything else as it came."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WHOLE = BeforeValidator(integral)


LOWEST, HIGHEST = -(2**63), 2**64 - 1  # what a line may hold: a signed or unsigned 64 bits
_LONG = re.compile(rb"\d{19,}")  # the shortest integer past 64 bits has 19 digits
# every digit as 0 and anything else as a space: a run of 19 zeros is a run of 19 digits,
# found by a plain substring search (many times faster than the pattern on long text)
_DIGITS = bytes(0x30 if 0x30 <= n <= 0x39 else 0x20 for n in range(256))
_RUN = b"0" * 19


def fits(number: int) -> bool:
    return LOWEST <= number <= HIGHEST


def too_big(data: bytes) -> tuple[int, str] | None:
    """The line (from 1) and text of the first integer in JSON text ``data`` that does
    not fit in 64 bits (orjson would read it as a float, so what is stored would not be
    what was sent), else None. Only text with a run of 19 digits is read again."""
    if _RUN not in data.translate(_DIGITS):
        return None
    found = _LONG.search(data)
    if found is None:
        return None
    big = _first_big(data)
    if big is None:
        return None
    where = re.search(rb"(?<![\d.])" + re.escape(big.encode()) + rb"(?![\d.eE])", data)
    at = where.start() if where is not None else found.start()
    return data.count(b"\n", 0, at) + 1, big


def _first_big(data: bytes) -> str | None:
    seen: list[str] = []

    def whole(text: str) -> int:
        number = int(text)
        if not seen and not fits(number):
            seen.append(text)
        return number

    try:
        json.loads(data, parse_int=whole)
    except ValueError:
        return None  # not JSON to this decoder: orjson's verdict stands
    return seen[0] if seen else None
