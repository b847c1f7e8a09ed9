"""MCP that agents use well, through the official SDK's client against a real daemon:
annotations and output schemas on every tool, ``isError`` on every failure, the
project taken from the connection URL or the client's roots, the tools to edit a
block, list recent memory and record a procedure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from mcp import Client
from mcp_types import ListRootsResult, Root

from aster_persist.schemas.names import project_slug

from ..conftest import Daemon

ROOT = "/srv/mcp-tools"
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def said(result: Any) -> str:
    assert not result.is_error, result.content
    return str(result.content[0].text)


def failed(result: Any) -> str:
    assert result.is_error and result.structured_content is None, result
    return str(result.content[0].text)


async def test_every_tool_says_what_it_does_and_what_it_returns(daemon: Daemon) -> None:
    async with Client(f"{daemon.url}/mcp", mode="legacy") as mcp:
        tools = {t.name: t for t in (await mcp.list_tools()).tools}
        for tool in tools.values():
            hints = tool.annotations
            assert hints is not None and hints.open_world_hint is False, tool.name
            assert tool.output_schema is not None and tool.output_schema["type"] == "object"
            for name, param in tool.input_schema["properties"].items():
                assert param.get("description"), (tool.name, name)
        read_only = {n for n, t in tools.items() if t.annotations.read_only_hint}
        assert read_only == {
            "recall", "search_memory", "list_memory", "search_sessions", "get_session",
            "list_sessions",
        }  # fmt: skip
        destructive = {n for n, t in tools.items() if t.annotations.destructive_hint}
        assert destructive == {"forget", "edit_block"}
        assert tools["record_procedure"].input_schema["properties"]["outcome"]["enum"] == [
            "success",
            "failure",
        ]
        assert (
            "client's first root"
            in tools["remember"].input_schema["properties"]["repo_root"]["description"]
        )

        # each structured result matches the schema the tool announced
        results = {
            "remember": await mcp.call_tool("remember", {"note": "Use uv.", "title": "uv"}),
            "recall": await mcp.call_tool("recall", {"name": "uv"}),
            "search_memory": await mcp.call_tool("search_memory", {"query": "uv"}),
            "list_memory": await mcp.call_tool("list_memory", {}),
            "list_sessions": await mcp.call_tool("list_sessions", {}),
        }
        for name, result in results.items():
            said(result)
            jsonschema.validate(result.structured_content, tools[name].output_schema)


async def test_every_failure_is_a_failed_call_that_says_what_to_do(daemon: Daemon) -> None:
    async with Client(f"{daemon.url}/mcp", mode="legacy") as mcp:
        assert "search_memory" in failed(await mcp.call_tool("recall", {"name": "nothing"}))
        assert "forget" in str((await mcp.call_tool("forget", {"name": "nothing"})).content)
        failed(await mcp.call_tool("forget", {"name": "nothing"}))
        secret = "token ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a"
        text = failed(await mcp.call_tool("remember", {"note": secret, "title": "t"}))
        assert "without it" in text and "16C7e42F" not in text
        said(await mcp.call_tool("remember", {"note": "One.", "title": "taken"}))
        assert "Recall the existing block" in failed(
            await mcp.call_tool("remember", {"note": "Two.", "title": "taken"})
        )
        assert "list_sessions" in failed(
            await mcp.call_tool("get_session", {"session_id": "01J0000000000000000000ABCD"})
        )
        assert "Nothing to change" in failed(await mcp.call_tool("edit_block", {"name": "taken"}))
        assert "No memory block" in failed(
            await mcp.call_tool("edit_block", {"name": "nothing", "body": "x"})
        )
        assert "task" in failed(
            await mcp.call_tool("record_procedure", {"outcome": "success", "task": "t" * 300})
        )
        assert "outcome" in failed(
            await mcp.call_tool("record_procedure", {"outcome": "maybe", "task": "t"})
        )
        bad_query = failed(await mcp.call_tool("search_sessions", {"query": '"unclosed'}))
        assert "closing quote" in bad_query and "search again" in bad_query
        said(await mcp.call_tool("remember", {"note": "Deploy on Tuesdays.", "title": "deploy"}))
        said(await mcp.call_tool("remember", {"note": "Release notes by hand.", "title": "notes"}))
        merged = failed(
            await mcp.call_tool("edit_block", {"name": "notes", "body": "Deploy on Tuesdays."})
        )
        assert "block 'deploy' says that already" in merged


async def test_edit_list_and_record(daemon: Daemon) -> None:
    async with Client(f"{daemon.url}/mcp?repo_root={ROOT}", mode="legacy") as mcp:
        said(await mcp.call_tool("remember", {"note": "Tests run with tox.", "title": "tests"}))
        edited = await mcp.call_tool(
            "edit_block",
            {"name": "tests", "body": "Tests run with `make test`.\n", "tags": "ci, make"},
        )
        assert said(edited) == "Changed 'tests' (body, tags)."
        block = httpx.get(
            f"{daemon.url}/v1/memory/blocks/tests", params={"repo_root": ROOT, "track": False}
        ).json()
        assert block["body"] == "Tests run with `make test`.\n" and block["tags"] == ["ci", "make"]
        assert block["metadata"]["description"]  # the frontmatter was kept
        said(await mcp.call_tool("edit_block", {"name": "tests", "description": "how to test"}))
        entries = httpx.get(f"{daemon.url}/v1/journal").json()["items"]
        assert [(e["op"], e["actor"], e["name"]) for e in entries] == [
            ("memory.write", "tool", "tests"),
            ("memory.edit", "tool", "tests"),
            ("memory.edit", "tool", "tests"),
        ]

        httpx.post(f"{daemon.url}/v1/memory/blocks", json={"name": "style", "content": "Tabs."})
        listed = await mcp.call_tool("list_memory", {"limit": 5})
        names = [(i["name"], i["scope"]) for i in listed.structured_content["items"]]
        assert names == [("style", "global"), ("tests", f"project:{project_slug(ROOT)}")]
        assert "- tests (project:" in said(listed) and "how to test" in said(listed)

        first = await mcp.call_tool(
            "record_procedure",
            {"outcome": "failure", "task": "release", "tools": "make, twine",
             "detail": "twine refused the wheel: no README"},
        )  # fmt: skip
        name = first.structured_content["name"]
        assert said(first).startswith("Recorded as") and not first.structured_content["merged"]
        again = await mcp.call_tool(
            "record_procedure",
            {"outcome": "failure", "task": "release", "tools": "make, twine",
             "detail": "twine refused the wheel: no README"},
        )  # fmt: skip
        assert again.structured_content["merged"] is True
        recorded = httpx.get(
            f"{daemon.url}/v1/memory/blocks/{name}", params={"repo_root": ROOT}
        ).json()
        assert recorded["type"] == "procedural" and "**Error:** twine refused" in recorded["body"]
        assert set(recorded["tags"]) == {"failure", "make", "twine"}


async def test_the_project_comes_from_the_url_then_the_roots(
    daemon: Daemon, tmp_path: Path
) -> None:
    async with Client(f"{daemon.url}/mcp?repo_root={ROOT}", mode="legacy") as mcp:
        done = await mcp.call_tool("remember", {"note": "From the URL.", "title": "via-url"})
        assert done.structured_content["scope"] == f"project:{project_slug(ROOT)}"
        own = await mcp.call_tool(
            "remember", {"note": "Said so.", "title": "own", "repo_root": "/srv/other"}
        )
        assert own.structured_content["scope"] == f"project:{project_slug('/srv/other')}"

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    asked: list[bool] = []

    async def roots(context: Any) -> ListRootsResult:
        asked.append(True)
        return ListRootsResult(roots=[Root(uri=repo.as_uri(), name="repo")])

    async with Client(f"{daemon.url}/mcp", mode="legacy", list_roots_callback=roots) as mcp:
        done = await mcp.call_tool("remember", {"note": "From the roots.", "title": "via-roots"})
        assert asked and done.structured_content["scope"] == f"project:{project_slug(str(repo))}"

    async with Client(f"{daemon.url}/mcp", mode="legacy") as mcp:  # no URL, no roots
        done = await mcp.call_tool("remember", {"note": "Global.", "title": "nowhere"})
        assert done.structured_content["scope"] == "global"


async def test_aster_persist_mcp_serves_stdio_through_the_daemon(
    daemon: Daemon, tmp_path: Path
) -> None:
    """A stdio-only client runs `aster-persist mcp`: the same tools, the same store."""
    import os
    import sys

    from mcp.client.stdio import StdioServerParameters

    def started_in(folder: Path) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=["-m", "aster_persist", "mcp", "--url", daemon.url],
            env={**os.environ, "ASTER_HOME": str(daemon.home)},
            cwd=str(folder),
        )

    params = started_in(tmp_path)  # in no repository: the global memory
    for mode in ("legacy", "auto"):
        async with Client(params, mode=mode) as mcp:
            tools = {t.name for t in (await mcp.list_tools()).tools}
            assert {"remember", "edit_block", "record_procedure", "get_session"} <= tools
            title = f"over-stdio-{mode}"
            done = await mcp.call_tool(
                "remember", {"note": f"Said over stdio ({mode}).", "title": title}
            )
            assert said(done).startswith(f"Remembered as {title!r}")
            assert "No memory block" in failed(await mcp.call_tool("recall", {"name": "nope"}))
    block = httpx.get(f"{daemon.url}/v1/memory/blocks/over-stdio-auto").json()
    assert block["body"].strip() == "Said over stdio (auto)."

    async with Client(params, mode="legacy") as mcp:  # the daemon restarts meanwhile
        said(await mcp.call_tool("list_memory", {}))
        daemon.stop()
        daemon.start()
        listed = await mcp.call_tool("list_memory", {})
        assert "over-stdio-legacy" in said(listed)

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    async with Client(started_in(repo / "src"), mode="legacy") as mcp:  # the client's project
        done = await mcp.call_tool("remember", {"note": "In the repo.", "title": "here"})
        assert done.structured_content["scope"] == f"project:{project_slug(str(repo))}"


def test_aster_persist_mcp_says_when_the_daemon_is_away(tmp_path: Path) -> None:
    import subprocess
    import sys

    from ..conftest import free_port

    initialize = (
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        '"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "aster_persist", "mcp", "--url", f"http://127.0.0.1:{free_port()}"],
        input=initialize.encode(),
        capture_output=True,
        timeout=60,
        env={"ASTER_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    import json

    reply = json.loads(done.stdout)
    assert reply["id"] == 1 and "not reachable" in reply["error"]["message"]
    assert b"not reachable" in done.stderr


def test_aster_persist_mcp_answers_a_line_that_is_not_a_message(daemon: Daemon) -> None:
    """Over stdio as over /mcp: a line that is not JSON is a parse error (-32700) and one
    that is JSON but not an object an invalid request (-32600), each with id null, and
    the session goes on."""
    import json
    import subprocess
    import sys

    initialize = (
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        '"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
    )
    lines = initialize + "{oops\n" + "[1, 2]\n" + '{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
    done = subprocess.run(
        [sys.executable, "-m", "aster_persist", "mcp", "--url", daemon.url],
        input=lines.encode(),
        capture_output=True,
        timeout=60,
    )
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    by_id = {r.get("id"): r for r in replies if r.get("id") is not None}
    errors = sorted((r["error"]["code"], r["id"]) for r in replies if "error" in r)
    assert errors == [(-32700, None), (-32600, None)], replies
    parse = next(r for r in replies if r.get("error", {}).get("code") == -32700)
    assert parse["error"]["message"].startswith("Parse error") and parse["jsonrpc"] == "2.0"
    assert by_id[1]["result"]["serverInfo"] and by_id[2]["result"] == {}


async def test_an_agent_asking_what_it_said_finds_its_own_turns_first(daemon: Daemon) -> None:
    """The agent is the asker of search_sessions: its "I" is the assistant's turns."""
    same = "The cache key leaves out the lockfile hash."
    sid = httpx.post(f"{daemon.url}/v1/sessions", json={"repo_root": ROOT}).json()["id"]
    turns = [
        {"type": "message", "role": "user", "content": same},
        {"type": "message", "role": "assistant", "content": same},
    ]
    httpx.post(f"{daemon.url}/v1/sessions/{sid}/events", json=turns).raise_for_status()
    async with Client(f"{daemon.url}/mcp", mode="legacy") as mcp:
        for question, roles in [
            ("what did I find about the cache key lockfile", ["assistant", "user"]),
            ("the cache key lockfile you told me about", ["user", "assistant"]),
        ]:
            result = await mcp.call_tool("search_sessions", {"query": question})
            said(result)
            assert [h["role"] for h in result.structured_content["items"]] == roles
