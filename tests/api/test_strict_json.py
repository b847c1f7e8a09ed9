"""Bodies are strict: a repeated key, a body nested too deeply or a field a closed body does
not have is a 422 problem naming it, on every route, and leaves every file as it was;
events still keep the fields the service does not know, verbatim."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from aster_persist.api import body
from aster_persist.api.body import MAX_DEPTH

from ..conftest import REPO, new_session, snapshot, user
from .test_errors import assert_problem

JSON = {"content-type": "application/json"}
IMPORT_ID = "01J0000000000000000000ABCE"
HEADER = {
    "type": "session",
    "seq": 0,
    "id": IMPORT_ID,
    "v": 1,
    "created_at": "2026-01-01T00:00:00.000Z",
    "repo_root": "/srv/imported",
}


def nested(levels: int) -> bytes:
    """JSON arrays nested ``levels`` deep."""
    return b"[" * levels + b"]" * levels


def deep_event(levels: int) -> bytes:
    """A user event (one level) holding an unknown field nested ``levels - 1`` deeper."""
    return b'{"type":"message","role":"user","content":"x","x_deep":' + nested(levels - 1) + b"}"


def refused(response: Any, kind: str, loc: str | None = None) -> dict[str, Any]:
    problem = assert_problem(response, 422, "validation_failed")
    error = problem["errors"][0]
    assert error["type"] == kind, problem
    if loc is not None:
        assert error["loc"] == loc, problem
    assert problem["detail"].startswith(error["loc"])
    return problem


def post(client: TestClient, url: str, raw: bytes, **kwargs: Any) -> Any:
    return client.post(url, content=raw, headers=JSON, **kwargs)


# -- the premise and the check itself ------------------------------------------------------


def test_orjson_writes_254_levels_and_refuses_one_more() -> None:
    """The depth check serialises a body inside 254 - MAX_DEPTH arrays: it rests on this."""
    value: Any = 1
    for _ in range(254):
        value = [value]
    orjson.dumps(value)
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps([value])
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps({"a": value})


@pytest.mark.parametrize("spaced", [False, True], ids=["compact", "spaced"])
@pytest.mark.parametrize("kind", ["arrays", "objects"])
def test_the_check_takes_max_depth_and_refuses_one_level_more(spaced: bool, kind: str) -> None:
    def value(levels: int) -> Any:
        out: Any = 0
        for _ in range(levels):
            out = [out] if kind == "arrays" else {"k": out}
        return out

    def raw(levels: int) -> bytes:
        text = orjson.dumps(value(levels))
        return text.replace(b",", b", ").replace(b":", b": ") if spaced else text

    at_limit = raw(MAX_DEPTH)
    body.check(at_limit, orjson.loads(at_limit))
    assert body.loads(at_limit) == value(MAX_DEPTH)
    past = raw(MAX_DEPTH + 1)
    with pytest.raises(body.ValidationFailed, match="nested more than 128 levels deep"):
        body.check(past, orjson.loads(past))
    with pytest.raises(body.ValidationFailed, match="nested more than 128 levels deep"):
        body.loads(past)


def test_a_value_orjson_cannot_write_is_still_measured() -> None:
    big = b"18446744073709551616"  # 2**64: the standard library reads it, orjson cannot
    assert body.loads(nested(MAX_DEPTH)[:MAX_DEPTH] + big + nested(MAX_DEPTH)[MAX_DEPTH:])
    with pytest.raises(body.ValidationFailed, match="levels deep"):
        body.loads(nested(MAX_DEPTH + 1)[: MAX_DEPTH + 1] + big + b"]" * (MAX_DEPTH + 1))


@pytest.mark.parametrize(
    ("raw", "loc"),
    [
        (b'{"a":1,"a":2}', "body.a"),
        (b'{"a": 1, "a": 2}', "body.a"),
        (b'{"a":1,"\\u0061":2}', "body.a"),
        (b'[{"x":[{"k":1}]},{"x":[{"k":1},{"k":1,"k":1}]}]', "body.1.x.1.k"),
    ],
)
def test_the_check_finds_a_repeated_key_however_it_is_spelt(raw: bytes, loc: str) -> None:
    for check in (lambda: body.check(raw, orjson.loads(raw)), lambda: body.loads(raw)):
        with pytest.raises(body.ValidationFailed) as caught:
            check()
        assert caught.value.errors == [
            {
                "loc": loc,
                "msg": f"the key {loc.rsplit('.', 1)[1]!r} appears more than once in one object",
                "type": "duplicate_key",
            }
        ]


# -- nesting -----------------------------------------------------------------------------


def append_forms(levels: int) -> dict[str, bytes]:
    """One append body of each form, ``levels`` deep in all."""
    event = deep_event(levels)
    return {
        "event": event,
        "batch": b"[" + deep_event(levels - 1) + b"]",
        "wrapped": b'{"events":[' + deep_event(levels - 2) + b"]}",
        "spaced batch": b"[ " + deep_event(levels - 1).replace(b",", b", ") + b" ]",
    }


@pytest.mark.parametrize("form", ["event", "batch", "wrapped", "spaced batch"])
def test_appends_nested_too_deeply_are_422_and_write_nothing(
    client: TestClient, home: Path, form: str
) -> None:
    sid = new_session(client)
    before = snapshot(home)
    for levels in (MAX_DEPTH + 1, 254, 300, 5000):
        r = post(client, f"/v1/sessions/{sid}/events", append_forms(levels)[form])
        problem = refused(r, "too_deep")
        assert f"nested more than {MAX_DEPTH} levels deep" in problem["detail"]
    assert snapshot(home) == before


@pytest.mark.parametrize("form", ["event", "batch", "wrapped", "spaced batch"])
def test_an_append_at_the_limit_is_stored_and_read_back(client: TestClient, form: str) -> None:
    sid = new_session(client)
    r = post(client, f"/v1/sessions/{sid}/events", append_forms(MAX_DEPTH)[form])
    assert r.status_code == 201, r.text
    page = client.get(f"/v1/sessions/{sid}/events")
    assert page.status_code == 200
    deep = orjson.loads(page.content)["events"][0]["x_deep"]
    expected = MAX_DEPTH - {"event": 1, "batch": 2, "wrapped": 3, "spaced batch": 2}[form]
    assert orjson.dumps(deep) == nested(expected)
    assert client.get(f"/v1/sessions/{sid}/export").status_code == 200


def test_imports_nested_too_deeply_are_422_and_write_nothing(
    client: TestClient, home: Path
) -> None:
    client.get("/v1/sessions").raise_for_status()
    before = snapshot(home)
    native = orjson.dumps(HEADER) + b"\n" + deep_event(300) + b"\n"
    r = post(client, "/v1/sessions/import", native)
    assert refused(r, "too_deep", "line 2")["detail"].endswith(f"{MAX_DEPTH} levels deep")
    chat = b'{"messages":[{"role":"user","content":"hi","x":' + nested(200) + b"}]}"
    refused(post(client, "/v1/sessions/import", chat), "too_deep", "line 1")
    assert snapshot(home) == before


def test_memory_bodies_nested_too_deeply_are_422_and_write_nothing(
    client: TestClient, home: Path
) -> None:
    client.get("/v1/sessions").raise_for_status()
    before = snapshot(home)
    deep = nested(300)
    bodies = {
        ("POST", "/v1/memory/blocks"): b'{"name":"b","content":"x","reason":' + deep + b"}",
        ("PUT", "/v1/memory/blocks/b"): b'{"content":"x","reason":' + deep + b"}",
        ("POST", "/v1/memory/remember"): b'{"note":"x","tags":' + deep + b"}",
        ("POST", "/v1/memory/tools/call"): b'{"name":"remember","arguments":' + deep + b"}",
        ("PUT", "/v1/memory/core"): b'{"content":' + deep + b"}",
    }
    for (method, url), raw in bodies.items():
        r = client.request(method, url, content=raw, headers=JSON)
        refused(r, "too_deep", "body")
    assert snapshot(home) == before


# -- repeated keys -------------------------------------------------------------------------


REPEATS: list[tuple[str, str, bytes, str]] = [
    (
        "POST",
        "/v1/sessions/{sid}/events",
        b'[{"type":"message","role":"user","content":"a"},'
        b'{"type":"message","role":"user","role":"tool","content":"b"}]',
        "events[1].role",
    ),
    (
        "POST",
        "/v1/sessions/{sid}/events",
        b'{"type": "message", "role": "user", "content": "a", "content": "b"}',
        "events[0].content",
    ),
    (
        "POST",
        "/v1/sessions/{sid}/events",
        b'{"type":"message","role":"user","r\\u006fle":"system","content":"a"}',
        "events[0].role",
    ),
    (
        "POST",
        "/v1/sessions/{sid}/events",
        b'{"events":[{"type":"message","role":"assistant","tool_calls":[{"id":"c","id":"d",'
        b'"type":"function","function":{"name":"f","arguments":"{}"}}]}]}',
        "events[0].tool_calls[0].id",
    ),
    (
        "POST",
        "/v1/sessions/{sid}/events",
        b'{"events":[],"events":[{"type":"message","role":"user","content":"a"}]}',
        "body.events",
    ),
    ("POST", "/v1/sessions", b'{"repo_root":"/srv/a","repo_root":"/srv/b"}', "body.repo_root"),
    ("PATCH", "/v1/sessions/{sid}", b'{"title":"One","title":"Two"}', "body.title"),
    (
        "POST",
        "/v1/memory/remember",
        b'{"note":"Postgres is on 5433.","title":"Db","title":"Database port"}',
        "body.title",
    ),
    ("POST", "/v1/memory/core/notes", b'{"note":"a","note":"b"}', "body.note"),
    ("POST", "/v1/memory/blocks", b'{"name":"b","content":"a","content":"b"}', "body.content"),
    ("PUT", "/v1/memory/blocks/b", b'{"content":"a","tags":["x"],"tags":[]}', "body.tags"),
    ("PUT", "/v1/memory/core", b'{"content":"# a\\n","content":"# b\\n"}', "body.content"),
    (
        "POST",
        "/v1/memory/tools/call",
        b'{"name":"remember","arguments":{"note":"a","note":"b"}}',
        "body.arguments.note",
    ),
    (
        "POST",
        "/v1/memory/procedures",
        b'{"outcome":"success","task":"deploy","task":"build"}',
        "body.task",
    ),
    ("POST", "/v1/memory/prune", b'{"dry_run":true,"dry_run":false}', "body.dry_run"),
    ("POST", "/v1/sessions/prune", b'{"keep_latest":1,"keep_latest":0}', "body.keep_latest"),
    ("POST", "/v1/sessions/{sid}/extract", b'{"to_seq":1,"to_seq":2}', "body.to_seq"),
]


@pytest.mark.parametrize(("method", "url", "raw", "loc"), REPEATS)
def test_a_repeated_key_is_422_naming_it_and_writes_nothing(
    client: TestClient, home: Path, method: str, url: str, raw: bytes, loc: str
) -> None:
    sid = new_session(client)
    client.post("/v1/memory/blocks", json={"name": "b", "content": "kept"})
    before = snapshot(home)
    r = client.request(method, url.format(sid=sid), content=raw, headers=JSON)
    problem = refused(r, "duplicate_key", loc)
    key = loc.rsplit(".", 1)[1].split("[")[0]
    assert f"the key {key!r} appears more than once" in problem["detail"]
    assert snapshot(home) == before


def test_a_repeated_key_in_an_import_is_422_naming_line_and_key(
    client: TestClient, home: Path
) -> None:
    client.get("/v1/sessions").raise_for_status()
    before = snapshot(home)
    native = (
        orjson.dumps(HEADER)
        + b'\n{"type":"message","role":"user","content":"a","ts":"2026-01-01T00:00:01Z",'
        b'"ts":"2026-01-01T00:00:02Z"}\n'
    )
    refused(post(client, "/v1/sessions/import", native), "duplicate_key", "line 2: ts")
    chats = b'[\n  {"messages": [{"role": "user", "content": "a"}]},\n' + (
        b'  {"messages": [{"role": "user", "content": "a", "role": "system"}]}\n]\n'
    )
    r = post(client, "/v1/sessions/import", chats, params={"format": "openai-chat"})
    refused(r, "duplicate_key", "line 1: [1].messages[0].role")
    assert snapshot(home) == before


def test_every_import_path_refuses_a_repeated_key_as_its_reader_parses(tmp_path: Path) -> None:
    """The rule is the readers' own, so it holds for a file the command line imports
    offline or a followed folder hands over, not only for the HTTP route."""
    from aster_persist import importers
    from aster_persist.importers import lines

    claude = (
        b'{"type":"user","sessionId":"s","uuid":"u1","cwd":"/srv/a","timestamp":'
        b'"2026-01-01T00:00:01Z","message":{"role":"user","content":"hi","role":"system"}}\n'
    )
    path = tmp_path / "s.jsonl"
    path.write_bytes(claude)
    with path.open("rb") as handle:
        form = importers.named(importers.detect_file(handle))
        with pytest.raises(body.ValidationFailed, match=r"line 1: message\.role"):
            lines.scan(form, handle, None)
    with pytest.raises(body.ValidationFailed, match="role"):
        importers.read(claude)
    chats = b'[{"messages": [{"role": "user", "content": "a", "content": "b"}]}]'
    with pytest.raises(body.ValidationFailed, match="content"):
        importers.read(chats, "openai-chat")


def test_the_fast_path_and_the_framework_refuse_a_repeated_key_alike(client: TestClient) -> None:
    """An unknown query parameter hands a request to the framework's route."""
    sid = new_session(client)
    for url, raw in (
        ("/v1/memory/blocks", b'{"name":"b","content":"a","name":"c"}'),
        (f"/v1/sessions/{sid}/events", b'{"type":"message","type":"title","title":"t"}'),
    ):
        fast = post(client, url, raw)
        framework = post(client, url, raw, params={"by": "framework"})
        assert fast.status_code == framework.status_code == 422
        assert fast.json() == framework.json()
        assert fast.json()["errors"][0]["type"] == "duplicate_key"


# -- unknown fields --------------------------------------------------------------------------

UNKNOWN: list[tuple[str, str, dict[str, Any], str]] = [
    (
        "POST",
        "/v1/memory/remember",
        {"note": "Postgres listens on 5433.", "titel": "Database port"},
        "titel",
    ),
    ("PATCH", "/v1/sessions/{sid}", {"title": "Renamed", "titel": "Typo"}, "titel"),
    ("POST", "/v1/sessions", {"repo_root": REPO, "titel": "Fix the build"}, "titel"),
    ("POST", "/v1/sessions/prune", {"older_than_day": 30}, "older_than_day"),
    ("POST", "/v1/memory/core/notes", {"note": "n", "scope": "global"}, "scope"),
    ("POST", "/v1/memory/procedures", {"outcome": "success", "task": "t", "tool": "x"}, "tool"),
    ("POST", "/v1/memory/prune", {"dry_run": True, "max_age": 3}, "max_age"),
    (
        "POST",
        "/v1/memory/tools/call",
        {"name": "recall", "arguments": {"name": "b"}, "sesion_id": "s"},
        "sesion_id",
    ),
    ("PUT", "/v1/memory/core", {"content": "# Notes\n", "etag": '"x"'}, "etag"),
    ("POST", "/v1/sessions/{sid}/extract", {"from_seq": 1, "to": 2}, "to"),
    ("POST", "/v1/memory/consolidate", {"proposal": None, "apply": True}, "apply"),
    (
        "POST",
        "/v1/sessions/{sid}/events",
        {"events": [user("hi")], "idempotency": "turn-1"},
        "idempotency",
    ),
    ("PATCH", "/v1/memory/blocks/b", {"importance": 0.9, "importanse": 0.1}, "importanse"),
]


@pytest.mark.parametrize(("method", "url", "fields", "name"), UNKNOWN)
def test_an_unknown_field_in_a_closed_body_is_422_naming_it_and_writes_nothing(
    client: TestClient, home: Path, method: str, url: str, fields: dict[str, Any], name: str
) -> None:
    sid = new_session(client)
    client.post("/v1/memory/blocks", json={"name": "b", "content": "kept"})
    before = snapshot(home)
    r = client.request(method, url.format(sid=sid), json=fields)
    problem = refused(r, "extra_forbidden", f"body.{name}")
    assert [e["loc"] for e in problem["errors"]] == [f"body.{name}"]
    assert snapshot(home) == before


def test_a_remember_with_a_misspelt_title_adds_no_note(client: TestClient, home: Path) -> None:
    r = client.post(
        "/v1/memory/remember", json={"note": "Postgres is on 5433.", "titel": "Database port"}
    )
    assert r.status_code == 422
    assert client.get("/v1/memory/core").json()["content"] == ""
    assert client.get("/v1/memory/blocks").json()["items"] == []


def test_a_sessions_own_x_fields_are_kept_and_server_fields_refused(
    client: TestClient, home: Path
) -> None:
    r = client.post("/v1/sessions", json={"repo_root": REPO, "x_agent": {"name": "a", "v": 2}})
    assert r.status_code == 201 and r.json()["x_agent"] == {"name": "a", "v": 2}
    before = snapshot(home)
    r = client.post("/v1/sessions", json={"repo_root": REPO, "seq": 7})
    assert r.status_code == 422 and "set by the server" in r.json()["detail"]
    r = client.post("/v1/sessions", json={"repo_root": REPO, "agent": "a", "modle": "m"})
    assert [e["loc"] for e in refused(r, "extra_forbidden")["errors"]] == [
        "body.agent",
        "body.modle",
    ]
    assert snapshot(home) == before


def test_closed_bodies_say_so_in_the_openapi_document(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    closed = [
        "RememberIn",
        "RenameIn",
        "PruneIn",
        "NoteIn",
        "ProcedureIn",
        "MemoryPruneIn",
        *("RememberCall", "RecallCall", "ForgetCall", "SearchMemoryCall"),
        "ExtractIn",
        "ConsolidateIn",
        "EventsIn",
        "BlockPatch",
        "SessionIn",
    ]
    for name in closed:
        assert schemas[name]["additionalProperties"] is False, name
    value = {"$ref": "#/components/schemas/JsonValue"}
    assert schemas["SessionIn"]["patternProperties"] == {"^x_": value}


# -- events stay open ----------------------------------------------------------------------


@pytest.mark.parametrize("spaced", [False, True], ids=["compact", "spaced"])
def test_events_keep_the_fields_the_service_does_not_know_verbatim(
    client: TestClient, home: Path, spaced: bool
) -> None:
    sid = new_session(client)
    events: list[dict[str, Any]] = [
        user(
            [
                {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}},
                {"type": "image_url", "image_url": {"url": "data:,", "detail": "low", "x": [1]}},
            ],
            x_client={"name": "agent", "nested": {"deeper": [1, {"k": None}]}},
        ),
        {
            "type": "message",
            "role": "assistant",
            "content": None,
            "reasoning": "think",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "index": 0,
                    "function": {"name": "f", "arguments": "{}", "strict": True},
                }
            ],
        },
    ]
    raw = json.dumps(events).encode() if spaced else orjson.dumps(events)
    r = post(client, f"/v1/sessions/{sid}/events", raw)
    assert r.status_code == 201, r.text
    stored = client.get(f"/v1/sessions/{sid}/events").json()["events"]
    for sent, kept in zip(events, stored, strict=True):
        assert {k: v for k, v in kept.items() if k not in ("seq", "ts", "batch_size")} == sent


def test_a_blocks_misspelt_key_is_refused_and_its_own_x_keys_kept(
    client: TestClient, home: Path
) -> None:
    before = snapshot(home)
    r = client.post(
        "/v1/memory/blocks", json={"name": "port", "content": "5433", "descripton": "db"}
    )
    assert_problem(r, 422)
    assert "descripton" in r.text
    assert snapshot(home) == before
    r = client.post(
        "/v1/memory/blocks", json={"name": "port", "content": "5433", "x_owner": "infra"}
    )
    assert r.status_code == 201, r.text
    assert "x_owner: infra" in (home / "memory" / "port.md").read_text()


@pytest.mark.parametrize(
    "arguments",
    [
        {"note": "The database port is 5433.", "titel": "Database port"},
        '{"note": "The database port is 5433.", "titel": "Database port"}',
        '{"note": "The database port is 5433.", "note": "again"}',
    ],
)
def test_a_tool_call_with_an_argument_the_tool_does_not_take_is_refused(
    client: TestClient, home: Path, arguments: Any
) -> None:
    before = snapshot(home)
    r = client.post("/v1/memory/tools/call", json={"name": "remember", "arguments": arguments})
    assert_problem(r, 422)
    assert ("titel" in r.text) or ("twice" in r.text and "note" in r.text), r.text
    assert snapshot(home) == before
    fine = {"note": "The database port is 5433.", "title": "Database port"}
    r = client.post("/v1/memory/tools/call", json={"name": "remember", "arguments": fine})
    assert r.status_code == 200, r.text
    assert (home / "memory" / "database-port.md").exists()


def test_an_integer_beyond_64_bits_or_a_coerced_number_is_refused_and_nothing_written(
    client: TestClient, home: Path
) -> None:
    """orjson reads an integer beyond 64 bits as a float, so the line written would not
    say what was sent; a string or a boolean for a number was once converted."""
    from ..conftest import new_session, snapshot, user

    sid = new_session(client)
    before = snapshot(home)
    for sent in (
        {**user("x"), "x_big": 2**64},
        [user("x"), {**user("y"), "x_deep": {"a": [-(2**63) - 1]}}],
        {"type": "summary", "content": "s", "through_seq": "1"},
        {"type": "summary", "content": "s", "through_seq": False},
    ):
        r = client.post(f"/v1/sessions/{sid}/events", content=exact_json(sent))
        assert r.status_code == 422, (sent, r.text)
        assert snapshot(home) == before
    ok = client.post(f"/v1/sessions/{sid}/events", json={**user("x"), "x_big": 2**64 - 1})
    assert ok.status_code == 201
    stored = orjson.loads(session_path(home, sid).read_bytes().splitlines()[-1])
    assert stored["x_big"] == 2**64 - 1 and isinstance(stored["x_big"], int)


def exact_json(value: object) -> bytes:
    import json

    return json.dumps(value).encode()  # the standard library writes any integer exactly


def session_path(home: Path, sid: str) -> Path:
    [path] = home.glob(f"sessions/*/{sid}.jsonl")
    return path
