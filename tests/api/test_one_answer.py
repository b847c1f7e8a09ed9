"""One condition, one answer: a bad session id, repo_root, block name, cursor or
If-Match, or a session or block that is not there, gets the same status and the same
code on every operation that takes one. The operations are read from the OpenAPI
document, so a new route is held to it too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ..conftest import new_session
from .test_errors import assert_problem
from .test_openapi import openapi_text

DOC = json.loads(openapi_text())
NO_SESSION = "01J0000000000000000000ABCD"
NO_BLOCK = "no-such-block"
STREAMS = ("events-stream", "sessions-events-stream")


def operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in DOC["paths"].items():
        for method, op in methods.items():
            yield path, method, op


def example_body(op: dict[str, Any]) -> dict[str, Any]:
    """A body the operation takes (its example, else an empty object), so that the one
    bad value sent is the only thing wrong with the request."""
    content = op.get("requestBody", {}).get("content", {})
    media = content.get("application/json")
    if media is None:
        return {}
    if "examples" in media:
        return {"json": next(iter(media["examples"].values()))["value"]}
    if "example" in media:
        return {"json": media["example"]}
    ref = media.get("schema", {}).get("$ref", "").rpartition("/")[2]
    examples = DOC["components"]["schemas"].get(ref, {}).get("examples")
    return {"json": examples[0] if examples else {}}


def answer(response: Any) -> tuple[int, str]:
    """The status and the problem's code (every refusal is a problem: see test_errors)."""
    if response.status_code < 400:
        return response.status_code, ""
    assert_problem(response, response.status_code)
    return response.status_code, str(response.json()["code"])


def send(
    client: TestClient,
    path: str,
    method: str,
    op: dict[str, Any],
    *,
    path_values: dict[str, str],
    params: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> Any:
    url = path
    for name in [p["name"] for p in op.get("parameters", []) if p["in"] == "path"]:
        url = url.replace("{" + name + "}", path_values[name])
    required = {
        p["name"]: "/srv/one"
        for p in op.get("parameters", [])
        if p["in"] == "query" and p.get("required") and p["name"] == "repo_root"
    }
    query = {"q": "x"} if op["operationId"] in ("memory-search",) else {}
    return client.request(
        method.upper(),
        url,
        params={**required, **query, **(params or {})},
        headers=headers,
        **example_body(op),
    )


CONDITIONS = {
    # condition: (which parameter, where, its bad value, status, code)
    "a session id that is not a ULID": ("session_id", "not-a-ulid", 422, "invalid_name"),
    "a repo_root that is not absolute": ("repo_root", "relative/path", 422, "invalid_name"),
    "an empty repo_root": ("repo_root", "", 422, "invalid_name"),
    "a block name that is no name": ("name", "Not A Name", 422, "invalid_name"),
    "a cursor of no form": ("cursor", "?not-a-cursor?", 422, "invalid"),
    "an If-Match of no form": ("if-match", "not-an-etag", 422, "invalid"),
}


@pytest.mark.parametrize("condition", sorted(CONDITIONS))
def test_a_bad_value_gets_one_answer_wherever_it_is_taken(
    client: TestClient, condition: str
) -> None:
    name, bad, status, code = CONDITIONS[condition]
    sid = new_session(client)
    asked: list[str] = []
    answers: list[tuple[str, tuple[int, str]]] = []
    for path, method, op in operations():
        where = {p["name"].lower(): p["in"] for p in op.get("parameters", [])}
        if name not in where or (op["operationId"] in STREAMS and where[name] != "path"):
            continue
        if name == "name" and where[name] != "path":
            continue  # the journal's name= filters entries by any name they carry
        values = {"session_id": sid, "name": "some-block", "entry_id": NO_SESSION}
        kind = where[name]
        r = send(
            client,
            path,
            method,
            op,
            path_values={**values, name: bad} if kind == "path" else values,
            params={name: bad} if kind == "query" else None,
            headers={name: bad} if kind == "header" else None,
        )
        asked.append(op["operationId"])
        answers.append((op["operationId"], answer(r)))
    assert len(asked) >= 3, asked
    wrong = [a for a in answers if a[1] != (status, code)]
    assert not wrong, wrong


def test_a_session_or_block_that_is_not_there_gets_one_answer(client: TestClient) -> None:
    """404 session_not_found on every operation on a session, 404 block_not_found on
    every one on a block, but the PUT that creates it."""
    sessions: list[tuple[str, tuple[int, str]]] = []
    blocks: list[tuple[str, tuple[int, str]]] = []
    for path, method, op in operations():
        if op["operationId"] in STREAMS or op["operationId"] == "sessions-restore":
            continue  # (a stream is checked in tests/live; restore reads the trash)
        values = {"session_id": NO_SESSION, "name": NO_BLOCK}
        if "{session_id}" in path:
            r = send(client, path, method, op, path_values=values)
            sessions.append((op["operationId"], answer(r)))
        elif "{name}" in path and method != "put":
            r = send(client, path, method, op, path_values=values)
            blocks.append((op["operationId"], answer(r)))
    assert len(sessions) >= 8 and len(blocks) >= 5
    wrong = [a for a in sessions if a[1] != (404, "session_not_found")]
    wrong += [a for a in blocks if a[1] != (404, "block_not_found")]
    assert not wrong, wrong
