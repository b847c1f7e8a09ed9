"""ARCHITECTURE.md and STYLE.md name the code as it is: every module, folder and class
they name is there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .test_imports import PACKAGE
from .test_objects import classes

ROOT = PACKAGE.parents[1]
DOCS = ["ARCHITECTURE.md", "STYLE.md"]
FILES = [
    p.relative_to(ROOT).as_posix()
    for top in ("service", "tests", "bench", "docs")
    for p in (ROOT / top).rglob("*")
    if "fixtures" not in p.parts and "__pycache__" not in p.parts
]


def _named_modules(text: str) -> set[str]:
    return set(re.findall(r"\b([a-z_][a-z0-9_/]*\.(?:py|js|html|css))\b", text))


def _named_folders(text: str) -> set[str]:
    return {m for m in re.findall(r"(?<![\w./-])([a-z_]+(?:/[a-z_]+)*)/(?![\w.])", text)}


# names of other projects' that the documents use
OTHERS = {"BaseStore", "ChatGPT", "OpenAI", "OpenAPI", "TypeAdapter", "TypedDicts"}


def _named_classes(text: str) -> set[str]:
    """Names that read as a class (``MemoryStore``, ``BlockIndex``), other projects' aside."""
    return set(re.findall(r"\b([A-Z][a-z]+(?:[A-Z][a-z0-9]*)+)\b", text)) - OTHERS


@pytest.mark.parametrize("doc", DOCS)
def test_every_module_a_document_names_is_there(doc: str) -> None:
    text = (ROOT / doc).read_text()
    named = _named_modules(text)
    assert len(named) > 10
    missing = sorted(n for n in named if not any(f == n or f.endswith("/" + n) for f in FILES))
    assert missing == []


@pytest.mark.parametrize("doc", DOCS)
def test_every_folder_a_document_names_is_there(doc: str) -> None:
    text = (ROOT / doc).read_text()
    named = _named_folders(text)
    assert {"storage", "services"} <= {n.split("/")[0] for n in named}
    folders = {str(Path(f).parent) for f in FILES}
    missing = sorted(n for n in named if not any(d == n or d.endswith("/" + n) for d in folders))
    assert missing == []


@pytest.mark.parametrize("doc", DOCS)
def test_every_class_a_document_names_is_there(doc: str) -> None:
    text = (ROOT / doc).read_text()
    known = {c.__name__ for c in classes()}
    named = _named_classes(text)
    assert len(named) > 3
    assert sorted(named - known) == []


def test_the_check_sees_a_module_that_is_gone() -> None:
    named = _named_modules("storage/memory/base.py holds the shared state")
    assert not any(f.endswith("storage/memory/base.py") for f in FILES) and named
