"""openapi/openapi.json is the app's own document, byte for byte."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

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


def test_every_operation_documents_its_bodies_errors_and_streams() -> None:
    """What a generated client needs: a schema for every request and success body,
    problem bodies for errors, SSE routes as text/event-stream with their events."""
    import json

    doc = json.loads(openapi_text())
    streams = {"events-stream", "sessions-events-stream"}
    plain = {"ops-metrics"}  # Prometheus text
    for path, methods in doc["paths"].items():
        for method, op in methods.items():
            where = f"{method.upper()} {path}"
            body = op.get("requestBody")
            if body is not None:
                for media, content in body["content"].items():
                    assert content.get("schema"), f"{where}: {media} body has no schema"
            if method in ("post", "put", "patch") and op["operationId"] not in (
                "journal-revert",
                "memory-archive",
                "memory-restore",
                "sessions-restore",
            ):
                assert body is not None, f"{where} reads a body it does not document"
            ok = {code: r for code, r in op["responses"].items() if code.startswith("2")}
            assert ok, where
            for code, response in ok.items():
                if code == "204":
                    continue
                content = response.get("content", {})
                if op["operationId"] in streams:
                    assert list(content) == ["text/event-stream"], where
                    events = content["text/event-stream"]["schema"]["items"]["oneOf"]
                    assert all(e["properties"]["event"]["const"] for e in events)
                    continue
                for media, entry in content.items():
                    if op["operationId"] in plain:
                        continue
                    schema = entry.get("schema", {})
                    assert schema.get("$ref") or schema.get("anyOf") or schema.get("type"), (
                        f"{where}: {code} {media} has no schema"
                    )
            if body is not None or op.get("parameters"):  # input can be wrong: say how
                assert "422" in op["responses"], where
                problem = op["responses"]["422"]["content"]["application/problem+json"]
                assert problem["schema"]["$ref"] == "#/components/schemas/Problem", where


def test_request_bodies_carry_examples() -> None:
    import json

    doc = json.loads(openapi_text())
    schemas = doc["components"]["schemas"]
    for name in ("SessionIn", "BlockIn", "RememberIn", "RenameIn", "PruneIn", "MemoryToolCall"):
        assert schemas[name].get("examples"), name
    append = doc["paths"]["/v1/sessions/{session_id}/events"]["post"]["requestBody"]
    assert len(append["content"]["application/json"]["examples"]) == 3


def test_no_path_parameter_may_be_empty(client: TestClient) -> None:
    """An empty segment names another resource (the list, answering 405 to a DELETE), so
    the document must not let a generated client send one."""
    import json

    doc = json.loads(openapi_text())
    params = [
        (path, p["name"], p["schema"].get("minLength"))
        for path, methods in doc["paths"].items()
        for op in methods.values()
        for p in op.get("parameters", [])
        if p["in"] == "path"
    ]
    assert params and all(length == 1 for _path, _name, length in params), params
    assert client.delete("/v1/memory/blocks/").status_code == 405


def test_the_document_says_what_the_server_enforces() -> None:
    """Rules that lived only in the server are in the document: block names, journal
    entry ids, the memory tools' names, the headers and statuses of conditional and
    busy answers, the bearer token and the default server."""
    import json

    from aster_persist.schemas.names import NAME_RE, ULID_RE
    from aster_persist.schemas.tools import MEMORY_TOOLS

    doc = json.loads(openapi_text())
    paths = doc["paths"]

    def path_schema(path: str, method: str, name: str) -> dict[str, object]:
        (found,) = [p for p in paths[path][method]["parameters"] if p["name"] == name]
        return dict(found["schema"])

    assert path_schema("/v1/memory/blocks/{name}", "get", "name")["pattern"] == NAME_RE.pattern
    assert path_schema("/v1/journal/{entry_id}/revert", "post", "entry_id")["pattern"] == (
        ULID_RE.pattern
    )
    calls = doc["components"]["schemas"]["MemoryToolCall"]
    assert sorted(calls["discriminator"]["mapping"]) == sorted(t.name for t in MEMORY_TOOLS)
    search = doc["components"]["schemas"]["SearchMemoryCall"]["properties"]["arguments"]
    assert search["required"] == ["query"] and search["properties"]["k"]["maximum"] == 50
    assert "304" in paths["/v1/memory/blocks/{name}"]["get"]["responses"]
    assert "304" in paths["/v1/sessions/{session_id}"]["get"]["responses"]
    stream = paths["/v1/events"]["get"]["responses"]["503"]
    assert "Retry-After" in stream["headers"]
    append = paths["/v1/sessions/{session_id}/events"]["post"]
    assert {"Idempotency-Key", "If-Match"} <= {p["name"] for p in append["parameters"]}
    assert "Idempotent-Replayed" in append["responses"]["200"]["headers"]
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert doc["servers"][0]["url"] == "http://127.0.0.1:4627"
    tool_calls = doc["components"]["schemas"]["AssistantMessage"]["properties"]["tool_calls"]
    assert tool_calls["anyOf"][0]["items"] == {"$ref": "#/components/schemas/ToolCall"}
    assert "function" in doc["components"]["schemas"]["ToolCall"]["properties"]
    schemas = doc["components"]["schemas"]
    assert schemas["BlockPatch"]["minProperties"] == 1  # "say which keys to change"
    prune = [option["required"] for option in schemas["PruneIn"]["anyOf"]]
    assert prune == [["older_than_days"], ["keep_latest"], ["purge_trash_older_than_days"]]


def test_every_name_cursor_and_if_match_carries_the_pattern_the_server_checks() -> None:
    """The same regex checks a request and describes it: session ids and entry ids are
    ULIDs, repo_root is absolute, each cursor has its form, If-Match its two forms, on
    every operation that takes one, parameter or body field; and no parameter is null."""
    import json

    from aster_persist.api import rules
    from aster_persist.schemas import cursors
    from aster_persist.schemas.names import REPO_ROOT_RE, ULID_RE

    doc = json.loads(openapi_text())
    seen: dict[str, set[str]] = {}
    for methods in doc["paths"].values():
        for op in methods.values():
            for p in op.get("parameters", []):
                name = p["name"].lower()
                assert "anyOf" not in p["schema"], (op["operationId"], name)  # never null
                seen.setdefault(name, set()).add(p["schema"].get("pattern", ""))
    assert seen["session_id"] == seen["entry_id"] == {ULID_RE.pattern}
    assert seen["repo_root"] == {REPO_ROOT_RE.pattern}
    assert seen["cursor"] == {
        cursors.LISTING.pattern,
        cursors.RANKED.pattern,
        cursors.SEQ.pattern,
        ULID_RE.pattern,
    }
    assert seen["if-match"] == {rules.IF_MATCH_RE.pattern}  # RFC 9110: "*" or entity tags
    schemas = doc["components"]["schemas"]
    for name in ("BlockIn", "NoteIn", "RememberIn", "ProcedureIn", "RecallCall"):
        session = schemas[name]["properties"]["session_id"]["anyOf"][0]
        assert session["pattern"] == ULID_RE.pattern, name
    assert "repo_root" not in schemas["BlockIn"]["properties"]  # the query names the project
    assert schemas["SessionIn"]["properties"]["id"]["anyOf"][0]["pattern"] == ULID_RE.pattern
    relation = schemas["BlockIn"]["properties"]["supersedes"]["anyOf"][0]["items"]
    assert relation["pattern"] == rules.BLOCK_NAME
    assert schemas["UserMessage"]["properties"]["ts"]["anyOf"][0]["format"] == "date-time"
    assert schemas["JsonValue"]["anyOf"][3]["maximum"] == 2**64 - 1


def test_every_literal_path_beside_a_session_is_kept_out_of_the_session_routes(
    client: TestClient,
) -> None:
    """/v1/sessions/<word> routes are siblings of /v1/sessions/{session_id}: each is named
    in SESSION_SIBLINGS, so a method it does not serve is a 405, never a session's 422."""
    import json

    from aster_persist.api.rules import SESSION_SIBLINGS

    doc = json.loads(openapi_text())
    words = {
        path.split("/")[3]
        for path in doc["paths"]
        if path.startswith("/v1/sessions/") and not path.split("/")[3].startswith("{")
    }
    assert words == set(SESSION_SIBLINGS)
    for word in sorted(words):
        served = {m.upper() for m in doc["paths"].get(f"/v1/sessions/{word}", {})}
        for method in ("GET", "PATCH", "DELETE"):
            if method not in served:
                r = client.request(method, f"/v1/sessions/{word}")
                assert r.status_code == 405, (method, word, r.status_code)
