"""What the search index holds of a memory file: its scope and name, ETag, kind, the
fields its frontmatter gives (the block index's own mapping) and its body, made from
the file's bytes. A file holding a secret left by hand is kept out of search until it
is removed.
"""

from __future__ import annotations

from typing import Any

from ...errors import Invalid
from ...schemas import frontmatter
from ...secrets import found_in
from .meta import fields_of
from .names import CORE, etag_of


def search_document(scope: str, name: str, data: bytes) -> dict[str, Any] | None:
    """The search document of a block or of ``ASTER.md`` (``name`` CORE) from its bytes;
    None for an empty core file and for a file that holds a secret."""
    text = data.decode("utf-8", "replace")
    if found_in(data):
        return None  # a secret left by hand stays out of search until it is removed
    doc: dict[str, Any] = {
        "scope": scope,
        "name": name,
        "etag": etag_of(data),
        "relations": {},
    }
    if name == CORE:
        if not text.strip():
            return None
        return doc | {
            "kind": "core",
            "updated_at": "",
            "importance": 1.0,
            "description": "core memory",
            "tags": [],
            "body": text,
        }
    try:
        parsed = frontmatter.parse(text)
        meta, body = parsed.meta, parsed.body
    except Invalid:
        meta, body = {}, text
    fields = fields_of(meta, body)
    related = (
        ("supersedes", fields["supersedes"]),
        ("conflicts_with", fields["conflicts_with"]),
    )
    return doc | {
        "kind": "block",
        "updated_at": fields["updated_at"],
        "importance": fields["importance"],
        "description": fields["description"],
        "tags": fields["tags"],
        "body": body,
        "relations": {key: names for key, names in related if meta.get(key)},
    }
