"""The SQLite the catalog runs on: sqlean.py, the ``sqlite3`` module over a recent SQLite
of its own (the same on every platform), rather than the one Python was built with.

The catalog's full-text table keeps no copy of the text it indexes (an FTS5 table with
no content that can still delete a row: ``contentless_delete``, SQLite 3.43 and later),
which the SQLite of many systems is too old for. Its extensions stay off. Typed as the
standard module, whose interface it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3
else:
    import sqlean as sqlite3

__all__ = ["sqlite3"]
