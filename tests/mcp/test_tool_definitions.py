"""Each agent tool is defined once: what the MCP server lists of a memory tool (its name,
description, each parameter's description and bounds, what is required, that no other
key is taken) is what ``GET /v1/memory/tools`` says of it, the MCP server checks
arguments against it before a tool runs, and every MCP tool and parameter is described."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client

from aster_persist.mcp.server import McpFront

pytestmark = pytest.mark.anyio

MEMORY_TOOLS = ["remember", "recall", "forget", "search_memory"]
CONTEXT = {"repo_root", "session_id"}  # what only an MCP call says about where it comes from
BOUNDS = ("minimum", "maximum")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def mcp() -> AsyncIterator[Client]:
    async with Client(McpFront().server) as client:  # in process, through a client session
        yield client


async def listed(mcp: Client) -> dict[str, dict[str, Any]]:
    """Each MCP tool's name, description and input schema, by name."""
    return {
        t.name: {"description": t.description, "parameters": t.input_schema}
        for t in (await mcp.list_tools()).tools
    }


def json_type(schema: dict[str, Any]) -> str:
    """A parameter's type; an optional one is also allowed null."""
    if "anyOf" in schema:
        (kind,) = [s["type"] for s in schema["anyOf"] if s["type"] != "null"]
        return str(kind)
    return str(schema["type"])


async def test_the_mcp_memory_tools_are_the_rest_ones(mcp: Client, client: TestClient) -> None:
    rest = {
        t["function"]["name"]: t["function"] for t in client.get("/v1/memory/tools").json()["tools"]
    }
    assert list(rest) == MEMORY_TOOLS
    tools = await listed(mcp)
    for name, function in rest.items():
        mcp_tool, want = tools[name], function["parameters"]
        assert mcp_tool["description"] == function["description"], name
        got = mcp_tool["parameters"]
        assert got["type"] == "object" and got.get("additionalProperties") is False, name
        assert want["additionalProperties"] is False
        assert sorted(got.get("required", [])) == sorted(want["required"]), name
        assert set(got["properties"]) - set(want["properties"]) <= CONTEXT, name
        for param, schema in want["properties"].items():
            offered = got["properties"][param]
            assert offered["description"] == schema["description"], (name, param)
            assert json_type(offered) == schema["type"], (name, param)
            for bound in BOUNDS:
                assert offered.get(bound) == schema.get(bound), (name, param, bound)
    k = tools["search_memory"]["parameters"]["properties"]["k"]
    assert (k["minimum"], k["maximum"], k["default"]) == (1, 50, 5)


async def test_every_mcp_tool_and_parameter_is_described(mcp: Client) -> None:
    tools = await listed(mcp)
    assert set(tools) >= {*MEMORY_TOOLS, "search_sessions", "get_session", "list_sessions"}
    for name, tool in tools.items():
        assert len(tool["description"] or "") > 20, name
        assert tool["parameters"].get("additionalProperties") is False, name
        for param, schema in tool["parameters"]["properties"].items():
            assert len(schema.get("description", "")) > 10, (name, param)
    # a context parameter means the same on every memory tool
    for param in CONTEXT:
        told = {
            tools[name]["parameters"]["properties"][param]["description"]
            for name in MEMORY_TOOLS
            if param in tools[name]["parameters"]["properties"]
        }
        assert len(told) == 1, (param, told)
    limit = tools["get_session"]["parameters"]["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"]) == (1, 200)


@pytest.mark.parametrize(
    ("name", "arguments", "named"),
    [
        ("remember", {"note": "Deploys freeze on Fridays.", "titel": "Freeze"}, "titel"),
        ("search_memory", {"query": "deploys", "k": 0}, "k"),
        ("search_memory", {"query": "deploys", "k": 51}, "k"),
        ("recall", {}, "name"),
        ("get_session", {"session_id": "s", "after": -1}, "after"),
        ("list_sessions", {"limit": 201}, "limit"),
    ],
)
async def test_arguments_outside_the_definition_are_refused_before_a_tool_runs(
    mcp: Client, name: str, arguments: dict[str, Any], named: str
) -> None:
    # the stores are not open here: a call that got past the check would fail otherwise
    result = await mcp.call_tool(name, arguments)
    said = result.content[0].text
    assert result.is_error and said.startswith(f"{name}: `{named}` "), said
    # in words that say what to send: no validation dump, no links
    assert "validation error" not in said and "http" not in said and "\n" not in said
    assert "It takes: " in said


async def test_an_argument_error_says_what_to_send(mcp: Client) -> None:
    said = (await mcp.call_tool("remember", {"note": "x", "titel": "Freeze"})).content[0].text
    assert (
        said == "remember: `titel` is not one of its arguments. "
        "It takes: note (required), title, repo_root, session_id."
    )
    said = (await mcp.call_tool("search_memory", {"query": "deploys", "k": 0})).content[0].text
    assert said.startswith(
        "search_memory: `k` should be greater than or equal to 1, not 0. It takes: query (required)"
    )
    said = (await mcp.call_tool("recall", {})).content[0].text
    assert said.startswith("recall: `name` is required. It takes: name (required)")


async def test_remember_is_not_announced_as_idempotent(mcp: Client) -> None:
    """The same note again raises the importance of the block it merges into."""
    tools = {t.name: t for t in (await mcp.list_tools()).tools}
    assert tools["remember"].annotations.idempotent_hint is False
    assert tools["recall"].annotations.idempotent_hint is True
