"""The command line as a person and a script use it: through a pseudo-terminal of 80
columns no id, name or path is cut; through a pipe, rows are tab-separated; help is
wrapped by the terminal, and `--version` answers."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import tempfile
import termios
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..conftest import Daemon, assistant, serving, user

SCRIPT = str(Path(sys.executable).with_name("aster-persist"))
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
LONG_ROOT = "/srv/" + "a-rather-long-folder-name-" * 3 + "app"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    yield from serving(tmp_path_factory, "cli-output")


def environment(server: Daemon) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, "ASTER_URL": server.url, "ASTER_HOME": str(server.home), "TERM": "xterm"}


def in_terminal(server: Daemon, *args: str, columns: int = 80) -> str:
    """What a command shows in a terminal ``columns`` wide (colours taken out)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(
        [SCRIPT, *args], stdin=follower, stdout=follower, stderr=follower, env=environment(server)
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the terminal closed with the program
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(60) == 0, b"".join(chunks)
    os.close(leader)
    return ANSI.sub("", b"".join(chunks).decode("utf-8", "replace"))


def piped(server: Daemon, *args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [SCRIPT, *args],
        capture_output=True,
        text=True,
        env=environment(server),
        timeout=60,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("columns", [80, 120])
def test_ids_names_and_paths_are_whole_one_line_a_row(server: Daemon, columns: int) -> None:
    """In a terminal of 80 or 120 columns every table fits, one line a row: ids, names
    and paths whole (a project on a line of its own), the rest shortened, times as
    people read them, and a list that stops early says how to see the rest."""
    sid = httpx.post(
        f"{server.url}/v1/sessions",
        json={"repo_root": LONG_ROOT, "title": "A title long enough to need wrapping " * 3},
    ).json()["id"]
    httpx.post(
        f"{server.url}/v1/sessions/{sid}/events",
        json=[user("where is the zanzibar config?"), assistant("In zanzibar.toml.")],
    )
    name = "how-the-deploy-pipeline-promotes-builds-to-production"
    httpx.post(
        f"{server.url}/v1/memory/blocks",
        params={"repo_root": LONG_ROOT},
        json={"name": name, "content": "Through staging, zanzibar first."},
    )
    shown = {
        "sessions list": in_terminal(server, "sessions", "list", columns=columns),
        "sessions latest": in_terminal(server, "sessions", "latest", LONG_ROOT, columns=columns),
        "memory list": in_terminal(
            server, "memory", "list", "--repo-root", LONG_ROOT, columns=columns
        ),
        "search": in_terminal(server, "search", "zanzibar", columns=columns),
        "memory search": in_terminal(
            server, "memory", "search", "zanzibar", "--repo-root", LONG_ROOT, columns=columns
        ),
    }
    for what, text in shown.items():
        assert max(map(len, text.splitlines())) <= columns, what  # it fits the terminal
    for what in ("sessions list", "sessions latest"):
        [row] = [line for line in shown[what].splitlines() if sid in line]  # one line
        assert "just now" in row or "min ago" in row, row  # a time as people read it
    lines = shown["sessions list"].splitlines()  # the path whole, on lines of its own
    assert LONG_ROOT in ("".join(lines) if len(LONG_ROOT) >= columns else lines)
    assert f"{sid} #1" in shown["search"] and f"{sid} #2" in shown["search"]
    for what in ("memory list", "memory search"):
        assert name in shown[what], shown[what]
    for n in range(3):
        httpx.post(f"{server.url}/v1/sessions", json={"repo_root": f"/srv/more-{n}"})
    few = in_terminal(server, "sessions", "list", "--limit", "2", columns=columns)
    rows = [line for line in few.splitlines() if re.match(r"[0-9A-Z]{26}  ", line)]
    assert len(rows) == 2 and "more with --limit 4" in few


def test_the_file_column_of_an_import_is_whole(server: Daemon) -> None:
    folder = Path(tempfile.mkdtemp(prefix="imp"))
    source = Path(__file__).parent.parent / "fixtures" / "codex"
    rollout = next(source.rglob("rollout-*.jsonl"))
    target = folder / ("a-fairly-long-rollout-file-name-" + rollout.name[-20:])
    target.write_bytes(rollout.read_bytes())
    text = in_terminal(server, "sessions", "import", str(target), "--repo-root", LONG_ROOT)
    assert str(target) in text and max(map(len, text.splitlines())) <= 80


def test_a_pipe_gets_tab_separated_rows(server: Daemon) -> None:
    sid = httpx.post(f"{server.url}/v1/sessions", json={"repo_root": "/srv/piped"}).json()["id"]
    rows = [line.split("\t") for line in piped(server, "sessions", "list").splitlines()]
    (mine,) = [row for row in rows if row[0] == sid]
    assert len(mine) == 8 and mine[2] == "/srv/piped" and mine[-1] == "ok"


def test_help_is_wrapped_by_the_terminal_and_the_version_answers(server: Daemon) -> None:
    text = in_terminal(server, "sessions", "--help", columns=180)
    line = next(x for x in text.splitlines() if "A transcript, readably" in x)
    # one paragraph, broken only where the terminal ends (the docstring breaks after
    # "results shortened,")
    assert "results shortened, summaries and evictions marked. `--json` gives" in line
    assert "``" not in text
    assert "{PATH...}" in in_terminal(server, "sessions", "import", "--help")
    from aster_persist import __version__

    assert piped(server, "--version").strip() == f"aster-persist {__version__}"


def test_the_project_is_the_repository_you_stand_in(server: Daemon, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    sid = httpx.post(f"{server.url}/v1/sessions", json={"repo_root": str(repo)}).json()["id"]
    assert piped(server, "sessions", "latest", "--json", cwd=deep).find(sid) > 0
    assert sid in piped(server, "sessions", "latest", "..", "--json", cwd=deep)
    piped(server, "memory", "add", "Run tox.", "--name", "tests", "--repo-root", ".", cwd=deep)
    block = httpx.get(
        f"{server.url}/v1/memory/blocks/tests", params={"repo_root": str(repo), "track": False}
    )
    assert block.status_code == 200 and block.json()["body"].strip() == "Run tox."
    elsewhere = tmp_path / "notes"
    elsewhere.mkdir()
    noted = fed(server, "", "sessions", "latest", "../../../notes", cwd=deep)
    assert noted.returncode == 4 and f"no session for {elsewhere}\n" in noted.stderr  # not repo
    listed = piped(server, "sessions", "list", "--repo-root", "src", cwd=repo)
    assert [row.split("\t")[0] for row in listed.splitlines()] == [sid]


def fed(
    server: Daemon, stdin: str, *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SCRIPT, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=environment(server),
        timeout=60,
        cwd=cwd,
    )


def test_a_headless_host_creates_and_appends(server: Daemon, tmp_path: Path) -> None:
    repo = tmp_path / "app"
    (repo / ".git").mkdir(parents=True)
    made = fed(server, "", "sessions", "create", "--title", "From a script", cwd=repo)
    sid = made.stdout.strip()
    assert made.returncode == 0 and f"sessions append {sid}" in made.stderr
    header = httpx.get(f"{server.url}/v1/sessions/{sid}").json()["header"]
    assert header["repo_root"] == str(repo) and header["title"] == "From a script"

    lines = '{"type":"message","role":"user","content":"hi"}\n\n' + (
        '{"type":"message","role":"assistant","content":"hello"}\n'
    )
    done = fed(server, lines, "sessions", "append", sid, "--idempotency-key", "turn-1")
    assert done.returncode == 0 and done.stdout.strip() == f"appended: seq 1-2 of {sid}"
    again = fed(server, lines, "sessions", "append", sid, "--idempotency-key", "turn-1")
    assert again.stdout.startswith("already appended (a retry): seq 1-2")
    one = fed(
        server, '{"events": [{"type":"title","title":"T"}]}', "sessions", "append", sid, "--json"
    )
    assert json.loads(one.stdout) == {"first_seq": 3, "last_seq": 3, "count": 1, "replayed": False}
    for bad, said in (("", "no events on stdin"), ("{}\nnope\n", "line 2 of stdin")):
        refused = fed(server, bad, "sessions", "append", sid)
        assert refused.returncode == 2 and said in refused.stderr
    wrong = fed(server, '{"type":"message","role":"robot"}', "sessions", "append", sid)
    assert wrong.returncode == 1 and "role" in wrong.stderr
    assert httpx.get(f"{server.url}/v1/sessions/{sid}").json()["events"] == 3


def test_procedures_json_everywhere_and_text_after_two_dashes(
    server: Daemon, tmp_path: Path
) -> None:
    root = "/srv/procedures"
    ok = fed(server, "", "memory", "success", "release", "--tool", "make", "--result",
             "tagged v1", "--repo-root", root, "--json")  # fmt: skip
    block = json.loads(ok.stdout)
    assert ok.returncode == 0 and block["type"] == "procedural" and "success" in block["tags"]
    bad = fed(server, "", "memory", "failure", "deploy", "--error", "no disk", "--repo-root", root)
    assert bad.returncode == 0 and "recorded as" in bad.stdout
    dashed = fed(server, "", "memory", "add", "--repo-root", root, "--", "-v makes it verbose")
    assert dashed.returncode == 0
    core = httpx.get(f"{server.url}/v1/memory/core", params={"repo_root": root}).json()
    assert "-v makes it verbose" in core["content"]

    removed = fed(server, "", "memory", "remove", block["name"], "--repo-root", root, "--json")
    assert json.loads(removed.stdout) == {
        "name": block["name"],
        "repo_root": root,
        "forgotten": True,
    }
    sid = httpx.post(f"{server.url}/v1/sessions", json={"repo_root": root}).json()["id"]
    out = tmp_path / "s.jsonl"
    exported = fed(server, "", "sessions", "export", sid, "-o", str(out), "--json")
    report = json.loads(exported.stdout)
    assert report["bytes"] == out.stat().st_size and report["output"] == str(out)
    assert fed(server, "", "sessions", "export", sid, "--json").returncode == 2
    deleted = fed(server, "", "sessions", "delete", sid, "--json")
    assert json.loads(deleted.stdout) == {"id": sid, "purged": False, "trashed": True}


def test_exit_codes_are_the_same_for_every_command(server: Daemon, tmp_path: Path) -> None:
    """0 done, 1 refused, 2 bad usage, 3 no daemon or one holds the home, 4 not found."""
    malformed = fed(server, "", "sessions", "show", "not-an-id")
    assert malformed.returncode == 2 and "is not a session id" in malformed.stderr
    prune = fed(server, "", "sessions", "prune")
    assert prune.returncode == 2 and "--older-than-days" in prune.stderr
    gone = fed(server, "", "sessions", "show", "01J0000000000000000000ABCD")
    assert gone.returncode == 4
    away = fed(server, "", "sessions", "list", "--url", "http://127.0.0.1:1")
    assert away.returncode == 3
    for command in ("reindex", "doctor"):  # the home the running daemon holds
        held = fed(server, "", command, "--home", str(server.home))
        assert held.returncode == 3 and "in use" in held.stderr, command
    assert "Exit codes: 0 done" in fed(server, "", "--help").stdout

    fresh = tmp_path / "never-made"
    port = server.url.rsplit(":", 1)[1]
    busy = subprocess.run(
        [SCRIPT, "serve", "--port", port, "--home", str(fresh)],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment(server),
    )
    assert busy.returncode == 3 and "is in use" in busy.stderr
    assert "serving" not in busy.stderr and not fresh.exists()  # nothing made


def test_following_a_folder_answers_in_json_too(server: Daemon, tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    home = ("--home", str(server.home))  # the running daemon's: it reads the list
    added = json.loads(fed(server, "", "follow", "add", str(folder), *home, "--json").stdout)
    assert added == {"following": str(folder), "folders": [str(folder)]}
    removed = json.loads(fed(server, "", "follow", "remove", str(folder), *home, "--json").stdout)
    assert removed == {"stopped": str(folder), "folders": []}


def test_the_hook_installers_answer_in_json_too(server: Daemon, tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    claude = fed(server, "", "hooks", "claude", "--install", "--settings", str(settings), "--json")
    assert json.loads(claude.stdout) == {
        "settings": str(settings),
        "installed": True,
        "changed": True,
    }
    again = fed(server, "", "hooks", "claude", "--install", "--settings", str(settings), "--json")
    assert json.loads(again.stdout)["changed"] is False  # already there: the file untouched
    config = tmp_path / "config.toml"
    codex = fed(server, "", "hooks", "codex", "--install", "--config", str(config), "--json")
    assert json.loads(codex.stdout) == {"config": str(config), "installed": True, "changed": True}
    agents = tmp_path / "AGENTS.md"
    agents.write_text("# Notes\n")
    removed = fed(
        server, "", "hooks", "codex-instructions", "--remove", "--file", str(agents), "--json"
    )
    assert json.loads(removed.stdout) == {"file": str(agents), "removed": True, "changed": False}


def test_a_pipe_gets_whole_lines_and_a_reader_that_stops_early_is_no_failure(
    server: Daemon,
) -> None:
    """Through a pipe nothing is wrapped (JSON and URLs stay whole on their line), and
    `| head` under pipefail exits 0 for every command, however much was left to write."""
    url = "https://example.com/" + "a" * 150
    sid = httpx.post(f"{server.url}/v1/sessions", json={"repo_root": "/srv/pipes"}).json()["id"]
    turns = [user(f'turn {n}: see {url} and {{"key": {n}}}') for n in range(400)]
    assert httpx.post(f"{server.url}/v1/sessions/{sid}/events", json=turns).status_code == 201
    shown = piped(server, "sessions", "show", sid)
    assert f'turn 399: see {url} and {{"key": 399}}\n' in shown  # one line, whole
    for args in (["sessions", "show", sid], ["search", "turn"], ["sessions", "list"]):
        done = subprocess.run(
            ["bash", "-c", 'set -o pipefail; "$0" "$@" | head -1 >/dev/null', SCRIPT, *args],
            capture_output=True,
            text=True,
            env=environment(server),
            timeout=60,
        )
        assert (done.returncode, done.stderr) == (0, ""), (args, done.stderr)


def test_a_project_is_named_as_an_argument_or_with_repo_root(
    server: Daemon, tmp_path: Path
) -> None:
    """`sessions list`, `sessions latest` and `memory list` take the project either way
    (`.` for where you stand); named twice, differently, is bad usage."""
    root = "/srv/named-either-way"
    sid = httpx.post(f"{server.url}/v1/sessions", json={"repo_root": root}).json()["id"]
    httpx.post(
        f"{server.url}/v1/memory/blocks",
        params={"repo_root": root},
        json={"name": "either-way", "content": "Named either way."},
    )
    for command in (["sessions", "list"], ["sessions", "latest"], ["memory", "list"]):
        given = fed(server, "", *command, root, "--json")
        named = fed(server, "", *command, "--repo-root", root, "--json")
        assert given.returncode == named.returncode == 0, (command, given.stderr)
        assert given.stdout == named.stdout, command
        assert sid in given.stdout or "either-way" in given.stdout, command
        twice = fed(server, "", *command, root, "--repo-root", "/srv/another")
        assert twice.returncode == 2 and "name the project once" in twice.stderr, command
