"""Large payloads, stored once by content under ``blobs/sha256/<2 hex>/<62 hex>``.

An event whose ``content`` string is larger than the threshold keeps a reference
instead: ``{"content_ref": "sha256:…", "bytes": N, "preview": "<first 1 KiB>"}``. The
blob is written whole and synced (file and folder) before the event that points to it is
appended, so a durable event never names a missing blob. Reads put the text back.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ..errors import NotFound
from . import fs
from .fs import atomic_write

PREVIEW_CHARS = 1024
_REF = "sha256:"


def is_ref(content: Any) -> bool:
    return isinstance(content, dict) and str(content.get("content_ref", "")).startswith(_REF)


class BlobStore:
    """Large contents kept whole under ``blobs/sha256/``, synced before the event that
    names them, and put back in place for every read."""

    def __init__(self, root: Path, threshold: int) -> None:
        self.root = root
        self.threshold = threshold

    def path(self, digest: str) -> Path:
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise NotFound(f"no blob {digest[:80]!r}")
        return self.root / "sha256" / digest[:2] / digest[2:]

    def too_big(self, content: Any) -> bool:
        """Whether a content value goes to a blob (cheap for the common, small case)."""
        return (
            isinstance(content, str)
            and len(content) > self.threshold // 4
            and len(content.encode("utf-8", "surrogatepass")) > self.threshold
        )

    def needed(self, events: list[dict[str, Any]]) -> bool:
        shortest = self.threshold // 4  # no shorter string encodes to more than the limit
        for event in events:
            content = event.get("content")
            if isinstance(content, str) and len(content) > shortest and self.too_big(content):
                return True
        return False

    def put(self, text: str) -> dict[str, Any]:
        """Store ``text`` (durably; once per distinct text) and return its reference."""
        data = text.encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(data).hexdigest()
        path = self.path(digest)
        if not fs.exists(path):  # a link there is refused, never taken for the blob
            atomic_write(path, data)  # a new folder is made and synced in its parent
        return {"content_ref": _REF + digest, "bytes": len(data), "preview": text[:PREVIEW_CHARS]}

    def extract(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The events with every large content moved to a blob (writer thread)."""
        out = []
        for event in events:
            if self.too_big(event.get("content")):
                event = {**event, "content": self.put(event["content"])}
            out.append(event)
        return out

    def get(self, ref: dict[str, Any]) -> str:
        digest = str(ref["content_ref"])[len(_REF) :]
        try:
            return fs.read_bytes(self.path(digest)).decode("utf-8", "surrogatepass")
        except FileNotFoundError:
            raise NotFound(f"blob {ref['content_ref']} is missing from {self.root}") from None

    def inline(self, lines: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
        """The lines with every reference replaced by its text, and whether any was."""
        changed = False
        out = []
        for line in lines:
            if is_ref(line.get("content")):
                line = {**line, "content": self.get(line["content"])}
                changed = True
            out.append(line)
        return out, changed

    def missing(self, lines: list[dict[str, Any]]) -> list[str]:
        """References among ``lines`` whose blob is not on disk."""
        return [
            line["content"]["content_ref"]
            for line in lines
            if is_ref(line.get("content")) and not self._exists(line["content"])
        ]

    def _exists(self, ref: dict[str, Any]) -> bool:
        try:
            return fs.exists(self.path(str(ref["content_ref"])[len(_REF) :]))
        except NotFound:  # not a digest at all (a line written by hand)
            return False
