"""``requirements.lock``: the container's dependencies pinned, made from ``pyproject.toml``
(``make lock``) and checked against it by ``tests/test_lockfile.py``.

``python -m tests.lockfile REPORT`` turns pip's installation report (``pip install
--dry-run --report``) into the lock: every package but the project, ``name==version``,
under a header holding the hash of the dependencies it was made from, so a change to
them that is not locked again fails the suite.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "requirements.lock"
HEAD = "# dependencies sha256: "
EXTRAS = ("team",)  # what the image carries beyond the core: it can join a team


def dependencies(pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """The core's dependencies and those of the extras the image carries."""
    project = tomllib.loads(pyproject.read_text())["project"]
    extras = project.get("optional-dependencies", {})
    return [*project["dependencies"], *(dep for extra in EXTRAS for dep in extras[extra])]


def dependencies_hash(pyproject: Path = REPO / "pyproject.toml") -> str:
    return hashlib.sha256("\n".join(sorted(dependencies(pyproject))).encode()).hexdigest()


def pins(lock: Path = LOCK) -> dict[str, str]:
    """The lock's pins, by normalised name."""
    out: dict[str, str] = {}
    for line in lock.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            out[normalised(name)] = version
    return out


def normalised(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def lock_of(report: dict[str, object]) -> str:
    installs = report["install"]
    assert isinstance(installs, list)
    lines = sorted(
        f"{item['metadata']['name']}=={item['metadata']['version']}"
        for item in installs
        if normalised(item["metadata"]["name"]) != "aster-persist"
    )
    return (
        "# The container's dependencies (the core's and the team extra's), pinned: `make lock`\n"
        "# makes it from pyproject.toml, resolved for the Python that runs it (the image's:\n"
        "# CPython 3.11 on Linux), and the suite fails when it no longer matches.\n"
        f"{HEAD}{dependencies_hash()}\n" + "\n".join(lines) + "\n"
    )


if __name__ == "__main__":
    sys.stdout.write(lock_of(json.loads(Path(sys.argv[1]).read_text())))
