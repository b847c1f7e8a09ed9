"""The MCP server at /mcp, through the official MCP Python SDK's client against a real
daemon: the handshake, every tool, resources, the prompt, a change event after a
remember made by another client, bad arguments, and the daemon's Host and token rules."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from ..conftest import Daemon, assistant, call, make_client, tool, user

ROOT = "/srv/mcp-project"
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def mcp(daemon: Daemon) -> AsyncIterator[Client]:
    async with Client(f"{daemon.url}/mcp", mode="legacy") as client:  # initialize handshake
        yield client


def text(result: Any) -> str:
    assert not result.is_error, result.content
    return str(result.content[0].text)


async def test_initialize_and_every_tool(mcp: Client, daemon: Daemon) -> None:
    assert mcp.server_info is None or mcp.server_info.name == "aster-persist"
    tools = {t.name: t for t in (await mcp.list_tools()).tools}
    assert set(tools) == {
        "remember",
        "recall",
        "forget",
        "search_memory",
        "edit_block",
        "list_memory",
        "record_procedure",
        "search_sessions",
        "get_session",
        "list_sessions",
    }
    assert "secrets" in (tools["remember"].description or "")  # the same guidance

    done = await mcp.call_tool(
        "remember",
        {"note": "Integration tests need Docker running.", "title": "Docker", "repo_root": ROOT},
    )
    assert text(done).startswith("Remembered as 'docker'")
    assert done.structured_content["scope"].startswith("project:")
    assert text(await mcp.call_tool("remember", {"note": "Prefer small commits."})) == (
        "Added to core memory."
    )
    recalled = await mcp.call_tool("recall", {"name": "docker", "repo_root": ROOT})
    assert "Integration tests need Docker running." in text(recalled)
    found = await mcp.call_tool("search_memory", {"query": "docker tests", "repo_root": ROOT})
    assert "docker" in text(found) and found.structured_content["items"][0]["name"] == "docker"

    sid = httpx.post(
        f"{daemon.url}/v1/sessions", json={"repo_root": ROOT, "title": "Flaky"}
    ).json()["id"]
    events = [
        user("why does the websocket test flake?"),
        assistant(calls=[call("c1", "run", '{"cmd": "pytest -k websocket"}')]),
        tool("c1", "1 failed: the heartbeat came after the zebra deadline"),
        assistant("The zebra deadline is too short."),
    ]
    assert httpx.post(f"{daemon.url}/v1/sessions/{sid}/events", json=events).status_code == 201
    hits = await mcp.call_tool("search_sessions", {"query": "zebra deadline"})
    assert f"session {sid} turn" in text(hits)
    assert {h["session_id"] for h in hits.structured_content["items"]} == {sid}
    window = await mcp.call_tool("get_session", {"session_id": sid, "after": 1, "limit": 2})
    lines = text(window).splitlines()
    assert lines[0].startswith("Flaky") and lines[1].startswith("#2 assistant:")
    assert "[calls run(" in lines[1] and lines[2].startswith("#3 tool:") and len(lines) == 3
    assert window.structured_content["more"] is True
    listed = await mcp.call_tool("list_sessions", {"repo_root": ROOT})
    assert sid in text(listed) and listed.structured_content["items"][0]["id"] == sid

    gone = await mcp.call_tool("forget", {"name": "docker", "repo_root": ROOT})
    assert text(gone).startswith("Forgot 'docker'")
    missing = await mcp.call_tool("recall", {"name": "docker", "repo_root": ROOT})
    assert missing.is_error and "No memory block is named 'docker'" in missing.content[0].text


async def test_resources_and_the_prompt(mcp: Client, daemon: Daemon) -> None:
    r = httpx.post(
        f"{daemon.url}/v1/memory/blocks",
        params={"repo_root": ROOT},
        json={"name": "ports", "content": "Postgres is on 5433.", "description": "db ports"},
    )
    scope = r.json()["scope"]
    sid = httpx.post(f"{daemon.url}/v1/sessions", json={"repo_root": ROOT}).json()["id"]
    httpx.post(f"{daemon.url}/v1/sessions/{sid}/events", json=user("hello"))
    templates = {t.uri_template for t in (await mcp.list_resource_templates()).resource_templates}
    assert templates == {
        "aster://memory/context{?repo_root}",
        "aster://memory/{scope}/{name}",
        "aster://sessions/{session_id}",
    }
    context = (await mcp.read_resource(f"aster://memory/context?repo_root={ROOT}")).contents[0]
    assert "- ports: db ports" in context.text
    block = (await mcp.read_resource(f"aster://memory/{scope}/ports")).contents[0]
    assert "Postgres is on 5433." in block.text and "name: ports" in block.text
    transcript = (await mcp.read_resource(f"aster://sessions/{sid}")).contents[0]
    lines = [json.loads(line) for line in transcript.text.splitlines()]
    assert lines[0]["type"] == "session" and lines[1]["content"] == "hello"
    taken = [user("my password is hunter2, oops"), {"type": "retraction", "target_seq": 2}]
    assert httpx.post(f"{daemon.url}/v1/sessions/{sid}/events", json=taken).status_code == 201
    httpx.post(f"{daemon.url}/v1/sessions/{sid}/events", json=user("goodbye"))
    transcript = (await mcp.read_resource(f"aster://sessions/{sid}")).contents[0]
    lines = [json.loads(line) for line in transcript.text.splitlines()]  # as every view
    assert [line.get("content") for line in lines[1:]] == ["hello", "goodbye"]
    assert "hunter2" not in transcript.text and lines[-1]["seq"] == 4
    prompt = await mcp.get_prompt("memory_context", {"repo_root": ROOT})
    assert "- ports: db ports" in prompt.messages[0].content.text
    with pytest.raises(MCPError):
        await mcp.read_resource("aster://memory/global/no-such-block")


async def test_a_remember_by_another_client_is_announced(daemon: Daemon) -> None:
    uri = f"aster://memory/context?repo_root={ROOT}"
    async with Client(f"{daemon.url}/mcp") as listener:  # the current protocol
        await listener.read_resource(uri)
        async with listener.listen(resource_subscriptions=[uri]) as subscription:
            async with Client(f"{daemon.url}/mcp", mode="legacy") as other:
                await other.call_tool(
                    "remember",
                    {"note": "Deploys freeze on Fridays.", "title": "Freeze", "repo_root": ROOT},
                )
            with anyio.fail_after(10):
                async for event in subscription:
                    assert event.uri == uri
                    break
            # and one made over the REST API
            httpx.post(
                f"{daemon.url}/v1/memory/blocks",
                params={"repo_root": ROOT},
                json={"name": "ci", "content": "CI runs on push."},
            )
            with anyio.fail_after(10):
                async for event in subscription:
                    assert event.uri == uri
                    break
        context = (await listener.read_resource(uri)).contents[0].text
        assert "- freeze:" in context and "- ci:" in context


async def test_bad_arguments_are_mcp_errors_not_crashes(mcp: Client, daemon: Daemon) -> None:
    missing = await mcp.call_tool("recall", {"nam": 3})
    assert missing.is_error and "name" in missing.content[0].text
    wrong = await mcp.call_tool("get_session", {"session_id": "../../etc/passwd"})
    assert wrong.is_error and "session" in wrong.content[0].text
    big = await mcp.call_tool("list_sessions", {"limit": 100_000})
    assert big.is_error and "limit" in big.content[0].text
    secret = await mcp.call_tool(
        "remember", {"note": "key AKIA" + "IOSFODNN7EXAMPLQ", "title": "k"}
    )
    assert secret.is_error and "secret" in secret.content[0].text.lower()
    unknown = await mcp.call_tool("no_such_tool", {})
    assert unknown.is_error and "no_such_tool" in unknown.content[0].text
    assert httpx.get(f"{daemon.url}/healthz").status_code == 200  # still serving
    assert "secret" not in httpx.get(f"{daemon.url}/v1/memory/context").json()["content"]


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def test_the_daemons_host_origin_and_token_rules_apply(daemon: Daemon, tmp_path: Path) -> None:
    foreign = httpx.post(
        f"{daemon.url}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Host": "evil.example"}
    )
    assert foreign.status_code == 403 and foreign.json()["code"] == "host_not_allowed"
    origin = httpx.post(
        f"{daemon.url}/mcp",
        json=INITIALIZE,
        headers={**MCP_HEADERS, "Origin": "http://evil.example"},
    )
    assert origin.status_code == 403
    fine = httpx.post(f"{daemon.url}/mcp", json=INITIALIZE, headers=MCP_HEADERS)
    assert fine.status_code == 200

    secured = Daemon(tmp_path / "secured", env={"ASTER_AUTH": "token"}).start()
    try:
        token = (tmp_path / "secured" / "token").read_text().strip()
        refused = httpx.post(f"{secured.url}/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        assert refused.status_code == 401
        admitted = httpx.post(
            f"{secured.url}/mcp",
            json=INITIALIZE,
            headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"},
        )
        assert admitted.status_code == 200 and "aster-persist" in admitted.text
    finally:
        secured.kill()


def test_start_up_does_not_wait_for_the_mcp_sdk() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, aster_persist.cli, aster_persist.app; print(*sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "aster_persist.mcp.server" not in loaded
    assert not [name for name in loaded if name == "mcp" or name.startswith("mcp.")]


def test_an_mcp_server_that_cannot_load_answers_503(
    home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "aster_persist.mcp.server", None)  # import fails
    with make_client(home) as client:
        answer = client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        assert answer.status_code == 503
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["code"] == "mcp_unavailable"
        deadline = time.monotonic() + 20  # the store itself is fine, once caught up
        while client.get("/readyz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert client.get("/readyz").status_code == 200
    assert "the MCP server did not load" in caplog.text


def test_the_mcp_server_loads_on_its_first_request(home: Path) -> None:
    with make_client(home) as client:
        lazy = next(
            r.endpoint for r in client.app.router.routes if getattr(r, "path", "") == "/mcp"
        )  # type: ignore[attr-defined]
        deadline = time.monotonic() + 20
        while client.get("/readyz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert client.get("/v1/sessions").status_code == 200
        assert lazy.app is None  # nothing has asked for it yet
        answer = client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        assert answer.status_code == 200 and "aster-persist" in answer.text
        assert lazy.app is not None


def test_mcp_before_the_stores_are_open_answers_503_at_once(home: Path) -> None:
    from starlette.testclient import TestClient

    from aster_persist.app import create_app
    from aster_persist.settings import Settings

    client = TestClient(create_app(Settings(home=home)), base_url="http://127.0.0.1:4627")
    answer = client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)  # no lifespan ran
    assert answer.status_code == 503 and answer.json()["code"] == "mcp_unavailable"
