"""The files an import was told it came from (the command line names each one): their
size and time when they were imported, and the sessions they became. A tree imported
again, after an interruption say, skips every file that has not changed since and whose
sessions are still here, instead of sending it again.

Kept in the catalog, so disposable: without it, every file is sent again, and an import
of what is here already adds nothing.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..sqlite import sqlite3


def remember(
    db: sqlite3.Connection, path: str, size: int, modified_at: str, sessions: list[str]
) -> None:
    """``path``, of ``size`` bytes and last modified at ``modified_at``, became
    ``sessions`` (each created, brought up to date or already here)."""
    with db:
        db.execute(
            "INSERT OR REPLACE INTO imported_files VALUES (?, ?, ?, ?)",
            (path, size, modified_at, orjson.dumps(sessions).decode()),
        )


def known(db: sqlite3.Connection, files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The files of ``files`` (each a path, a size and a time) imported before as they
    are now, and whose sessions are all still listed: each with its sessions."""
    out = []
    for file in files:
        row = db.execute(
            "SELECT size, modified_at, sessions FROM imported_files WHERE path = ?",
            (file["path"],),
        ).fetchone()
        if row is None or (row[0], row[1]) != (file["size"], file["modified_at"]):
            continue
        sessions = orjson.loads(row[2])
        marks = ", ".join("?" * len(sessions))
        (here,) = db.execute(
            f"SELECT count(*) FROM sessions WHERE id IN ({marks})", sessions
        ).fetchone()
        if sessions and here == len(sessions):
            out.append({"path": file["path"], "sessions": sessions})
    return out
