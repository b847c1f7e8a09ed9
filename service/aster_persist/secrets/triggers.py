"""Triggers: which of many checks a line calls for, from the words each one needs.

Each rule and plugin names words one of which a line must hold before its pattern runs.
Testing each check's words in turn reads the line once per check; ``Triggers`` tests
each distinct word once and returns the checks they call for, in their own order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

T = TypeVar("T")


class Triggers(Generic[T]):
    """Checks, each with the words (lowercase) one of which a line must hold for it."""

    def __init__(self, checks: Sequence[tuple[tuple[str, ...], T]]) -> None:
        self._checks = [check for _, check in checks]
        index: dict[str, list[int]] = {}
        for n, (words, _) in enumerate(checks):
            for word in words:
                index.setdefault(word, []).append(n)
        self._index = {word: tuple(found) for word, found in index.items()}

    def called(self, low: str) -> list[T]:
        """The checks ``low`` (a line in lowercase) holds a word of, in their order."""
        found = {n for word, checks in self._index.items() if word in low for n in checks}
        return [self._checks[n] for n in sorted(found)]
