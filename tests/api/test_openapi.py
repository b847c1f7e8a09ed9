"""openapi/openapi.json is the app's own document, byte for byte."""

from __future__ import annotations

from pathlib import Path

from aster_persist.cli import openapi_text

CHECKED_IN = Path(__file__).parents[2] / "openapi" / "openapi.json"


def test_openapi_file_matches_the_app() -> None:
    assert CHECKED_IN.read_text() == openapi_text(), "run `make openapi` and commit the result"


def test_every_route_has_a_stable_operation_id() -> None:
    import json

    doc = json.loads(openapi_text())
    ids = [op["operationId"] for path in doc["paths"].values() for op in path.values()]
    assert len(ids) == len(set(ids))
    assert "sessions-append" in ids and "sessions-list" in ids
    append = doc["paths"]["/v1/sessions/{session_id}/events"]["post"]
    assert (
        append["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        == "#/components/schemas/AppendBody"
    )
    assert {"UserMessage", "AssistantMessage", "ToolMessage", "TitleEvent"} <= doc["components"][
        "schemas"
    ].keys()
