"""Markdown with YAML frontmatter, parsed with a YAML library and edited surgically.

Hand-written files are first-class: changing one key rewrites only that key's lines,
so every other byte of the file (comments, key order, odd but valid YAML, unknown keys)
survives a metadata edit exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import yaml

_FENCE = "---"
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when the wheel has it
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TOP_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:")


@dataclass
class Document:
    """A markdown file split into its frontmatter (text and values) and its body."""

    meta_text: str | None  # the YAML between the fences, None when there is none
    meta: dict[str, Any]
    body: str

    def render(self) -> str:
        if self.meta_text is None:
            return self.body
        return f"{_FENCE}\n{self.meta_text}{_FENCE}\n{self.body}"


def _split(text: str) -> tuple[str | None, str]:
    """The frontmatter text (None when there is none) and the body, without parsing."""
    if not (text.startswith(_FENCE + "\n") or text.startswith(_FENCE + "\r\n")):
        return None, text
    start = text.index("\n") + 1
    end = _closing_fence(text, start)
    if end is None:
        raise _invalid("the frontmatter has no closing --- line")
    body_start = text.index("\n", end) + 1 if "\n" in text[end:] else len(text)
    return text[start:end], text[body_start:]


def plain(value: Any) -> Any:
    """``value`` as JSON can carry it: what YAML reads that JSON has no form for (an
    integer past 64 bits, binary, a set, a key that is no string) in a form it has."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((plain(v) for v in value), key=str)
    if isinstance(value, bool) or value is None or isinstance(value, float | str):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**64 else str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def body_of(text: str) -> str:
    """The markdown after the frontmatter (all of ``text`` when it has none or a broken one)."""
    from ..errors import Invalid

    try:
        return _split(text)[1]
    except Invalid:
        return text


def parse(text: str) -> Document:
    """Split ``text``; raise Invalid when its frontmatter is not a YAML mapping."""
    meta_text, body = _split(text)
    if meta_text is None:
        return Document(None, {}, body)
    try:
        meta = yaml.load(meta_text, Loader=_Loader) if meta_text.strip() else {}
    except yaml.YAMLError as exc:
        raise _invalid(f"the frontmatter is not valid YAML: {exc}") from None
    if not isinstance(meta, dict):
        raise _invalid("the frontmatter must be a YAML mapping of keys to values")
    return Document(meta_text, {str(k): v for k, v in meta.items()}, body)


def _closing_fence(text: str, start: int) -> int | None:
    pos = start
    while pos <= len(text):
        newline = text.find("\n", pos)
        line = text[pos:] if newline < 0 else text[pos:newline]
        if line.rstrip("\r") == _FENCE:
            return pos
        if newline < 0:
            return None
        pos = newline + 1
    return None


def dump_value(key: str, value: Any) -> str:
    """One top-level ``key: value`` line (flow style for lists and mappings)."""
    text: str = yaml.dump(
        {key: value},
        Dumper=_Dumper,
        default_flow_style=True,
        allow_unicode=True,
        sort_keys=False,
        width=10_000,
    ).strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    return text + "\n"


def set_keys(doc: Document, changes: dict[str, Any]) -> Document:
    """Replace (or add) top-level keys, leaving every other line as it was."""
    lines = (doc.meta_text or "").splitlines(keepends=True)
    spans: dict[str, tuple[int, int]] = {}
    current: str | None = None
    for i, line in enumerate(lines):
        match = _TOP_KEY.match(line)
        if match is not None:
            current = match.group(1)
            spans[current] = (i, i + 1)
        elif current is not None and not line.startswith("#"):
            # Indented, blank, or a flow collection or scalar that goes on at column 0.
            first, _ = spans[current]
            spans[current] = (first, i + 1)
        else:
            current = None
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    replacements = {key: dump_value(key, value) for key, value in changes.items()}
    out: list[str] = []
    skip_until = -1
    starts = {first: key for key, (first, _) in spans.items()}
    for i, line in enumerate(lines):
        if i < skip_until:
            continue
        key = starts.get(i)
        if key is not None and key in replacements:
            out.append(replacements.pop(key))
            _, end = spans[key]
            trailing_blank = [ln for ln in lines[i + 1 : end] if not ln.strip()]
            out.extend(trailing_blank)  # blank lines belonged to the layout, not the value
            skip_until = end
            continue
        out.append(line)
    out.extend(replacements.values())
    meta_text = "".join(out)
    try:
        meta = yaml.load(meta_text, Loader=_Loader) if meta_text.strip() else {}
    except yaml.YAMLError as exc:
        raise _invalid(f"the frontmatter could not be changed in place: {exc}") from None
    return Document(meta_text, dict(meta or {}), doc.body)


def new_document(meta: dict[str, Any], body: str) -> Document:
    """A fresh file: keys in the given order, one per line."""
    meta_text = ""
    if meta:
        meta_text = yaml.dump(
            meta,
            Dumper=_Dumper,
            default_flow_style=None,  # block mapping, flow style for lists of scalars
            allow_unicode=True,
            sort_keys=False,
            width=10_000,
        )
    if body and not body.endswith("\n"):
        body += "\n"
    return Document(meta_text, dict(meta), body)


def _invalid(message: str) -> Exception:
    """The server's ``Invalid`` (422), imported when raised: loading the format loads no
    server module."""
    from ..errors import Invalid

    return Invalid(message)
