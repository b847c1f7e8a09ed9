"""Objects, not only files: each class is one object in one module, the objects it is
made of are held (never mixed in from sibling modules), no module reaches for another's
private names, and the type checker is told nothing twice. Read from the source."""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
from pathlib import Path

import pytest
from pydantic import BaseModel

from .test_imports import MODULES, PACKAGE, imported_by, package_of

CAP = 500  # lines, for a module and for a class with every part of it counted


@functools.cache
def classes() -> list[type]:
    """Every class the package defines (its adapters for other frameworks aside: they
    only extend those frameworks' classes). Imported when first asked, not at
    collection, which every test worker makes."""
    found = []
    for name in MODULES:
        if ".integrations" in name:
            continue
        module = importlib.import_module(name)
        found += [c for c in vars(module).values() if inspect.isclass(c) and c.__module__ == name]
    return found


def _declarations(cls: type) -> bool:
    """A table of request declarations (the client's endpoints): no state, no
    constructor, nothing but ``endpoint`` descriptors and the tables it joins."""
    from aster_persist.client.calls import endpoint

    own = {k: v for k, v in vars(cls).items() if not k.startswith("__")}
    return "__init__" not in vars(cls) and all(isinstance(v, endpoint) for v in own.values())


def _shape(cls: type) -> bool:
    """An exception, a wire model or a typed dict: shapes, which are meant to be extended."""
    return issubclass(cls, BaseException | BaseModel) or hasattr(cls, "__total__")


def _parts(cls: type) -> list[type]:
    """The package's own classes ``cls`` is made of, itself first."""
    return [cls] + [
        c
        for c in cls.__mro__[1:]
        if c.__module__.startswith("aster_persist") and not _shape(c) and not _declarations(c)
    ]


def _class_lines(path: Path) -> dict[str, int]:
    tree = ast.parse(path.read_text())
    return {
        node.name: (node.end_lineno or node.lineno) - node.lineno + 1
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }


LINES = {(name, cls): n for name, path in MODULES.items() for cls, n in _class_lines(path).items()}


def _lines(cls: type) -> int:
    return LINES.get((cls.__module__, cls.__qualname__), 0)


def test_the_classes_are_read() -> None:
    names = {c.__name__ for c in classes()}
    assert {"MemoryStore", "BlockIndex", "TranscriptStore", "Learner", "Sessions"} <= names


def test_no_class_is_assembled_from_parts_in_other_modules() -> None:
    """A class may specialize one other class; it is never put together from several
    (mixins over shared state), and never from a base in another module that exists only
    to be mixed in. The client's endpoint tables are declarations, with no state."""
    mixed = []
    for cls in classes():
        foreign = [b for b in _parts(cls)[1:] if b.__module__ != cls.__module__]
        direct = [b for b in cls.__bases__ if b in foreign]
        if len(direct) > 1 or any(b.__name__.startswith("_") for b in foreign):
            mixed.append((cls.__qualname__, [b.__qualname__ for b in foreign]))
    assert mixed == []


def test_the_check_finds_a_class_made_of_mixins() -> None:
    class Part:
        def one(self) -> int:
            return 1

    class Other:
        def two(self) -> int:
            return 2

    Part.__module__ = Other.__module__ = "aster_persist.probe"
    Made = type("Made", (Part, Other), {"__module__": "aster_persist.elsewhere"})
    foreign = [b for b in _parts(Made)[1:] if b.__module__ != Made.__module__]
    assert len([b for b in Made.__bases__ if b in foreign]) == 2


def test_a_class_with_every_part_counted_is_at_most_the_cap() -> None:
    made_of_parts = [c for c in classes() if len(_parts(c)) > 1]
    assert made_of_parts, "a class that extends another is counted with it"
    too_long = [
        (c.__qualname__, n) for c in made_of_parts if (n := sum(map(_lines, _parts(c)))) > CAP
    ]
    assert too_long == []


def test_no_class_is_over_the_cap() -> None:
    too_long = [(c.__qualname__, n) for c in classes() if (n := _lines(c)) > CAP]
    assert too_long == []


def _private_imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            names += [
                a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")
            ]
    return names


def test_no_module_imports_another_modules_private_names() -> None:
    found = {
        str(path.relative_to(PACKAGE)): names
        for path in sorted(PACKAGE.rglob("*.py"))
        if (names := _private_imports(path))
    }
    assert found == {}


def test_no_signature_is_written_twice_for_the_type_checker() -> None:
    """Nothing under ``if TYPE_CHECKING:`` defines a function or a class: a method one
    part calls of another is never declared again beside the part that defines it."""
    stubs = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                        stubs.append(f"{path.relative_to(PACKAGE)}:{inner.lineno}")
    assert stubs == []


@pytest.mark.parametrize("folder", ["api", "mcp", "cli"])
def test_the_front_ends_import_storage_for_types_only(folder: str) -> None:
    """Routers, MCP and the command line go through the services; storage/ is named
    there only for the type checker."""
    paths = sorted((PACKAGE / folder).rglob("*.py"))
    assert paths
    reached = []
    for path in paths:
        name = str(path.relative_to(PACKAGE.parent).with_suffix("")).replace("/", ".")
        package = package_of(name.removesuffix(".__init__"), path)
        reached += [
            (path.name, m)
            for m in imported_by(path, package, type_checking=False)
            if m.startswith("aster_persist.storage")
        ]
    assert reached == []
