"""Every Server-Sent Event a stream sends is one its OpenAPI document declares: an
`event:` name the route lists, and `data` valid against that event's schema (journal
entries of every kind of change, append notices, transcript lines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import jsonschema

from ..conftest import Daemon
from ..streams import Streams, body, parse_events

OPENAPI = json.loads((Path(__file__).resolve().parents[2] / "openapi" / "openapi.json").read_text())


def declared(path: str) -> dict[str, dict[str, Any]]:
    """The events a stream route declares: each `event:` name with its schema."""
    content = OPENAPI["paths"][path]["get"]["responses"]["200"]["content"]["text/event-stream"]
    return {e["properties"]["event"]["const"]: e for e in content["schema"]["items"]["oneOf"]}


def check(events: list[dict[str, Any]], path: str) -> set[str]:
    """Each event valid against its declared schema; the names seen."""
    kinds = declared(path)
    for event in events:
        assert event.get("event") in kinds, event
        schema = {**kinds[event["event"]], "components": OPENAPI["components"]}
        validator = jsonschema.Draft202012Validator(schema)  # refs resolve inside it
        errors = [e.message for e in validator.iter_errors(event)]
        assert errors == [], (event, errors)
    return {e["event"] for e in events}


def test_what_the_streams_send_is_what_the_document_declares(daemon: Daemon) -> None:
    url = daemon.url
    sid = httpx.post(f"{url}/v1/sessions", json={"repo_root": "/srv/contract"}).json()["id"]
    streams = Streams(
        daemon.port,
        [("/v1/events", {}), (f"/v1/sessions/{sid}/events/stream", {})],
    )
    try:
        turn = [
            {"type": "message", "role": "user", "content": "what does make test do?"},
            {"type": "message", "role": "assistant", "content": "It runs the suite."},
            {"type": "summary", "content": "asked about make test", "through_seq": 2},
            {"type": "title", "title": "make test"},
        ]
        assert httpx.post(f"{url}/v1/sessions/{sid}/events", json=turn).status_code == 201
        block = {"title": "Tests", "content": "Run make test."}
        scope = {"repo_root": "/srv/contract"}
        assert httpx.post(f"{url}/v1/memory/blocks", params=scope, json=block).status_code == 201
        assert httpx.delete(f"{url}/v1/memory/blocks/tests?repo_root=/srv/contract").is_success
        assert httpx.patch(f"{url}/v1/sessions/{sid}", json={"title": "renamed"}).is_success
        assert httpx.delete(f"{url}/v1/sessions/{sid}").status_code == 204

        def feed() -> list[dict[str, Any]]:
            return parse_events(body(bytes(streams.received[0])))

        streams.wait(lambda: any(e["data"].get("op") == "session.deleted" for e in feed()))
        streams.wait(lambda: len(parse_events(body(bytes(streams.received[1])))) >= 4)
        assert check(feed(), "/v1/events") == {"journal", "session.appended"}
        ops = {e["data"]["op"] for e in feed() if e["event"] == "journal"}
        assert {"memory.write", "memory.delete", "session.renamed", "session.deleted"} <= ops
        tail = parse_events(body(bytes(streams.received[1])))
        assert check(tail, "/v1/sessions/{session_id}/events/stream") == {"event"}
    finally:
        streams.close()
