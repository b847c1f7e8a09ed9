"""API property tests: schemathesis reads the live daemon's /openapi.json and sends what
it generates from it, valid and invalid, one request at a time and in stateful walks
along the document's links, with every check it has: no server error, every response
as documented (status, headers, content type, schema), invalid data refused, valid data
accepted unless the store's state says otherwise. The states it may say otherwise in are
listed, each with its reason, in the repository's schemathesis.toml."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..conftest import Daemon, serving
from .scale import PROOF, record, rounds

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "schemathesis.toml"
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
EXAMPLES = rounds(40, 1000)
# make test walks the same cases each run (a red run is one to read, not to retry);
# make proof draws new ones every time
SEED = [] if PROOF else ["--generation-deterministic"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    # what is checked is the contract, not the disk: appends are synced every 200 ms
    yield from serving(tmp_path_factory, "properties", ASTER_DURABILITY="interval")


@pytest.mark.slow
def test_every_check_on_every_operation_of_the_live_document(server: Daemon) -> None:
    run = subprocess.run(
        [
            *(str(SCHEMATHESIS), "--no-color", "--config-file", str(CONFIG), "run"),
            f"{server.url}/openapi.json",
            # one worker: hypothesis parses source files with ast, which CPython 3.11
            # can fail at from two threads at once ("AST constructor recursion depth")
            *("--checks", "all", "--mode", "all", "--workers", "1"),
            *("--phases", "examples,coverage,fuzzing,stateful"),
            *("--max-examples", str(EXAMPLES)),
            *SEED,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
    )
    report = run.stdout + run.stderr
    assert run.returncode == 0, report[-30000:]
    tested = re.search(r"Tested: (\d+)", report)
    generated = re.search(r"(\d+) generated", report)
    assert tested and generated, report[-3000:]
    # every operation but the two endless streams, which the config leaves out
    assert int(tested[1]) == len(_operations(server)) - 2
    record(
        "schemathesis: every check, valid and invalid data, stateful walks",
        rounds=EXAMPLES,
        faults=int(generated[1]),
        checked=int(generated[1]),
        lost=0,
    )


def _operations(server: Daemon) -> list[str]:
    doc = httpx.get(f"{server.url}/openapi.json").json()
    return [op["operationId"] for methods in doc["paths"].values() for op in methods.values()]


def test_the_config_gives_a_reason_for_each_exception(server: Daemon) -> None:
    """Every operation block of schemathesis.toml says why under a comment, and names
    operations the document has."""
    import tomllib

    text = CONFIG.read_text()
    blocks = text.split("[[operations]]")[1:]
    assert blocks and all("\n# " in block for block in blocks)
    ids = set(_operations(server))
    for operation in tomllib.loads(text)["operations"]:
        named = operation["include-operation-id"]
        assert set([named] if isinstance(named, str) else named) <= ids, named


def test_regression_a_json_block_that_is_not_an_object_is_422(server: Daemon) -> None:
    r = httpx.put(f"{server.url}/v1/memory/blocks/x", json=[None, None])
    assert r.status_code == 422 and "not valid" in r.json()["detail"]
