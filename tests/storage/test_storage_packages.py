"""storage/memory/ and storage/secrets/ are packages now: the layering test reads only the
modules directly in storage/, so this one holds their modules to the same rule (plain
Python, no web framework), and checks each stays a small module."""

from __future__ import annotations

import ast

import pytest

from .test_layering import PACKAGE

PACKAGES = ("memory", "secrets")
WEB = ("fastapi", "starlette", "uvicorn", "aster_persist.api")


@pytest.mark.parametrize("package", PACKAGES)
def test_the_storage_packages_never_import_the_web_layer(package: str) -> None:
    paths = sorted((PACKAGE / "storage" / package).glob("*.py"))
    assert paths
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
                if node.level and (node.module or "").startswith(("api", "app")):
                    names.append("aster_persist.api")
            for name in names:
                assert not name.startswith(WEB), (path, name)


@pytest.mark.parametrize("package", PACKAGES)
def test_the_storage_packages_are_small_modules(package: str) -> None:
    for path in (PACKAGE / "storage" / package).glob("*.py"):
        assert len(path.read_text().splitlines()) <= 500, path
