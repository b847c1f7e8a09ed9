"""A TypeScript client generated from `openapi/openapi.json` by openapi-typescript and
typed by openapi-fetch compiles under `tsc --strict`, and runs the README's quick start
against a real daemon: create, append the tool-call turn, retry it with the same
Idempotency-Key and see the replay, a stale If-Match answered 412, list, messages,
search, remember and recall. `make test` installs the packages (tests/e2e/typescript/
package-lock.json) with npm from Debian's packages."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ..conftest import Daemon

REPO = Path(__file__).resolve().parents[2]
PROJECT = Path(__file__).with_name("typescript")
BIN = PROJECT / "node_modules" / ".bin"


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=180)


@pytest.mark.slow
def test_a_generated_typescript_client_compiles_strictly_and_runs_the_quick_start(
    tmp_path: Path, daemon: Daemon
) -> None:
    assert (BIN / "tsc").exists(), "run `make test` (npm ci --prefix tests/e2e/typescript)"
    for name in ("quickstart.ts", "tsconfig.json"):
        shutil.copy(PROJECT / name, tmp_path / name)
    (tmp_path / "package.json").write_text(json.dumps({"type": "module"}))
    (tmp_path / "node_modules").symlink_to(PROJECT / "node_modules")
    generated = run(
        [
            str(BIN / "openapi-typescript"),
            str(REPO / "openapi" / "openapi.json"),
            "--output",
            "api.d.ts",
            "--default-non-nullable",
            "false",  # a request field with a default is one a client may leave out
        ],
        tmp_path,
    )
    assert generated.returncode == 0, generated.stderr
    warnings = [line for line in (generated.stdout + generated.stderr).splitlines() if "⚠" in line]
    assert warnings == []  # e.g. a discriminator mapping the generator cannot follow
    compiled = run([str(BIN / "tsc"), "-p", "."], tmp_path)
    assert compiled.returncode == 0, compiled.stdout[-4000:]
    node = shutil.which("node")
    assert node is not None
    ran = run([node, "out/quickstart.js", daemon.url], tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.splitlines()[-1] == "ok recall"
    assert "ok a retry with the same key is the first reply" in ran.stdout


def readme_section(title: str) -> str:
    text = (REPO / "README.md").read_text()
    start = text.index(f"\n## {title}\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def fenced(section: str, language: str) -> str:
    (block,) = re.findall(rf"```{language}\n(.*?)```", section, flags=re.S)
    return str(block)


def test_the_readme_pins_the_versions_the_suite_builds_with() -> None:
    """Each package the README installs, at the version the suite compiles with."""
    commands = fenced(readme_section("TypeScript client"), "sh")
    pinned = dict(re.findall(r"((?:@types/)?[a-z-]+)@(\d+\.\d+\.\d+)", commands))
    suite = json.loads((PROJECT / "package.json").read_text())["devDependencies"]
    assert pinned == suite


@pytest.mark.slow
def test_the_readme_typescript_section_compiles_as_written_and_runs(
    tmp_path: Path, daemon: Daemon
) -> None:
    """Pasted as it is: generated with the README's flags, the typed batch and the
    headers in their HTTP case compile under `tsc --strict`, and it runs."""
    assert (BIN / "tsc").exists(), "run `make test` (npm ci --prefix tests/e2e/typescript)"
    section = readme_section("TypeScript client")
    (tmp_path / "quickstart.ts").write_text(fenced(section, "ts"))
    (tmp_path / "package.json").write_text(json.dumps({"type": "module"}))
    (tmp_path / "node_modules").symlink_to(PROJECT / "node_modules")
    generate = fenced(section, "sh").splitlines()[-1].split()
    assert generate[:2] == ["npx", "openapi-typescript"]
    generate[2] = str(REPO / "openapi" / "openapi.json")
    generated = run([str(BIN / "openapi-typescript"), *generate[2:]], tmp_path)
    assert generated.returncode == 0, generated.stderr
    flags = re.search(r"compile with `npx tsc (.*?)`", section)
    assert flags is not None
    compiled = run([str(BIN / "tsc"), *flags.group(1).split(), "--types", "node"], tmp_path)
    assert compiled.returncode == 0, compiled.stdout[-4000:]
    node = shutil.which("node")
    assert node is not None
    ran = subprocess.run(
        [node, "quickstart.js"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ASTER_URL": daemon.url},
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.splitlines() == ["appended through seq 2", "core memory saved: 200"]
