"""The import rules of the package, read from its source.

- storage/, index/, live/ and services/ import no web framework (nor the routers, MCP
  or the app): only routers know HTTP;
- schemas/ are types only; the client loads no server module, and each of its modules
  names only the standard library, httpx, orjson, pydantic, schemas/ and paths;
- no import cycle anywhere, imports for type checking and inside functions included.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import aster_persist

PACKAGE = Path(aster_persist.__file__).parent
FRAMEWORKS = ("fastapi", "starlette", "uvicorn", "sse_starlette", "mcp", "httptools")
SERVER = FRAMEWORKS
SERVER_MODULES = tuple(
    f"aster_persist.{name}"
    for name in (
        *("api", "app", "storage", "index", "services", "learning", "live"),
        *("tools", "doctor", "settings", "cli"),
        "errors",  # the server's exception tree: the client has its own, by other names
    )
)


def is_server(name: str) -> bool:
    """Whether a loaded module is a web framework's or the server's own."""
    return name.split(".")[0] in SERVER or any(
        name == m or name.startswith(m + ".") for m in SERVER_MODULES
    )


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported_by(path: Path, package: str, *, type_checking: bool = True) -> list[str]:
    """Every module a file imports (``package`` is the package it is in), at its top,
    under ``if TYPE_CHECKING`` (unless ``type_checking`` is False) or inside a function:
    ``from a import b`` names ``a.b`` when that is a module, else ``a``."""
    names: list[str] = []
    tree = ast.parse(path.read_text())
    if not type_checking:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
                node.body = [ast.Pass()]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) + 1 - node.level])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            subs = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in MODULES]
            names += subs if len(subs) == len(node.names) else [module, *subs]
    return names


def package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


GRAPH = {
    name: sorted({m for m in imported_by(path, package_of(name, path)) if m in MODULES} - {name})
    for name, path in MODULES.items()
}


def test_the_lower_layers_and_the_services_never_import_the_web_layer() -> None:
    for folder in ("storage", "index", "live", "services"):
        paths = sorted((PACKAGE / folder).rglob("*.py"))
        assert paths, folder
        for path in paths:
            name = module_name(path)
            for imported in imported_by(path, package_of(name, path)):
                assert not imported.startswith(FRAMEWORKS), (name, imported)
                above = ("aster_persist.api", "aster_persist.app", "aster_persist.mcp")
                assert not imported.startswith(above), (name, imported)


def test_storage_and_index_never_import_the_services_above_them() -> None:
    above = ("aster_persist.services", "aster_persist.live", "aster_persist.learning")
    for folder in ("storage", "index"):
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            name = module_name(path)
            for imported in imported_by(path, package_of(name, path)):
                assert not imported.startswith(above), (name, imported)


def cycles(graph: dict[str, list[str]] = GRAPH) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_type_checking_ones_included() -> None:
    assert len(GRAPH) > 100 and GRAPH["aster_persist.app"], "the graph is read"
    assert cycles() == []


def test_the_cycle_check_finds_a_cycle() -> None:
    parts, service = (
        "aster_persist.services.sessions.parts",
        "aster_persist.services.sessions.service",
    )
    graph = {**GRAPH, parts: [*GRAPH[parts], service]}
    assert any({parts, service} <= set(group) for group in cycles(graph))


def test_the_cycle_check_sees_an_import_made_only_for_type_checking() -> None:
    """The check itself: a name imported under TYPE_CHECKING is an edge."""
    source = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .service import Sessions\n"
    )
    path = PACKAGE.parent / "probe.py"
    try:
        path.write_text(source)
        assert "aster_persist.services.sessions.service" in imported_by(
            path, "aster_persist.services.sessions"
        )
    finally:
        path.unlink()


def loaded_by(module: str) -> list[str]:
    """The modules a fresh interpreter has loaded after importing ``module``."""
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_the_client_loads_no_server_module() -> None:
    loaded = loaded_by("aster_persist.client")
    assert "httpx" in loaded and "aster_persist.schemas.sessions" in loaded
    server = [m for m in loaded if is_server(m)]
    assert server == [], server


def test_schemas_are_types_only() -> None:
    loaded = loaded_by(", ".join(m for m in MODULES if m.startswith("aster_persist.schemas.")))
    server = [m for m in loaded if is_server(m)]
    assert server == [], server


CLIENT_MAY_IMPORT = (
    *("httpx", "orjson", "pydantic"),
    *("aster_persist.client", "aster_persist.schemas"),
    "aster_persist.paths",
)


def test_every_module_of_the_client_imports_only_http_and_schemas() -> None:
    """The client is a package: each of its modules, down to an import inside a function
    (which loading the package would not reveal), names only the standard library,
    httpx, orjson, pydantic, schemas/ and paths."""
    paths = sorted((PACKAGE / "client").glob("*.py"))
    assert len(paths) > 1, "aster_persist.client is a package"
    for path in paths:
        for name in imported_by(path, "aster_persist.client"):
            stdlib = name.split(".")[0] in sys.stdlib_module_names
            ours = any(name == m or name.startswith(m + ".") for m in CLIENT_MAY_IMPORT)
            assert stdlib or ours, (path.name, name)


def test_every_integration_imports_only_the_client_schemas_and_its_framework() -> None:
    """An adapter runs in the agent's process: it reaches the store through the client,
    never the daemon's own parts."""
    allowed = ("aster_persist.client", "aster_persist.schemas")
    for path in sorted((PACKAGE / "integrations").glob("*.py")):
        for name in imported_by(path, "aster_persist.integrations"):
            if name.startswith("aster_persist"):
                assert any(name == m or name.startswith(m + ".") for m in allowed), (
                    path.name,
                    name,
                )
