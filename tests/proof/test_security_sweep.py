"""Every route of the OpenAPI document against the front door's rules, and every path
parameter against names that try to leave the data home; then the daemon under slow
clients, oversized bodies and too many streams still serving a normal request."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from ..conftest import Daemon, make_client, new_session, user
from .scale import record

OPENAPI = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"
TOKEN = "t" * 40
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HOSTILE = [  # literal "../" is resolved by every HTTP client before it is sent: encoded here
    "..%2F..%2Fetc",
    "%2e%2e",
    "%2E%2E%2Fsecret",
    "..%5C..",
    "a%00b",
    "%2Fetc%2Fpasswd",
    "x" * 5000,
    "outside-link",
    "Outside-Link",
]
BODIES: dict[str, Any] = {
    "post": {"content": "c", "title": "t", "note": "n", "repo_root": "/srv/x"},
    "put": {"content": "c"},
    "patch": {"title": "t", "tags": ["x"]},
}


def routes() -> list[tuple[str, str, dict[str, Any]]]:
    doc = json.loads(OPENAPI.read_text())
    return [(path, method, op) for path, ops in doc["paths"].items() for method, op in ops.items()]


def filled(path: str, value: str = "01J0000000000000000000ABCD") -> str:
    out = path
    while "{" in out:
        start, end = out.index("{"), out.index("}")
        out = out[:start] + value + out[end + 1 :]
    return out


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[tuple[TestClient, Path, Path]]:
    home = tmp_path / "home"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("---\nname: outside-link\n---\nTOP SECRET\n")
    with make_client(home, auth="token", token=TOKEN) as client:
        (home / "memory" / "outside-link.md").symlink_to(outside / "secret.md")
        yield client, home, outside


def request(client: TestClient, method: str, path: str, **kwargs: Any) -> Any:
    body = BODIES.get(method)
    return client.request(method.upper(), path, json=body, **kwargs)


def test_every_route_obeys_host_origin_and_token(guarded: tuple[TestClient, Path, Path]) -> None:
    client, _home, _outside = guarded
    checked = 0
    for path, method, _op in routes():
        url = filled(path)
        foreign = request(client, method, url, headers={**AUTH, "Host": "evil.example"})
        assert foreign.status_code == 403, (method, path)
        for origin in ("null", "http://evil.example", "http://127.0.0.1:1"):
            r = request(client, method, url, headers={**AUTH, "Origin": origin})
            assert r.status_code == 403, (method, path, origin)
        if path != "/healthz":
            assert request(client, method, url).status_code == 401, (method, path)
            wrong = {"Authorization": "Bearer " + "w" * 40}
            assert request(client, method, url, headers=wrong).status_code == 401
        checked += 1
    assert checked == len(routes()) > 40
    record("every route: foreign Host, bad Origin, no or wrong token", rounds=checked,
           faults=checked * 6, checked=checked * 6, lost=0)  # fmt: skip


def test_no_name_leaves_the_data_home(guarded: tuple[TestClient, Path, Path]) -> None:
    client, home, outside = guarded
    r = client.get("/v1/memory/blocks/outside-link", headers=AUTH)  # a planted symlink
    assert r.status_code == 404 and "TOP SECRET" not in r.text
    before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    tries = 0
    for path, method, op in routes():
        names = [p["name"] for p in op.get("parameters", []) if p["in"] == "path"]
        if not names:
            continue
        for value in HOSTILE:
            url = filled(path, value)
            r = request(client, method, url, headers=AUTH)
            tries += 1
            assert r.status_code < 500, (method, path, value, r.text)
            assert "TOP SECRET" not in r.text, (method, path, value)
            if value != "outside-link":  # (a legal block name: writing it replaces the link)
                assert r.status_code >= 400, (method, path, value, r.text)
    after = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    assert after == before, "something outside the data home changed"
    assert not [p for p in home.parent.iterdir() if p.name not in ("home", "outside")]
    record(
        "hostile names in every path parameter", rounds=tries, faults=tries, checked=tries, lost=0
    )


def test_a_session_id_in_another_case_is_not_the_session(tmp_path: Path) -> None:
    with make_client(tmp_path / "home") as client:
        sid = new_session(client)
        client.post(f"/v1/sessions/{sid}/events", json=user("mine"))
        r = client.get(f"/v1/sessions/{sid.lower()}")
        assert r.status_code in (404, 422) and "mine" not in r.text


def test_a_transcript_symlinked_out_of_the_home_is_never_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    outside = tmp_path / "outside.jsonl"
    with make_client(home) as client:
        sid = new_session(client)
        path = next((home / "sessions").glob(f"*/{sid}.jsonl"))
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)
    before = outside.read_bytes()
    with make_client(home) as client:
        r = client.post(f"/v1/sessions/{sid}/events", json=user("through the link?"))
        assert r.status_code in (404, 409, 500) and r.status_code != 201
    assert outside.read_bytes() == before


def test_slow_clients_big_bodies_and_many_streams_do_not_stop_service(home: Path) -> None:
    daemon = Daemon(home, env={"ASTER_MAX_SUBSCRIBERS": "2"}).start()
    stop = threading.Event()
    slow: list[socket.socket] = []
    try:

        def trickle() -> None:  # a header byte per second on several connections
            for _ in range(8):
                s = socket.create_connection(("127.0.0.1", daemon.port))
                slow.append(s)
            head = b"GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            for byte in head:
                if stop.is_set():
                    return
                for s in slow:
                    with contextlib.suppress(OSError):
                        s.send(bytes([byte]))
                time.sleep(1)

        threading.Thread(target=trickle, daemon=True).start()
        time.sleep(1.5)
        with httpx.Client(base_url=daemon.url, timeout=5) as http:
            sid = http.post("/v1/sessions", json={"repo_root": "/srv/slow"}).json()["id"]
            big = http.post(
                f"/v1/sessions/{sid}/events",
                content=b"[" + b" " * (9 * 1024 * 1024) + b"]",
                headers={"Content-Type": "application/json"},
            )
            assert big.status_code == 413
            streams = [
                http.stream("GET", "/v1/events", timeout=httpx.Timeout(5, read=None))
                for _ in range(3)
            ]
            opened = [s.__enter__() for s in streams]
            assert [r.status_code for r in opened] == [200, 200, 503]
            started = time.monotonic()
            r = http.post(f"/v1/sessions/{sid}/events", json=user("still served"))
            assert r.status_code == 201 and time.monotonic() - started < 2
            for s in streams:
                s.__exit__(None, None, None)
    finally:
        stop.set()
        for s in slow:
            s.close()
        daemon.kill()
    assert os.path.exists(home)
