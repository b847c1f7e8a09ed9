"""The package is made of small modules, one concept each: none is over 500 lines, and
the concepts that grew are packages of several modules."""

from __future__ import annotations

import pytest

from .test_imports import PACKAGE


def test_no_module_is_over_500_lines() -> None:
    paths = sorted(PACKAGE.rglob("*.py"))
    assert len(paths) > 100
    too_long = [
        (str(p.relative_to(PACKAGE)), n)
        for p in paths
        if (n := len(p.read_text().splitlines())) > 500
    ]
    assert too_long == []


@pytest.mark.parametrize(
    "package",
    [
        *("storage/memory", "secrets", "storage/transcripts", "index/catalog"),
        *("services/sessions", "services", "live", "mcp", "learning", "importers"),
        *("client", "cli", "schemas"),
    ],
)
def test_the_split_packages_are_packages_of_several_modules(package: str) -> None:
    assert (PACKAGE / package / "__init__.py").is_file()
    assert not (PACKAGE / f"{package}.py").exists()
    assert len(list((PACKAGE / package).glob("*.py"))) > 2


@pytest.mark.parametrize(
    "gone", ["sessions.py", "feed.py", "watcher.py", "tools.py", "api/mcp_server.py"]
)
def test_nothing_is_left_at_the_top_that_has_a_package(gone: str) -> None:
    assert not (PACKAGE / gone).exists()
