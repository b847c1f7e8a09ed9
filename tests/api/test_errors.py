"""Every source of errors answers with the same problem+json shape, and bad input changes no file."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from aster_persist.api.plumbing import running

from ..conftest import REPO, make_client, new_session, snapshot, user

PROBLEM_KEYS = {"type", "title", "status", "detail", "code"}


def assert_problem(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body.keys() >= PROBLEM_KEYS
    assert body["status"] == status and body["type"].endswith(body["code"])
    assert "Traceback" not in response.text
    if code is not None:
        assert body["code"] == code
    return body


def test_unknown_route_and_wrong_method(client: TestClient) -> None:
    assert_problem(client.get("/v1/nothing"), 404, "not_found")
    assert_problem(client.put("/v1/sessions"), 405, "method_not_allowed")


def test_bad_body_and_domain_error(client: TestClient) -> None:
    body = assert_problem(client.post("/v1/sessions", json={"nope": 1}), 422, "validation_failed")
    assert body["errors"][0]["loc"] == "body.repo_root"
    assert_problem(client.get("/v1/sessions/01J0000000000000000000ABCD"), 404, "session_not_found")


def test_crash_is_a_problem_without_traceback(home: Path) -> None:
    with make_client(home) as client:

        def boom(*args: object, **kwargs: object) -> None:
            raise RuntimeError("secret internals")

        running(client.app).sessions.listing = boom  # type: ignore[method-assign]
        r = client.get("/v1/sessions")
        body = assert_problem(r, 500, "internal_error")
        assert "secret internals" not in r.text and body["detail"]


BAD_APPENDS = [
    ({"type": "nonsense", "content": "x"}, "events[0].type", "unknown event type"),
    ({"type": "message", "role": "tool", "content": "x"}, "events[0].tool_call_id", "tool_call_id"),
    (
        {
            "type": "session",
            "id": "x",
            "v": 1,
            "created_at": "2026-01-01T00:00:00Z",
            "repo_root": "/r",
        },
        "events[0].type",
        "session header",
    ),
    ({"type": "message", "role": "wizard", "content": "x"}, "events[0].role", "expected one of"),
    ({"type": "message", "content": "x"}, "events[0].role", "role is required"),
    (
        {"type": "message", "role": "user", "content": "x", "tool_calls": [{"id": "c"}]},
        "events[0].tool_calls",
        "Input should be None",
    ),
    (
        {
            "type": "message",
            "role": "assistant",
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f"}}],
        },
        "events[0].tool_calls[0].function.arguments",
        "Field required",
    ),
    ({"type": "message", "role": "user"}, "events[0].content", "Field required"),
    ({"type": "summary", "content": "s"}, "events[0].through_seq", "Field required"),
    ({"type": "eviction"}, "events[0].tool_call_id", "eviction needs"),
    ({"type": "title", "title": ""}, "events[0].title", "at least 1"),
    (
        {"type": "message", "role": "user", "content": "x", "seq": 9},
        "events[0].seq",
        "assigned by the server",
    ),
    (
        {"type": "message", "role": "user", "content": "x", "ts": "yesterday"},
        "events[0].ts",
        "should match pattern",
    ),
    (
        {"type": "message", "role": "user", "content": "x", "ts": 1700000000},
        "events[0].ts",
        "valid string",
    ),
    ({"role": "user", "content": "x"}, "events[0].type", "type is required"),
]


@pytest.mark.parametrize(("event", "loc", "words"), BAD_APPENDS)
def test_bad_events_named_and_nothing_written(
    client: TestClient, home: Path, event: dict, loc: str, words: str
) -> None:
    sid = new_session(client)
    client.post(f"/v1/sessions/{sid}/events", json=user("before"))
    before = snapshot(home)
    body = assert_problem(
        client.post(f"/v1/sessions/{sid}/events", json=[user("ok"), event] if False else event), 422
    )
    assert body["errors"][0]["loc"] == loc
    assert words in body["detail"]
    assert snapshot(home) == before


@pytest.mark.parametrize(
    ("content", "headers", "status"),
    [
        (b"{not json", {"content-type": "application/json"}, 422),
        (b"[]", {"content-type": "application/json"}, 422),
        (b"42", {"content-type": "application/json"}, 422),
        (b'{"events": "x"}', {"content-type": "application/json"}, 422),
        (b'{"type":"message","role":"user","content":"x"}', {"content-type": "text/plain"}, 422),
        (
            b'{"type":"message","role":"user","content":"x"}',
            {"content-type": "application/json", "idempotency-key": "k" * 201},
            422,
        ),
    ],
)
def test_malformed_bodies(
    client: TestClient, home: Path, content: bytes, headers: dict, status: int
) -> None:
    sid = new_session(client)
    before = snapshot(home)
    assert_problem(
        client.post(f"/v1/sessions/{sid}/events", content=content, headers=headers), status
    )
    assert snapshot(home) == before


@pytest.mark.parametrize(
    "bad_id",
    ["..", "../x", "01J0000000000000000000abcd", "x" * 26, "01J000000000000000000%2F..", "%00"],
)
def test_bad_session_ids(client: TestClient, home: Path, bad_id: str) -> None:
    new_session(client)
    before = snapshot(home)
    for method, suffix in (
        ("GET", ""),
        ("POST", "/events"),
        ("DELETE", ""),
        ("GET", "/export"),
        ("POST", "/restore"),
    ):
        r = client.request(method, f"/v1/sessions/{bad_id}{suffix}", json=user("x"))
        # ".." makes the client ask for /v1/events, a stream only GET serves: 405
        allowed = (404, 405, 422) if bad_id == ".." else (404, 422)
        assert r.status_code in allowed, (method, suffix, r.status_code)
        assert r.headers["content-type"] == "application/problem+json"
    assert snapshot(home) == before


@pytest.mark.parametrize("root", ["relative/path", "", "/a\x00b", "../etc"])
def test_bad_repo_roots(client: TestClient, home: Path, root: str) -> None:
    before = snapshot(home)
    assert_problem(client.post("/v1/sessions", json={"repo_root": root}), 422, "invalid_name")
    assert snapshot(home) == before


def test_oversized_event_is_413(home: Path) -> None:
    with make_client(home, max_event_bytes=1024) as client:
        sid = new_session(client)
        before = snapshot(home)
        body = assert_problem(client.post(f"/v1/sessions/{sid}/events", json=user("x" * 2000)), 413)
        assert "limit is 1024" in body["detail"]
        assert snapshot(home) == before


def test_repo_root_traversal_stays_inside_home(client: TestClient, home: Path) -> None:
    sid = new_session(client, "/srv/../../../../etc")
    files = list((home / "sessions").rglob("*.jsonl"))
    assert len(files) == 1 and files[0].name == f"{sid}.jsonl"
    assert files[0].resolve().is_relative_to(home.resolve())
    assert client.get(f"/v1/sessions/{sid}").json()["repo_root"] == "/etc"
    assert REPO


def test_regression_odd_numbers_and_text_are_422_not_500(client: TestClient, home: Path) -> None:
    """Superscript digits, 5,000-digit seqs, huge day counts and lone surrogates gave 500s."""
    sid = new_session(client)
    before = snapshot(home)
    assert_problem(client.get(f"/v1/sessions/{sid}/events", params={"cursor": "\u00b2"}), 422)
    assert_problem(client.get(f"/v1/sessions/{sid}/events", params={"cursor": "9" * 5000}), 422)
    big = {"If-Match": '"' + "9" * 5000 + '"'}  # a well-formed tag of no seq: not this version
    assert_problem(client.post(f"/v1/sessions/{sid}/events", json=user("x"), headers=big), 412)
    assert_problem(client.post("/v1/sessions/prune", json={"older_than_days": 1e7}), 422)
    surrogate = b'{"repo_root": "/srv/x", "model": "\\ud800"}'
    assert_problem(
        client.post(
            "/v1/sessions", content=surrogate, headers={"content-type": "application/json"}
        ),
        422,
    )
    assert snapshot(home) == before


def test_regression_a_405_lists_every_method_the_path_serves(client) -> None:  # type: ignore[no-untyped-def]
    r = client.request("OPTIONS", "/v1/memory/blocks")
    assert r.status_code == 405
    assert r.headers["allow"] == "GET, POST"


def test_regression_booleans_and_numbers_are_not_coerced(client) -> None:  # type: ignore[no-untyped-def]
    r = client.post("/v1/memory/blocks", json={"content": "x", "name": "b", "replace": 0})
    assert r.status_code == 422 and "replace" in r.json()["detail"]
    r = client.post("/v1/memory/prune", json={"max_importance": False})
    assert r.status_code == 422


def test_regression_an_empty_if_match_or_a_missing_body_is_refused(client) -> None:  # type: ignore[no-untyped-def]
    r = client.put(
        "/v1/memory/core",
        content=b"# x\n",
        headers={"If-Match": "", "Content-Type": "text/markdown"},
    )
    assert r.status_code == 422
    r = client.put("/v1/memory/core")
    assert r.status_code == 422 and "send the new content" in r.json()["detail"]


def test_content_parts_are_openai_content_parts(client: TestClient, home: Path) -> None:
    sid = new_session(client)
    before = snapshot(home)
    for parts, loc, says in (
        ([{"foo": 1}], "events[0].content[0].type", "type is required"),
        ([{"type": "text"}], "events[0].content[0].text", "Field required"),
        ([{"type": "image", "source": {}}], "events[0].content[0].type", "content part type"),
        ([{"type": "image_url", "image_url": {}}], "events[0].content[0].image_url.url", ""),
    ):
        r = client.post(f"/v1/sessions/{sid}/events", json=user(parts))  # type: ignore[arg-type]
        assert r.status_code == 422, parts
        assert [e["loc"] for e in r.json()["errors"]] == [loc]
        assert says in r.json()["errors"][0]["msg"]
    assert snapshot(home) == before
    parts = [
        {"type": "text", "text": "what is in this picture?", "cache_control": {"x": 1}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]
    r = client.post(f"/v1/sessions/{sid}/events", json=user(parts))  # type: ignore[arg-type]
    assert r.status_code == 201
    assert client.get(f"/v1/sessions/{sid}/events").json()["events"][-1]["content"] == parts


def test_each_role_takes_the_content_parts_the_api_takes_from_it(
    client: TestClient, home: Path
) -> None:
    sid = new_session(client)
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    before = snapshot(home)
    for event in (
        {"type": "message", "role": "assistant", "content": [image]},
        {"type": "message", "role": "system", "content": [image]},
        {"type": "message", "role": "tool", "tool_call_id": "c1", "content": [image]},
    ):
        r = client.post(f"/v1/sessions/{sid}/events", json=event)
        assert r.status_code == 422, event
        assert r.json()["errors"][0]["loc"].startswith("events[0].content[0]")
    assert snapshot(home) == before
    refusal = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "no"}],
    }
    assert client.post(f"/v1/sessions/{sid}/events", json=refusal).status_code == 201


def test_the_error_tree_drawn_in_errors_py_names_every_error() -> None:
    """Every class a refusal can be raised as is in the tree the docstring draws."""
    import aster_persist.api.body
    import aster_persist.errors
    import aster_persist.importers.reader

    def below(cls: type) -> list[type]:
        return [c for sub in cls.__subclasses__() for c in (sub, *below(sub))]

    doc = aster_persist.errors.__doc__ or ""
    classes = [aster_persist.errors.AsterError, *below(aster_persist.errors.AsterError)]
    missing = [c.__name__ for c in classes if c.__name__ not in doc]
    assert len(classes) > 20 and missing == []
    assert "HomeUnavailable" in doc
