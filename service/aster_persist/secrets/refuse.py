"""Refusing secrets, and what is kept and shown instead of them.

``refuse_secrets`` and ``refuse_document`` raise SecretDetected (422) naming the kind
and the place, never the secret; a file that already held a secret left by hand says
so, as a person must remove it first. ``withheld`` is what the journal keeps instead of
content that holds a secret (path, size, hash, findings), and ``refuse_journaled``
refuses to write such a state back. ``withheld_core`` is ``ASTER.md`` as the prompt
context shows it when a hand edit left a secret there.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..errors import SecretDetected
from .scan import (
    LEFT_BY_HAND,
    MAX_REPORTED,
    Finding,
    found_in,
    scan_document,
    scan_text,
    strings_of,
)


def refuse_secrets(fields: dict[str, Any]) -> None:
    """Raise SecretDetected (422) when any field holds a secret; says where, never what."""
    findings: list[Finding] = []
    for name, value in fields.items():
        for text in strings_of(value):
            findings.extend(scan_text(text, name))
    _refuse(findings)


def refuse_document(data: bytes, what: str, *, before: bytes | None = None) -> None:
    """Raise SecretDetected when the file ``what`` would hold a secret with ``data``.
    When the content it replaces (``before``) held one too, the reply says so: a
    secret left there by hand must be removed by a person first."""
    text = data.decode("utf-8", "replace")
    findings = scan_document(text)
    if findings and before is not None and found_in(before):
        found = ", ".join(sorted({f.kind for f in findings}))
        raise SecretDetected(
            f"{what} already holds a secret ({found}, line {findings[0].line}), "
            f"{LEFT_BY_HAND}; it is withheld from prompts until a person removes it, and "
            "nothing is written to it until then",
            errors=[f.public() for f in findings[:MAX_REPORTED]],
        )
    _refuse(findings, what)


def _refuse(findings: list[Finding], what: str = "") -> None:
    if not findings:
        return
    first = findings[0]
    more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
    where = f"{what} {first.field}" if what else first.field
    raise SecretDetected(
        f"{where} line {first.line} looks like a {first.kind}{more}; secrets are never "
        "written to memory, which goes into every prompt",
        errors=[f.public() for f in findings[:MAX_REPORTED]],
    )


def withheld(path: str, data: bytes) -> dict[str, Any] | None:
    """What the journal keeps of a file whose content holds a secret: its path, size,
    hash and the findings, never the content. None when the content is clean."""
    found = found_in(data)
    if not found:
        return None
    return {
        "path": path,
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "withheld": "the content held a secret, so the journal does not keep it",
        "secrets": found,
    }


def refuse_journaled(state: dict[str, Any]) -> None:
    """Refuse to write back a journaled state that was withheld or holds a secret."""
    if "withheld" in state:
        kinds = ", ".join(sorted({str(f.get("kind")) for f in state.get("secrets", [])}))
        raise SecretDetected(
            f"the content this would put back held a secret ({kinds}); the journal never "
            "kept it, and it is not written to memory again",
            errors=list(state.get("secrets", [])),
        )
    if isinstance(state.get("content"), str):
        refuse_document(state["content"].encode("utf-8"), str(state.get("path", "the file")))


def kinds(findings: list[dict[str, Any]]) -> str:
    """The kinds of some public findings, for a sentence."""
    return ", ".join(sorted({str(f["kind"]) for f in findings}))


def lines_of(findings: list[dict[str, Any]]) -> str:
    """Where some public findings are, for a sentence: "line 3", "lines 3, 7"."""
    numbers = list(dict.fromkeys(str(f["line"]) for f in findings))
    return ("line " if len(numbers) == 1 else "lines ") + ", ".join(numbers)


# -- what is kept and shown instead ------------------------------------------------


def flagged(data: bytes | None) -> dict[str, Any]:
    """``{"secrets": […]}`` for a journal entry's detail when ``data`` holds a secret."""
    found = found_in(data) if data is not None else []
    return {"secrets": found} if found else {}


def withheld_core(text: str, scope: str) -> str:
    """``ASTER.md`` as the prompt context shows it: in full, or, when a hand edit left a
    secret in it, a notice in its place (the kinds and lines, never the secret)."""
    found = found_in(text)
    if not found:
        return text
    return (
        f"(The core memory of {scope} is withheld: it holds what looks like a secret "
        f"({kinds(found)}) on {lines_of(found)}, {LEFT_BY_HAND}. It comes back once a "
        "person removes it.)"
    )
