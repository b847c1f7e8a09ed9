"""What the OpenAPI document shows of the memory routes beyond their types: the markdown
bodies core memory and blocks take, and the reply of a merged duplicate."""

from __future__ import annotations

from typing import Any

from ..schemas.memory import SavedBlock

MARKDOWN = "text/markdown"

MERGED = {"model": SavedBlock, "description": "The same content was already kept: merged"}


def _markdown_body(
    json_schema: dict[str, Any], example: str, json_example: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The body of a route that reads markdown (or JSON) itself."""
    as_json: dict[str, Any] = {"schema": json_schema}
    if json_example is not None:
        as_json["example"] = json_example
    return {
        "requestBody": {
            "required": True,
            "content": {
                MARKDOWN: {
                    "schema": {"type": "string", "format": "binary"},
                    "example": example,
                },
                "application/json": as_json,
            },
        }
    }


CORE_BODY = _markdown_body(
    {
        "type": "object",
        "properties": {
            "content": {"type": "string"},
        },
        "required": ["content"],
        "additionalProperties": False,
    },
    "# Project notes\n- Run the tests with `make test`.\n",
    {"content": "# Project notes\n- Run the tests with `make test`.\n"},
)


BLOCK_BODY = _markdown_body(
    {"$ref": "#/components/schemas/BlockFields"},
    "---\ndescription: how to run the tests\ntags: [ci]\n---\nRun `make test`.\n",
)
