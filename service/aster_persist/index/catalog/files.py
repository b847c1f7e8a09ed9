"""Transcript files as the catalog sees them: an entry found on disk, and the summary
and search documents folded from its bytes (from where the index left off, if it holds).

Reads only; nothing here writes a file or the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...storage.jsonl import parse, read_bytes
from ...storage.summary import SessionInfo
from ..text import Doc, docs_of


@dataclass(frozen=True)
class FileEntry:
    """A live transcript file found on disk."""

    id: str
    slug: str
    path: Path
    size: int
    mtime_ns: int


def summarize_file(
    entry: FileEntry, previous: SessionInfo | None = None
) -> tuple[SessionInfo, list[Doc]]:
    """Fold a transcript into a summary, from ``previous``'s offset when it still holds;
    return it with the search documents of the lines read."""
    info = previous
    if info is None or entry.size < info.offset:
        info = SessionInfo(id=entry.id, slug=entry.slug)
    data = read_bytes(entry.path, info.offset, entry.size)
    parsed = parse(data, base=info.offset, first_line=info.lines + 1)
    info.absorb(parsed.lines, parsed.bad)
    info.offset = parsed.good_end
    info.lines += parsed.line_count
    info.file_size = entry.size
    info.file_mtime_ns = entry.mtime_ns
    if info.lines > 0 and not info.created_at:
        info.state = "damaged"  # no readable header
    docs = [doc for line in parsed.lines for doc in docs_of(line, info.created_at)]
    return info, docs


def _continues(parsed: Any, start: int, first_seq: int) -> bool:
    """Whether bytes read from ``start`` begin with the whole line of seq ``first_seq``."""
    if parsed.bad and parsed.bad[0] == 1:
        return False  # the range starts inside a line, or with a broken one
    if parsed.torn is not None and parsed.good_end == start:
        return False  # not even one whole line
    return not parsed.lines or parsed.lines[0].get("seq") == first_seq
