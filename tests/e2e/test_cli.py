"""Every client command of the CLI through ``main([...])`` against a real daemon, for
people (tables) and for programs (``--json``), with the exit codes scripts rely on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from aster_persist.cli import main

from ..conftest import Daemon, assistant, call, free_port, serving, tool, user

ROOT = "/srv/cli-project"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    yield from serving(tmp_path_factory, "cli")


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "220")  # tables as wide as a real terminal
    monkeypatch.delenv("ASTER_TOKEN", raising=False)


class Cli:
    def __init__(self, capsys: pytest.CaptureFixture[str], url: str) -> None:
        self.capsys, self.url = capsys, url

    def __call__(self, *args: str, url: bool = True) -> tuple[int, str, str]:
        argv = [*args, "--url", self.url] if url else list(args)
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = self.capsys.readouterr()
        return code, out.out, out.err

    def json(self, *args: str) -> Any:
        code, out, err = self(*args, "--json")
        assert code == 0, err
        return json.loads(out)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], server: Daemon) -> Cli:
    return Cli(capsys, server.url)


@pytest.fixture(scope="module")
def session(server: Daemon) -> str:
    """A session with a tool call, its result, a summary and an eviction."""
    with httpx.Client(base_url=server.url) as http:
        sid = http.post("/v1/sessions", json={"repo_root": ROOT, "title": "Build fix"}).json()["id"]
        events = [
            user("why does the build fail?"),
            assistant(calls=[call("c1", "run_shell", '{"cmd": "make all", "timeout": 60}')]),
            tool("c1", "error: " + "x" * 2000),
            assistant("The header is missing."),
            {
                "type": "summary",
                "content": "The build failed on a missing header.",
                "through_seq": 4,
            },
            {"type": "eviction", "tool_call_id": "c1", "stub": "[make output dropped]"},
        ]
        assert http.post(f"/v1/sessions/{sid}/events", json=events).status_code == 201
    return str(sid)


def test_sessions_list_show_and_latest(cli: Cli, session: str) -> None:
    code, out, _ = cli("sessions", "list", "--repo-root", ROOT)
    assert code == 0 and session in out and "Build fix" in out and "ok" in out
    listed = cli.json("sessions", "list", "--repo-root", ROOT)
    assert [s["id"] for s in listed["items"]] == [session]
    [summary] = listed["items"]  # what it is made of: written here, one call
    assert summary["source_tool"] is None and summary["tool_calls"] == 1
    (row,) = [line.split("\t") for line in out.splitlines()]  # piped: one row, tab-separated
    assert row[0] == session and row[1] == "Build fix" and row[3] == "api" and row[-1] == "ok"

    code, out, _ = cli("sessions", "show", session, "--width", "40")
    assert code == 0
    assert "#1 user" in out and "why does the build fail?" in out
    assert "⚙ run_shell [c1]" in out and '"cmd": "make all"' in out  # arguments, pretty
    assert "→ c1: error: xxx" in out and "x" * 100 not in out  # a result, shortened
    assert "summary of everything through #4" in out
    assert "evicted c1 from the context: [make output dropped]" in out
    shown = cli.json("sessions", "show", session)
    assert shown["session"]["id"] == session and len(shown["events"]) == 6
    other = httpx.post(f"{cli.url}/v1/sessions", json={"repo_root": "/srv/taken"}).json()["id"]
    taken = [user("the key is sk-oops"), {"type": "retraction", "target_seq": 1}, user("again")]
    httpx.post(f"{cli.url}/v1/sessions/{other}/events", json=taken)
    code, out, _ = cli("sessions", "show", other)  # as every view: what was taken back is not
    assert code == 0 and "sk-oops" not in out and "#1 ── taken back ──" in out and "again" in out

    code, out, _ = cli("sessions", "latest", ROOT)
    assert code == 0 and session in out
    assert cli.json("sessions", "latest", ROOT)["id"] == session
    assert cli.json("sessions", "latest", "--repo-root", ROOT)["id"] == session  # as elsewhere
    code, _, err = cli("sessions", "latest", ROOT, "--repo-root", "/srv/other")
    assert code == 2 and "name the project once" in err


def test_sessions_rename_delete_restore_export_prune(
    cli: Cli, server: Daemon, tmp_path: Path
) -> None:
    root = "/srv/cli-lifecycle"
    sid = httpx.post(f"{server.url}/v1/sessions", json={"repo_root": root}).json()["id"]
    httpx.post(f"{server.url}/v1/sessions/{sid}/events", json=user("hello there"))

    code, out, _ = cli("sessions", "rename", sid, "Greeting")
    assert code == 0 and "Greeting" in out
    assert cli.json("sessions", "rename", sid, "Greetings")["title"] == "Greetings"

    target = tmp_path / "out.jsonl"
    code, _, err = cli("sessions", "export", sid, "-o", str(target))
    assert code == 0 and "wrote" in err
    assert target.read_bytes() == httpx.get(f"{server.url}/v1/sessions/{sid}/export").content
    code, out, _ = cli("sessions", "export", sid, "--format", "openai")
    assert code == 0 and json.loads(out)[0] == {"role": "user", "content": "hello there"}

    code, out, err = cli("sessions", "prune", "--keep-latest", "0")
    assert code == 0 and "would move" in err and sid in out  # the rows out, the notice err
    dry = cli.json("sessions", "prune", "--keep-latest", "0")
    assert dry["dry_run"] and sid in [s["id"] for s in dry["trashed"]]
    assert httpx.get(f"{server.url}/v1/sessions/{sid}").status_code == 200  # a dry run

    code, out, _ = cli("sessions", "delete", sid)
    assert code == 0 and "trash" in out
    code, _, err = cli("sessions", "delete", sid)  # twice: where it is, and the way back
    assert code == 4 and "already in the trash" in err
    assert f"aster-persist sessions restore {sid}" in err
    code, _, err = cli("sessions", "show", sid)
    assert code == 4 and sid in err  # not found
    code, out, _ = cli("sessions", "restore", sid)
    assert code == 0 and sid in out
    assert cli.json("sessions", "list", "--repo-root", root)["items"][0]["title"] == "Greetings"
    code, _, err = cli("sessions", "restore", sid)
    assert code == 1 and "not in the trash" in err  # a conflict with its state: refused


def test_memory_commands(cli: Cli) -> None:
    root = "/srv/cli-memory"
    code, out, _ = cli("memory", "add", "Deploys are frozen on Fridays.", "--repo-root", root)
    assert code == 0 and "noted" in out
    added = cli.json(
        "memory",
        "add",
        "Postgres listens on 5433.",
        "--name",
        "database",
        "--tag",
        "db",
        "--repo-root",
        root,
    )
    assert added["name"] == "database" and added["merged"] is False and added["tags"] == ["db"]
    code, out, err = cli(
        "memory", "add", "Something else.", "--name", "database", "--repo-root", root
    )
    assert code == 1 and "database" in err  # a different body under the name: refused

    code, out, _ = cli("memory", "list", "--repo-root", root)
    assert code == 0 and "database" in out and "db" in out
    assert [b["name"] for b in cli.json("memory", "list", "--repo-root", root)["items"]] == [
        "database"
    ]
    code, out, _ = cli("memory", "show", "database", "--repo-root", root)
    assert code == 0 and "Postgres listens on 5433." in out and "name: database" in out
    assert cli.json("memory", "show", "database", "--repo-root", root)["body"] == (
        "Postgres listens on 5433.\n"
    )
    code, out, _ = cli("memory", "show", "ASTER.md", "--repo-root", root)
    assert code == 0 and "- Deploys are frozen on Fridays." in out

    code, out, _ = cli("memory", "context", "--repo-root", root, "--query", "postgres")
    assert code == 0 and "Deploys are frozen" in out and "database" in out
    assert cli.json("memory", "context", "--repo-root", root)["scope"].startswith(
        "project:srv-cli-memory"
    )
    code, out, _ = cli("memory", "search", "postgres port", "--repo-root", root)
    assert code == 0 and "database" in out
    assert cli.json("memory", "search", "postgres", "--repo-root", root)["items"][0]["name"] == (
        "database"
    )
    code, out, _ = cli("memory", "search", "fridays", "--repo-root", root)  # in ASTER.md
    assert code == 0 and "ASTER.md" in out and "Deploys are frozen" in out
    code, out, _ = cli("memory", "search", "postgres OR fridays", "--repo-root", root)
    scores = [float(line.split("\t")[2]) for line in out.splitlines()]
    assert code == 0 and len(scores) == 2 and max(scores) == 1.0  # relative: best is 1.00
    assert 0 < min(scores) <= 1.0

    code, out, _ = cli("memory", "archive", "database", "--repo-root", root)
    assert code == 0 and "archived" in out
    assert cli.json("memory", "list", "--repo-root", root)["items"] == []
    assert cli.json("memory", "restore", "database", "--repo-root", root)["archived"] is False
    code, out, _ = cli("memory", "remove", "database", "--repo-root", root)
    assert code == 0 and "forgot database" in out
    code, _, err = cli("memory", "show", "database", "--repo-root", root)
    assert code == 4 and "database" in err


def test_search_for_people_and_programs(cli: Cli, session: str) -> None:
    code, out, _ = cli("search", "header missing", "--repo-root", ROOT)
    assert code == 0 and session in out and "header" in out
    found = cli.json("search", "header", "--repo-root", ROOT)
    assert found["items"] and found["items"][0]["session_id"] == session
    code, _, err = cli("search", '"unclosed')
    assert code == 1 and "422" in err
    code, _, err = cli("search", "x", "--kind", "everything")
    assert code == 2 and "unknown kind" in err
    for blank in ("", "  "):  # not every turn: a usage error that says what to send
        code, out, err = cli("search", blank)
        assert (code, out) == (2, "") and "say what to search for" in err


def test_du_for_people_and_programs(cli: Cli, session: str) -> None:
    space = cli.json("du")
    assert space["kinds"]["plain"] > 0 and space["total"] >= space["kinds"]["plain"]
    [project] = [p for p in space["projects"] if p["repo_root"] == ROOT]
    assert project["sessions"] >= 1 and project["bytes"] > 0
    code, out, _err = cli("du")
    rows = [line.split("\t") for line in out.splitlines() if line]
    assert code == 0 and ["plain", rows[0][1]] == rows[0] and rows[0][1].endswith("B")
    assert any(row[0] == "total" for row in rows) and any(row[0] == ROOT for row in rows)


def test_a_stopped_daemon_is_exit_code_3(capsys: pytest.CaptureFixture[str]) -> None:
    cli = Cli(capsys, f"http://127.0.0.1:{free_port()}")
    for args in (("sessions", "list"), ("memory", "context"), ("search", "x")):
        code, _, err = cli(*args)
        assert code == 3 and "not running" in err and "aster-persist serve" in err


def test_stats_for_people_and_programs(cli: Cli, server: Daemon) -> None:
    turns = [
        user("ship it"),
        {
            **assistant("shipped"),
            "model": "claude-sonnet-4-20250514",
            "usage": {"input_tokens": 2_000_000, "output_tokens": 0},
        },
        {
            **assistant("also"),
            "model": "house-model",
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
    ]
    with httpx.Client(base_url=server.url) as http:
        sid = http.post("/v1/sessions", json={"repo_root": "/srv/costly"}).json()["id"]
        assert http.post(f"/v1/sessions/{sid}/events", json=turns).status_code == 201
        api = http.get("/v1/stats", params={"group": "model"}).json()
    code, out, err = cli("stats", "--group", "model")
    assert code == 0, err
    row = next(line for line in out.splitlines() if "claude-sonnet-4-20250514" in line)
    assert "$6.00" in row  # two million tokens in at $3 a million
    assert "no price for house-model" in err and "docs.anthropic.com" in err
    assert cli.json("stats", "--group", "model")["total"] == api["total"]
    code, _, err = cli("stats", "--group", "week")
    assert code != 0 and "day, project or model" in err
