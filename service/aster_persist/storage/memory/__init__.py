"""Memory: ``ASTER.md`` core memory and named markdown blocks, per scope.

A scope is ``global`` (``memory/``) or ``project:<slug>`` (``memory/projects/<slug>/``).
Every write is atomic (temp file beside it, fsync, rename, fsync the folder) and
journaled with the file's previous state, so any change can be reverted byte for byte.
A block's metadata is kept in memory (``BlockMeta``), so listing and the prompt context
never read block files per request. Mutations run on the writer thread.

``MemoryStore`` is assembled here from its parts, one module each:

  names.py    block names, text folded for duplicate detection, ETags
  meta.py     BlockMeta and the one mapping of frontmatter to its fields
  base.py     the shared state, scopes and paths, journal states, what the parts call
  index.py    loading, indexing, reading, listing, recalls, search documents
  writes.py   the swap-in write, settle, discard, move, forget, archive, hand edits
  content.py  core memory and notes, blocks, duplicate merges, frontmatter patches
  hygiene.py  relations, procedures, prune
  context.py  the visible blocks and the prompt context
  revert.py   putting a journaled change back
"""

from __future__ import annotations

from .content import ContentPart, source_of
from .context import MAX_INDEX_ENTRIES, ContextPart, estimate_tokens
from .hygiene import HygienePart
from .index import IndexPart
from .meta import BlockMeta
from .names import ARCHIVE, CORE, NAME_RE, SCHEMA, check_name, etag_of, normalized, slugify
from .revert import RevertPart
from .writes import WritesPart

__all__ = [
    "ARCHIVE",
    "CORE",
    "MAX_INDEX_ENTRIES",
    "NAME_RE",
    "SCHEMA",
    "BlockMeta",
    "MemoryStore",
    "check_name",
    "estimate_tokens",
    "etag_of",
    "normalized",
    "slugify",
    "source_of",
]


class MemoryStore(IndexPart, WritesPart, ContentPart, HygienePart, ContextPart, RevertPart):
    """Core memory and blocks of every scope: the parts above over one ``StoreBase``."""
