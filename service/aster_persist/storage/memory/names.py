"""Names and fingerprints in memory: block names, the core file and the archive folder,
text folded for duplicate detection, ETags, and the name a file is known by.

A block name is 1 to 64 characters of a-z, 0-9 and '-' (``NAME_RE``); a name made from
a title never holds a secret. ``normalized`` folds text the one way duplicate detection
compares it; ``etag_of`` is the ETag of a file's bytes; ``key_of`` is the name the store
knows a file by: its folder's real path and its own name (a link at the name itself is
never followed).
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from pathlib import Path

from ...secrets import refuse_secrets

CORE = "ASTER.md"
ARCHIVE = ".archive"
SCHEMA = "aster.memory.v1"


def slugify(title: str) -> str:
    """A block name from a title: 'API conventions!' -> 'api-conventions'. A title with
    no letter or digit in ASCII ('数据库', '~') is named by its hash: 'block-1a2b3c4d'."""
    refuse_secrets({"title": title})  # a name is kept: a secret must not become one
    text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode().lower()
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")[:64].strip("-")
    return slug or "block-" + hashlib.sha256(title.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def normalized(text: str) -> str:
    """Text folded for duplicate detection: case, whitespace and punctuation."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"[^\w\s]", " ", text)
    return " ".join(text.split())


def etag_of(data: bytes) -> str:
    return '"' + hashlib.sha256(data).hexdigest() + '"'


def key_of(path: Path) -> str:
    """The name a memory file is known by: its folder's real path, and its own name
    (a link at the name is never followed)."""
    return os.path.join(os.path.realpath(path.parent), path.name)
