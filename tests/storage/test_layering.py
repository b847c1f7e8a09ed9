"""Imports point one way: storage/ and index/ are plain Python with no web framework,
schemas/ are types only, and the client loads no server module."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import aster_persist

PACKAGE = Path(aster_persist.__file__).parent


def test_storage_and_index_never_import_the_web_layer() -> None:
    for folder in ("storage", "index"):
        for path in (PACKAGE / folder).rglob("*.py"):  # their packages' modules too
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                    if node.level and (node.module or "").startswith(("api", "app")):
                        names.append("aster_persist.api")
                for name in names:
                    assert not name.startswith(
                        ("fastapi", "starlette", "uvicorn", "aster_persist.api")
                    ), (path, name)


SERVER = ("fastapi", "starlette", "uvicorn", "sse_starlette", "mcp")
SERVER_MODULES = tuple(
    f"aster_persist.{name}"
    for name in ("api", "app", "storage", "index", "sessions", "learning", "feed", "watcher")
)


def loaded_by(module: str) -> list[str]:
    """The modules a fresh interpreter has loaded after importing ``module``."""
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_the_client_loads_no_server_module() -> None:
    loaded = loaded_by("aster_persist.client")
    assert "httpx" in loaded and "aster_persist.schemas.sessions" in loaded
    server = [m for m in loaded if m.split(".")[0] in SERVER or m.startswith(SERVER_MODULES)]
    assert server == [], server


def test_schemas_are_types_only() -> None:
    loaded = loaded_by("aster_persist.schemas.sessions, aster_persist.schemas.memory")
    server = [m for m in loaded if m.split(".")[0] in SERVER or m.startswith(SERVER_MODULES)]
    assert server == [], server


CLIENT_MAY_IMPORT = (
    *("httpx", "orjson", "pydantic"),
    *("aster_persist.client", "aster_persist.schemas", "aster_persist.errors"),
    "aster_persist.paths",
)


def imported_by(path: Path, package: str) -> list[str]:
    """Every module a file of ``package`` imports, at its top or inside a function."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            base = ".".join(package.split(".")[: len(package.split(".")) + 1 - node.level])
            if node.module:
                names.append(f"{base}.{node.module}")
            else:  # from .. import name
                names += [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append(node.module or "")
    return names


def test_every_module_of_the_client_imports_only_http_and_schemas() -> None:
    """The client is a package: each of its modules, down to an import inside a function
    (which loading the package would not reveal), names only the standard library,
    httpx, orjson, pydantic, schemas/, errors and paths."""
    paths = sorted((PACKAGE / "client").glob("*.py"))
    assert len(paths) > 1, "aster_persist.client is a package"
    for path in paths:
        for name in imported_by(path, "aster_persist.client"):
            stdlib = name.split(".")[0] in sys.stdlib_module_names
            ours = any(name == m or name.startswith(m + ".") for m in CLIENT_MAY_IMPORT)
            assert stdlib or ours, (path.name, name)
