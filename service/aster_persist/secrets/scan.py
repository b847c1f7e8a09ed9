"""Scanning: every secret in a line, a text or a memory file, as findings.

The layers run on every line in order (rules, assignments, prose, then detect-secrets'
plugins); a span that overlaps one found before it is the same secret and left out. A
finding names the kind and the place (field, line, column) and never holds the secret,
so reporting one cannot leak it. A memory file's lines are named by the frontmatter
key they belong to (``content`` for the body); when the frontmatter holds an escape,
every value is scanned as YAML reads it too. Short lines and files up to 64 KB are
cached by content, so a write, its index entry and its journal state scan once.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..errors import Invalid
from ..schemas import frontmatter
from .assignments import assignment_spans, prose_spans
from .plugins import plugin_spans
from .rules import Span, rule_spans


@dataclass(frozen=True)
class Finding:
    kind: str
    field: str
    line: int
    column: int

    def public(self) -> dict[str, Any]:
        return {
            "loc": self.field,
            "kind": self.kind,
            "line": self.line,
            "column": self.column,
            "msg": f"looks like a {self.kind}",
        }


def scan_line(line: str) -> tuple[Span, ...]:
    """The spans of every layer, in order; a span that overlaps one found before it (by
    this or an earlier layer) is the same secret and left out."""
    starts: list[int] = []
    found: list[Span] = []
    layers: list[Iterator[Span]] = [
        rule_spans(line),
        assignment_spans(line),
        prose_spans(line),
        ((kind, start, end) for _, kind, start, end in plugin_spans(line)),
    ]
    for layer in layers:
        for kind, start, end in layer:
            at = bisect.bisect_left(starts, start)
            if (at > 0 and found[at - 1][2] > start) or (at < len(found) and found[at][1] < end):
                continue
            starts.insert(at, start)
            found.insert(at, (kind, start, end))
    return tuple(found)


scan_short_line = lru_cache(maxsize=8192)(scan_line)


def line_secrets(line: str) -> tuple[Span, ...]:
    """Every secret in one line, as (kind, start, end), in order; short lines cached (the
    frontmatter lines every block shares are scanned once)."""
    return scan_short_line(line) if len(line) <= 500 else scan_line(line)


def scan_text(text: str, field: str = "content") -> list[Finding]:
    """Every secret-looking thing in ``text``, by kind and place."""
    return [
        Finding(kind, field, number, start + 1)
        for number, line in enumerate(text.splitlines(), 1)
        for kind, start, _ in line_secrets(line)
    ]


def _scan_document(text: str) -> tuple[Finding, ...]:
    """``scan_document``, uncached."""
    lines = text.splitlines()
    fields = _line_fields(lines)
    found = [
        Finding(kind, fields[number - 1], number, start + 1)
        for number, line in enumerate(lines, 1)
        for kind, start, _ in line_secrets(line)
    ]
    meta: dict[str, Any] = {}
    if "\\" in text.partition("\n---")[0]:  # an escape: a value may read unlike its line
        try:
            meta = frontmatter.parse(text).meta
        except Invalid:  # not valid YAML: its lines were scanned as they are
            meta = {}
    for key, value in meta.items():
        first = fields.index(key) + 1 if key in fields else 1
        for finding in (f for s in strings_of(value) for f in scan_text(s, key)):
            if not any(f.field == key and f.kind == finding.kind for f in found):
                found.append(Finding(finding.kind, key, first, 1))
    return tuple(found)


scan_small_document = lru_cache(maxsize=512)(_scan_document)


def scan_document(text: str) -> list[Finding]:
    """Every secret in a memory file, each named by its frontmatter key (``content`` in
    the body) with its line and column in the file. Files up to 64 KB are cached by
    content: a write, its index entry and its journal state scan the bytes once."""
    if len(text) <= 65536:
        return list(scan_small_document(text))
    return list(_scan_document(text))


def _line_fields(lines: list[str]) -> list[str]:
    """For each line of a file, the frontmatter key it belongs to, or ``content``."""
    if not lines or lines[0].rstrip("\r") != "---":
        return ["content"] * len(lines)
    out, current = ["frontmatter"], "frontmatter"
    for index, line in enumerate(lines[1:], 1):
        if line.rstrip("\r") == "---":
            return out + ["frontmatter"] + ["content"] * (len(lines) - index - 1)
        key = re.match(r"([A-Za-z_][\w-]*)\s*:", line)
        if key is not None:
            current = key.group(1)
        out.append(current)
    return out


LEFT_BY_HAND = "left there by hand"
MAX_REPORTED = 20  # findings a reply, a listing or a journal entry names at most


def found_in(data: bytes | str) -> list[dict[str, Any]]:
    """The public findings of a memory file's bytes (empty when it holds no secret), the
    first ``MAX_REPORTED`` of them."""
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    return [f.public() for f in scan_document(text)[:MAX_REPORTED]]


def strings_of(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_of(v)] + [str(k) for k in value]
    if isinstance(value, list | tuple):
        return [s for v in value for s in strings_of(v)]
    return []
