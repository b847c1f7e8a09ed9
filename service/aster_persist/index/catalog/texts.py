"""What search shows of a document, read back from its transcript: the index keeps where
each document's line is (its offset and size), not its text.

A line is read again only for the documents a page of hits shows (and for those being
embedded, when search by meaning is on): each one's own bytes, from whichever form its
session is in. A line that is not there any more (the file was cut back or edited by
hand since it was indexed, or the session is gone) gives no text; the next catch-up of
the index takes the change in.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import StorageFailed, UnsafePath
from ...storage.jsonl import read_bytes
from ..ranking import WITH_SESSIONS
from ..text import text_of

if TYPE_CHECKING:
    from ..sqlite import sqlite3

_BATCH = 500  # documents looked up at once


def texts_of(
    db: sqlite3.Connection, locate: Callable[[str, str], Path], rowids: list[int]
) -> dict[int, str]:
    """Each document's text by its number (those whose line cannot be read left out)."""
    found: dict[int, str] = {}
    for start in range(0, len(rowids), _BATCH):
        chunk = rowids[start : start + _BATCH]
        marks = ", ".join("?" * len(chunk))
        rows = db.execute(
            "SELECT d.rowid, k.id, s.slug, d.seq, d.kind, d.pos, d.size FROM docs d "
            f"{WITH_SESSIONS} WHERE d.rowid IN ({marks}) ORDER BY d.session, d.pos",
            chunk,
        ).fetchall()
        for rowid, session, slug, seq, kind, pos, size in rows:
            try:
                data = read_bytes(locate(slug, session), pos, pos + size)
            except (OSError, UnsafePath, StorageFailed):
                continue  # gone, a link now, or unreadable: no text to show
            text = text_of(data, seq, kind)
            if text is not None:
                found[rowid] = text
    return found
