"""The session catalog: what listing needs, in a disposable SQLite database.

Derived data only. It is kept current on every append (rows are upserted in batches,
by absolute value, so replaying one is harmless), caught up at start from each file's
last folded offset, and rebuilt from the files when missing, corrupt or of an older
schema. One thread owns the connection; callers go through ``CatalogWorker``.

The catalog is a package of small parts: ``schema`` (tables and rows), ``files`` (a
transcript folded into a summary), ``database`` (the SQLite
side), ``worker`` (its thread) and ``rebuild`` (from scratch, offline).
"""

from __future__ import annotations

from .database import Catalog, MemoryDoc
from .files import FileEntry, summarize_file
from .listing import NEWEST, Listing
from .rebuild import rebuild
from .schema import SCHEMA_VERSION
from .worker import FLUSH_MAX_DELAY, FLUSH_QUIET, CatalogWorker

__all__ = [
    "FLUSH_MAX_DELAY",
    "FLUSH_QUIET",
    "NEWEST",
    "SCHEMA_VERSION",
    "Catalog",
    "CatalogWorker",
    "FileEntry",
    "Listing",
    "MemoryDoc",
    "rebuild",
    "summarize_file",
]
