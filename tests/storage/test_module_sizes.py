"""storage/ and index/ are made of small modules, packages included (storage/memory/,
storage/secrets/, storage/transcripts/, index/catalog/): none is over 500 lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_layering import PACKAGE

FOLDERS = ("storage", "index")


def modules(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_module_under_storage_or_index_is_over_500_lines(folder: str) -> None:
    paths = modules(folder)
    assert len(paths) > 1
    too_long = [
        (str(p.relative_to(PACKAGE)), n)
        for p in paths
        if (n := len(p.read_text().splitlines())) > 500
    ]
    assert too_long == []


@pytest.mark.parametrize(
    "package", ["storage/memory", "storage/secrets", "storage/transcripts", "index/catalog"]
)
def test_the_split_packages_are_packages_of_several_modules(package: str) -> None:
    assert (PACKAGE / package / "__init__.py").is_file()
    assert not (PACKAGE / f"{package}.py").exists()
    assert len(list((PACKAGE / package).glob("*.py"))) > 2
