"""The Dockerfile and compose.yaml, checked without a container engine: linted, validated
against the Compose Specification's schema, and the image's commands run as the
Dockerfile runs them (same install step into a fresh virtual environment, same
environment, same entrypoint, same healthcheck)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import yaml

from ..conftest import free_port
from ..lockfile import pins

REPO = Path(__file__).resolve().parents[2]
SCHEMA = Path(__file__).parent.parent / "schemas" / "compose-spec.json"


def instructions(path: Path) -> list[tuple[int, str, str]]:
    """(stage, INSTRUCTION, arguments) of a Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", path.read_text())
    out: list[tuple[int, str, str]] = []
    stage = -1
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        if word.upper() == "FROM":
            stage += 1
        out.append((stage, word.upper(), rest.strip()))
    return out


def env_of(args: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in shlex.split(args))


def test_the_dockerfile_passes_hadolint() -> None:
    hadolint = Path(sys.executable).parent / "hadolint"
    done = subprocess.run(
        [str(hadolint), "--failure-threshold", "info", str(REPO / "Dockerfile")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_image_is_slim_non_root_and_keeps_its_data_on_a_volume() -> None:
    steps = instructions(REPO / "Dockerfile")
    final = max(stage for stage, _, _ in steps)
    last = [(word, args) for stage, word, args in steps if stage == final]
    assert last[0][0] == "FROM" and re.fullmatch(
        r"python:3\.\d+-slim(@sha256:[0-9a-f]{64})?", last[0][1]
    )
    users = [args for word, args in last if word == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    env = {k: v for word, args in last if word == "ENV" for k, v in env_of(args).items()}
    assert ("VOLUME", f'["{env["ASTER_HOME"]}"]') in last
    assert env["ASTER_AUTH"] == "token"  # exposed beyond loopback: a token, always
    check = next(args for word, args in last if word == "HEALTHCHECK")
    assert "/healthz" in check
    installs = " ".join(args for word, args in last if word == "RUN")
    assert not re.search(r"apt-get|gcc|build-essential|pip install", installs)
    copied = [args for word, args in last if word == "COPY"]
    assert copied == ["--from=build /opt/aster /opt/aster"]  # only the built environment


def test_compose_file_is_valid_and_publishes_on_loopback_only() -> None:
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    jsonschema.Draft7Validator(json.loads(SCHEMA.read_text())).validate(compose)  # its draft
    service = compose["services"]["aster-persist"]
    for port in service["ports"]:
        assert str(port).startswith("127.0.0.1:"), port
    volume = service["volumes"][0].split(":")
    assert volume[0] in compose["volumes"] and volume[1] == "/data"  # a named volume
    assert service["environment"]["ASTER_AUTH"] == "token"
    assert service["environment"]["ASTER_TOKEN"].startswith("${ASTER_TOKEN")
    assert "aster-persist" in service["environment"]["ASTER_ALLOWED_HOSTS"]
    # the public URL follows the published port, so a page there may write
    (published,) = service["ports"]
    host_port = published.removeprefix("127.0.0.1:").rsplit(":", 1)[0]
    assert service["environment"]["ASTER_PUBLIC_URL"] == f"http://127.0.0.1:{host_port}"


def test_compose_team_profile_is_a_three_node_cluster_the_real_server_accepts() -> None:
    """`--profile team`: three JetStream nodes, each with its own volume and a loopback
    port, all reading compose/nats.conf, which nats-server (team.txt's) checks as valid
    for each node's name; every write synced before it is acknowledged."""
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    nodes = {name: s for name, s in compose["services"].items() if "team" in s.get("profiles", [])}
    assert sorted(nodes) == ["nats1", "nats2", "nats3"]
    assert "profiles" not in compose["services"]["aster-persist"]  # up by default, alone
    ports, volumes = set(), set()
    for name, node in nodes.items():
        assert node["environment"]["NATS_NAME"] == name
        assert "./compose/nats.conf:/etc/nats/nats.conf:ro" in node["volumes"]
        (data,) = [v for v in node["volumes"] if v.endswith(":/data")]
        volumes.add(data.split(":")[0])
        (port,) = node["ports"]
        assert port.startswith("127.0.0.1:") and port.endswith(":4222"), port
        ports.add(port)
    assert len(ports) == 3 and volumes <= set(compose["volumes"]) and len(volumes) == 3
    conf = (REPO / "compose" / "nats.conf").read_text()
    assert re.search(r"^\s*sync_interval: always$", conf, re.M)
    assert all(f"nats-route://{name}:6222" in conf for name in nodes)
    server = Path(sys.executable).with_name("nats-server")
    for name in nodes:
        checked = subprocess.run(
            [str(server), "-t", "-c", str(REPO / "compose" / "nats.conf")],
            env={**os.environ, "NATS_NAME": name},
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert checked.returncode == 0, checked.stderr


@pytest.mark.slow
def test_the_entrypoint_runs_as_the_image_runs_it(tmp_path: Path) -> None:
    steps = instructions(REPO / "Dockerfile")
    venv = tmp_path / "opt-aster"
    src = tmp_path / "src"
    src.mkdir()
    for stage, word, args in steps:  # the build stage, with /opt/aster in a temporary place
        if stage != 0:
            continue
        if word == "COPY":
            *sources, dest = args.split()
            for name in sources:
                target = src / dest if dest.endswith("/") and dest != "./" else src
                origin = REPO / name
                if origin.is_dir():
                    shutil.copytree(
                        origin, src / name, ignore=shutil.ignore_patterns("__pycache__")
                    )
                else:
                    shutil.copy(origin, target / origin.name)
        elif word == "RUN":
            command = args.replace("/opt/aster", str(venv)).replace(
                "python -m venv", f"{sys.executable} -m venv"
            )
            subprocess.run(command, shell=True, cwd=src, check=True, capture_output=True)
    final = max(stage for stage, _, _ in steps)
    last = [(word, args) for stage, word, args in steps if stage == final]
    env = {k: v for word, args in last if word == "ENV" for k, v in env_of(args).items()}
    home = tmp_path / "data"
    home.mkdir(mode=0o700)
    port = free_port()
    env |= {
        "PATH": env["PATH"].replace("/opt/aster", str(venv)).replace("$PATH", os.environ["PATH"]),
        "ASTER_HOME": str(home),
        "ASTER_PORT": str(port),
        "ASTER_HOST": "127.0.0.1",  # the test binds loopback; the image binds 0.0.0.0
        "HOME": str(tmp_path),
    }
    entrypoint = json.loads(next(args for word, args in last if word == "ENTRYPOINT"))
    command = json.loads(next(args for word, args in last if word == "CMD"))
    proc = subprocess.Popen(
        entrypoint + command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        health = next(args for word, args in last if word == "HEALTHCHECK")
        check = json.loads(health.split(" CMD ", 1)[1].replace("4627", str(port)))
        deadline = time.monotonic() + 30
        while subprocess.run(check, env=env, capture_output=True).returncode != 0:
            assert proc.poll() is None and time.monotonic() < deadline, "never healthy"
            time.sleep(0.2)
        url = f"http://127.0.0.1:{port}"
        token = (home / "token").read_text().strip()  # made in the volume
        assert httpx.get(f"{url}/v1/sessions").status_code == 401
        headers: dict[str, Any] = {"Authorization": f"Bearer {token}", "Host": "aster-persist"}
        made = httpx.post(f"{url}/v1/sessions", json={"repo_root": "/work"}, headers=headers)
        assert made.status_code == 201, made.text
        assert Path(home / "sessions").is_dir()
    finally:
        proc.terminate()
        assert proc.wait(20) == 0
    # the image can join a team: the NATS client is in it, as locked
    client = [
        str(venv / "bin" / "python"),
        "-c",
        'import importlib.metadata as m, nats; print(m.version("nats-py"))',
    ]
    found = subprocess.run(client, capture_output=True, text=True)
    assert found.returncode == 0 and found.stdout.strip() == pins()["nats-py"], found.stderr


def test_every_base_image_is_pinned_by_digest() -> None:
    bases = [
        args.split()[0] for _stage, op, args in instructions(REPO / "Dockerfile") if op == "FROM"
    ]
    assert len(bases) == 2
    for base in bases:
        assert re.fullmatch(r"python:3\.11-slim@sha256:[0-9a-f]{64}", base), base


def test_the_build_context_leaves_out_the_checkout_and_keeps_what_is_copied() -> None:
    """`.dockerignore` keeps `.git`, `.venv` and the tests out of the build context, and
    nothing the Dockerfile copies in."""
    import fnmatch

    patterns = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]

    def ignored(path: str) -> bool:
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        return any(
            fnmatch.fnmatch(p, pattern.removeprefix("**/")) or fnmatch.fnmatch(p, pattern)
            for pattern in patterns
            for p in prefixes + parts
        )

    for left_out in (".git", ".venv", "tests/e2e/typescript/node_modules", "test-artifacts"):
        assert ignored(left_out), left_out
    copied = [
        source
        for _line, op, args in instructions(REPO / "Dockerfile")
        if op == "COPY" and "--from" not in args
        for source in args.split()[:-1]
    ]
    assert copied and "service" in copied
    for source in copied:
        for path in (REPO / source).rglob("*") if (REPO / source).is_dir() else [REPO / source]:
            rel = str(path.relative_to(REPO))
            if "__pycache__" not in rel and ".egg-info" not in rel:  # built here, not sources
                assert not ignored(rel), rel


def test_the_token_file_the_readme_writes_is_never_committed(tmp_path: Path) -> None:
    """The container step writes the bearer token to `.env`: git ignores it, so a
    `git add -A` in the checkout leaves it out (and the build context too)."""
    assert "ASTER_TOKEN=$(python3 -c" in (REPO / "README.md").read_text()
    repo = tmp_path / "clone"
    shutil.copytree(REPO, repo, ignore=shutil.ignore_patterns(".git", ".venv", "node_modules"))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / ".env").write_text("ASTER_TOKEN=" + "x" * 43 + "\n")
    subprocess.run([*git, "add", "-A"], check=True)
    staged = subprocess.run(
        [*git, "diff", "--cached", "--name-only"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "README.md" in staged and ".env" not in staged
    assert ".env" in (REPO / ".dockerignore").read_text().split()
