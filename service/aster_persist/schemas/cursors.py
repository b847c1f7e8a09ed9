"""Page cursors: the sort key of the last item on a page, written out, for a client to
hand back for the next page.

Every string a cursor's pattern matches is a place in its order (keys compare as text,
or as numbers), so any of them is answered with the items after it; anything else is
refused (422 ``invalid``). The OpenAPI document shows these patterns, so a cursor valid
by the document is one the server takes.

- a listing (sessions, memory blocks, projects): ``<time>~<key>``, newest first;
- search hits: ``<rank>~<row>``, best first;
- a session's events: the last seq; the journal: the last entry id.
"""

from __future__ import annotations

import re

LISTING = re.compile(r"^([0-9A-Za-z:.+_-]{0,64})~([0-9A-Za-z._-]{1,128})$")
RANKED = re.compile(r"^(-?[0-9]{1,20}(?:\.[0-9]{1,20})?(?:e[+-]?[0-9]{1,3})?)~([0-9]{1,18})$")
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


def read_ranked_cursor(cursor: str) -> tuple[float, int]:
    match = RANKED.match(cursor)
    if match is None:
        raise BadCursor(f"cursor must match {RANKED.pattern}")
    return float(match[1]), int(match[2])
