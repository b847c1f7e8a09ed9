"""Memory: ``ASTER.md`` core memory and named markdown blocks, per scope.

A scope is ``global`` (``memory/``) or ``project:<slug>`` (``memory/projects/<slug>/``).
Every write is atomic (temp file beside it, fsync, rename, fsync the folder) and
journaled with the file's previous state, so any change can be reverted byte for byte.
A block's metadata is kept in memory (``BlockMeta``), so listing and the prompt context
never read block files per request. Mutations run on the writer thread.

``MemoryStore`` (store.py) holds three objects (and makes a fourth at start), and the rules they share are modules:

  blocks.py     BlockIndex: every block's metadata, duplicates, recalls (no I/O)
  files.py      MemoryFiles: paths, the swap-in write, moves, hand edits reconciled
  revert.py     Reverter: putting a journaled change back
  plans.py      Plans: many changes applied whole or not at all
  catchup.py    Catchup: at start, what changed unjournaled (a kill between a change
                and its journal line, an edit while stopped) journaled
  attempts.py   a write tried again after a hand edit; 507, 500, 412, 409
  names.py      block names, text folded for duplicate detection, ETags
  meta.py       BlockMeta, the one mapping of frontmatter to its fields, and the
                fields a write makes (a new block's, a merge's, a patch)
  context.py    the prompt context, from core memory and the visible blocks
  documents.py  what the search index holds of a memory file
  hygiene.py    relations a block may name, what pruning archives or keeps
"""

from __future__ import annotations

from ...schemas.names import NAME_RE, check_name
from .context import estimate_tokens
from .hygiene import protection
from .meta import BlockMeta, source_of
from .names import ARCHIVE, CORE, SCHEMA, etag_of, normalized, slugify
from .store import MemoryStore

__all__ = [
    "ARCHIVE",
    "CORE",
    "NAME_RE",
    "SCHEMA",
    "BlockMeta",
    "MemoryStore",
    "check_name",
    "estimate_tokens",
    "etag_of",
    "normalized",
    "protection",
    "slugify",
    "source_of",
]
