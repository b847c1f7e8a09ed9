"""The one definition of the memory tools, as the wire format names them."""

from __future__ import annotations

from typing import get_args

from aster_persist.schemas.tools import MEMORY_TOOLS, ToolName


def test_the_tool_names_the_api_takes_are_the_tools_own() -> None:
    assert get_args(ToolName) == tuple(tool.name for tool in MEMORY_TOOLS)
