"""storage/ and index/ are plain Python: no web framework imports (imports point one way)."""

from __future__ import annotations

import ast
from pathlib import Path

import aster_persist

PACKAGE = Path(aster_persist.__file__).parent


def test_storage_and_index_never_import_the_web_layer() -> None:
    for folder in ("storage", "index"):
        for path in (PACKAGE / folder).glob("*.py"):
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
