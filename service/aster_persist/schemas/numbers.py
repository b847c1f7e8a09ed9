"""Whole numbers as JSON Schema counts them: ``5`` and ``5.0`` are both the integer 5 (a
number with no fractional part), and neither ``"5"`` nor ``true`` is one. Strict models
mark an integer ``WHOLE``, after its bounds (``Annotated[int, Field(ge=1), WHOLE]``: in
that order the document keeps the bounds), so a value valid by the document is accepted."""

from __future__ import annotations

from typing import Any

from pydantic import BeforeValidator


def integral(value: Any) -> Any:
    """A float with no fractional part as the int it is; anything else as it came."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WHOLE = BeforeValidator(integral)
