"""Page cursors: the sort key of the last item on a page, written out, for a client to
hand back for the next page.

Every string a cursor's pattern matches is a place in its order (keys compare as text,
or as numbers), so any of them is answered with the items after it; anything else is
refused (422 ``invalid``). The OpenAPI document shows these patterns, so a cursor valid
by the document is one the server takes.

- a listing (sessions, memory blocks, projects): ``<time>~<key>``, newest first;
- search hits: ``<rank>~<row>``, best first; or ``r<n>``, the ``n``-th of the hits a
  reranker ordered (the first page's best, weighed again), and the rest after them;
- a session's events: the last seq; the journal: the last entry id.
"""

from __future__ import annotations

import re

LISTING = re.compile(r"^([0-9A-Za-z:.+_-]{0,64})~([0-9A-Za-z._-]{1,128})$")
RANKED = re.compile(
    r"^(?:(-?[0-9]{1,20}(?:\.[0-9]{1,20})?(?:e[+-]?[0-9]{1,3})?)~([0-9]{1,18})|r([0-9]{1,4}))$"
)
SEQ = re.compile(r"^[0-9]{1,18}$")


class BadCursor(ValueError):
    """A cursor that is not a place in the order it is given for."""


def listing_cursor(time: str, key: str) -> str:
    """The cursor after an item of a listing, from its time and its key."""
    return f"{time}~{key}"


def read_listing_cursor(cursor: str) -> tuple[str, str]:
    match = LISTING.match(cursor)
    if match is None:
        raise BadCursor(f"cursor must match {LISTING.pattern}")
    return match[1], match[2]


def ranked_cursor(rank: float, row: int) -> str:
    """The cursor after a search hit, from its rank and its row."""
    return f"{rank!r}~{row}"


def reranked_cursor(place: int) -> str:
    """The cursor after the ``place``-th hit of those a reranker ordered."""
    return f"r{place}"


def read_ranked_cursor(cursor: str) -> tuple[float, int] | int:
    """A place in the ranked order, or in the reranked hits (a number)."""
    match = RANKED.match(cursor)
    if match is None:
        raise BadCursor(f"cursor must match {RANKED.pattern}")
    if match[3] is not None:
        return int(match[3])
    return float(match[1]), int(match[2])
