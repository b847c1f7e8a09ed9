"""What an ``If-Match`` asks of a write (RFC 9110, section 13.1.1): the version it was
read at. A caller inside the daemon passes the one ETag (or seq) it read; a request's
header may name several entity tags, passed as a set: the write holds if the current
version is among them. ``ANY`` (``*``) holds for any version of what exists; ``None``
asks nothing."""

from __future__ import annotations

from typing import TypeVar

V = TypeVar("V", int, str)

ANY = "*"  # If-Match: * (a memory file must exist; a session's write answers 404 if not)

SeqCondition = int | frozenset[int] | None  # a session's last seq
TagCondition = str | frozenset[str] | None  # a memory file's ETag, quoted


def holds(condition: V | frozenset[V] | None, current: V) -> bool:
    """Whether a write asked on ``condition`` may go on at version ``current``."""
    if condition is None or condition == ANY:
        return True
    if isinstance(condition, frozenset):
        return current in condition
    return condition == current


def named(condition: V | frozenset[V]) -> str:
    """The version(s) asked for, in words."""
    if isinstance(condition, frozenset):
        if not condition:
            return "(none: its entity tags are weak, or not of this store)"
        return " or ".join(str(v) for v in sorted(condition))
    return str(condition)
