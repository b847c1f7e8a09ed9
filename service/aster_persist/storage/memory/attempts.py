"""How a memory write fails and tries again: a full disk is 507 and any other I/O error
500, saying what could not be done; a stale ``If-Match`` is 412 with the current ETag;
a write that a hand edit overtook (``Changed``: the edit is journaled) is built again
on it, up to 8 times, then 409.
"""

from __future__ import annotations

import contextlib
import errno
import functools
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

from ...errors import Conflict, InsufficientStorage, PreconditionFailed, StorageFailed
from ...schemas.conditions import TagCondition, holds

P = ParamSpec("P")
T = TypeVar("T")
ATTEMPTS = 8


class Changed(Exception):
    """The file changed by hand between reading it and replacing it (journaled)."""


@contextlib.contextmanager
def disk(what: str) -> Iterator[None]:
    """A full disk as 507 and any other I/O error as 500, saying what could not be done."""
    try:
        yield
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise InsufficientStorage(f"{what}: the disk is full") from exc
        raise StorageFailed(f"{what}: {exc.strerror or exc}") from exc


def retried(write: Callable[P, T]) -> Callable[P, T]:
    """``write`` run until no hand edit lands between its read and its replace; each edit
    that does is journaled first, and the next attempt builds on it (an ``If-Match`` is
    then stale: 412)."""

    @functools.wraps(write)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        with disk("could not change memory"):
            for _ in range(ATTEMPTS - 1):
                try:
                    return write(*args, **kwargs)
                except Changed:
                    continue
            try:
                return write(*args, **kwargs)
            except Changed:
                raise Conflict(
                    f"the file was edited by hand {ATTEMPTS} times while this write was "
                    "made; every edit is journaled: try again"
                ) from None

    return run


def check_etag(what: str, if_match: TagCondition, etag: str) -> None:
    """412 with the current ETag when ``if_match`` is given and is not it."""
    if not holds(if_match, etag):
        raise PreconditionFailed(f"{what} changed since you read it", current=etag)
