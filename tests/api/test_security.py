"""Host allowlist, Origin checks, bearer tokens and body limits: refused before any work."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from aster_persist.settings import Settings

from ..conftest import REPO, make_client, new_session, snapshot, user


@pytest.mark.parametrize(
    "host", ["evil.example", "127.0.0.1.evil.example", "localhost.evil", "10.0.0.1:4627"]
)
def test_foreign_host_is_403_before_any_work(client: TestClient, home: Path, host: str) -> None:
    before = snapshot(home)
    r = client.post("/v1/sessions", json={"repo_root": REPO}, headers={"Host": host})
    assert r.status_code == 403 and r.json()["code"] == "host_not_allowed"
    assert snapshot(home) == before


@pytest.mark.parametrize(
    "host",
    ["localhost", "localhost:9", "127.0.0.1:4627", "[::1]:4627", "LOCALHOST"],
)
def test_local_hosts_pass(client: TestClient, host: str) -> None:
    assert client.get("/healthz", headers={"Host": host}).status_code == 200


def test_extra_allowed_hosts(home: Path) -> None:
    with make_client(home, allowed_hosts="aster.internal, other") as client:
        assert client.get("/healthz", headers={"Host": "aster.internal:4627"}).status_code == 200
        assert client.get("/healthz", headers={"Host": "nope"}).status_code == 403


def test_a_published_address_is_allowed_as_host_and_origin(home: Path) -> None:
    """A container's port mapped elsewhere (ASTER_PUBLIC_URL): the page there can write."""
    public = {"public_url": "http://Aster.Example:8080/"}
    with make_client(home, **public) as client:
        hosted = client.get("/healthz", headers={"Host": "aster.example:8080"})
        assert hosted.status_code == 200
        r = client.post(
            "/v1/sessions",
            json={"repo_root": REPO},
            headers={"Origin": "http://aster.example:8080", "Host": "aster.example:8080"},
        )
        assert r.status_code == 201 and r.headers["access-control-allow-origin"] == (
            "http://aster.example:8080"
        )
        other = client.get("/v1/sessions", headers={"Origin": "http://aster.example:9090"})
        assert other.status_code == 403
    with make_client(home, cors_origins="http://tool.example", **public) as client:
        both = [
            client.get("/v1/sessions", headers={"Origin": origin}).status_code
            for origin in ("http://tool.example", "http://aster.example:8080")
        ]
        assert both == [200, 200]


def test_the_name_containers_give_this_machine_only_where_a_token_is_required(
    home: Path,
) -> None:
    """A network's DNS answers host.docker.internal: with no token, trusting it would let
    a rebinding page read the store; with a token required, containers may use it."""
    headers = {"Host": "host.docker.internal:4627"}
    with make_client(home) as client:  # loopback, no token
        assert client.get("/v1/sessions", headers=headers).status_code == 403
    with make_client(home, auth="token", token="t" * 32) as client:
        authorised = {**headers, "Authorization": "Bearer " + "t" * 32}
        assert client.get("/v1/sessions", headers=authorised).status_code == 200
        assert client.get("/v1/sessions", headers=headers).status_code == 401


@pytest.mark.parametrize(
    ("url", "origin", "host"),
    [
        ("http://[FD00::1]:8080", "http://[fd00::1]:8080", "[fd00::1]:8080"),
        ("https://aster.example:443", "https://aster.example", "aster.example"),
        ("http://aster.example:80/", "http://aster.example", "aster.example"),
    ],
)
def test_a_public_url_is_read_as_a_browser_sends_it(
    home: Path, url: str, origin: str, host: str
) -> None:
    assert Settings(public_url=url).public_url == origin
    with make_client(home, public_url=url) as client:
        r = client.get("/v1/sessions", headers={"Host": host, "Origin": origin})
        assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    "url",
    [
        *("aster.example", "ftp://aster.example", "http://aster.example/app", "http://:80"),
        "http://user:pw@aster.example",
    ],
)
def test_a_public_url_that_is_no_origin_is_refused_by_name(url: str) -> None:
    with pytest.raises(ValueError, match="public URL"):
        Settings(public_url=url)


@pytest.mark.parametrize("origin", ["null", "http://evil.example", "http://127.0.0.1:9999"])
def test_bad_origins_refused(client: TestClient, home: Path, origin: str) -> None:
    before = snapshot(home)
    r = client.post("/v1/sessions", json={"repo_root": REPO}, headers={"Origin": origin})
    assert r.status_code == 403 and r.json()["code"] == "origin_not_allowed"
    assert snapshot(home) == before


def test_own_origin_allowed_and_cors_never_star(client: TestClient) -> None:
    r = client.get("/v1/sessions", headers={"Origin": "http://127.0.0.1:4627"})
    assert r.status_code == 200
    assert r.headers["access-control-allow-origin"] == "http://127.0.0.1:4627"
    pre = client.options(
        "/v1/sessions",
        headers={"Origin": "http://localhost:4627", "Access-Control-Request-Method": "POST"},
    )
    assert (
        pre.status_code == 200
        and pre.headers["access-control-allow-origin"] == "http://localhost:4627"
    )


def test_wildcard_cors_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="never allowed"):
        Settings(cors_origins="*")


def test_token_mode_generates_a_private_token_file(home: Path) -> None:
    with make_client(home, auth="token") as client:
        token_file = home / "token"
        token = token_file.read_text().strip()
        assert len(token) >= 32 and stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert client.get("/v1/sessions").status_code == 401
        assert (
            client.get("/v1/sessions", headers={"Authorization": "Bearer wrong"}).status_code == 401
        )
        r = client.get("/v1/sessions", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200
        assert client.get("/healthz").status_code == 200
    with make_client(home, auth="token") as client:
        assert (
            client.get("/v1/sessions", headers={"Authorization": f"Bearer {token}"}).status_code
            == 200
        )


def test_token_from_environment(home: Path) -> None:
    with make_client(home, auth="token", token="t" * 40) as client:
        assert (
            client.get("/v1/info", headers={"Authorization": "Bearer " + "t" * 40}).json()["auth"]
            == "token"
        )
        assert not (home / "token").exists()


def test_auto_auth_is_on_for_non_loopback(home: Path) -> None:
    with make_client(home, host="0.0.0.0") as client:
        assert client.get("/v1/sessions").status_code == 401


def test_auth_off_with_public_bind_is_refused() -> None:
    with pytest.raises(ValueError, match="without a token"):
        Settings(host="0.0.0.0", auth="off").check()


def test_declared_oversized_body_is_413(home: Path) -> None:
    with make_client(home, max_body_bytes=2048) as client:
        sid = new_session(client)
        before = snapshot(home)
        r = client.post(f"/v1/sessions/{sid}/events", json=user("x" * 5000))
        assert r.status_code == 413 and r.json()["code"] == "payload_too_large"
        assert snapshot(home) == before


def test_chunked_oversized_body_is_413(home: Path) -> None:
    with make_client(home, max_body_bytes=2048) as client:
        sid = new_session(client)
        before = snapshot(home)

        def chunks():
            yield b'{"type":"message","role":"user","content":"'
            for _ in range(10):
                yield b"x" * 1000
            yield b'"}'

        r = client.post(
            f"/v1/sessions/{sid}/events",
            content=chunks(),
            headers={"content-type": "application/json"},
        )
        assert r.status_code == 413
        assert snapshot(home) == before


def test_files_and_folders_are_private(client: TestClient, home: Path) -> None:
    sid = new_session(client)
    client.post(f"/v1/sessions/{sid}/events", json=user("x"))
    for path in home.rglob("*"):
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))


def test_requests_past_the_limit_get_503_and_bodies_on_the_way_hold_no_slot() -> None:
    import asyncio

    import httpx

    from aster_persist.api.guard import Guard

    async def run() -> list[int]:
        working = asyncio.Event()

        async def app(scope: Any, receive: Any, send: Any) -> None:  # busy until told
            if scope["path"] != "/healthz":
                await working.wait()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})

        guard = Guard(
            app,
            allowed_hosts=[],
            allowed_origins=[],
            token=None,
            max_body_bytes=1024,
            max_requests=2,
        )
        transport = httpx.ASGITransport(app=guard)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:4627") as c:
            sending = asyncio.Event()

            async def slow_body():  # its request is on the way until the gate opens
                yield b'{"repo_root": '
                await sending.wait()
                yield b'"/srv/x"}'

            on_the_way = [
                asyncio.create_task(c.post("/v1/sessions", content=slow_body())) for _ in range(3)
            ]
            held = [asyncio.create_task(c.get("/v1/sessions")) for _ in range(2)]
            await asyncio.sleep(0.1)
            refused = await c.get("/v1/sessions")
            assert refused.headers["content-type"] == "application/problem+json"
            assert refused.headers["retry-after"] == "1"
            health = await c.get("/healthz")
            working.set()
            done = await asyncio.gather(*held)
            sending.set()
            arrived = await asyncio.gather(*on_the_way)
            return [
                refused.status_code,
                health.status_code,
                *(r.status_code for r in done),
                *(r.status_code for r in arrived),
            ]

    assert asyncio.run(run()) == [503, 200, 200, 200, 200, 200, 200]


def test_chunked_oversized_body_on_any_route_is_413(home: Path) -> None:
    with make_client(home, max_body_bytes=2048) as client:

        def chunks():
            yield b'{"repo_root": "/srv/x", "x_pad": "'
            for _ in range(10):
                yield b"x" * 1000
            yield b'"}'

        r = client.post(
            "/v1/sessions", content=chunks(), headers={"content-type": "application/json"}
        )
        assert r.status_code == 413 and r.json()["code"] == "payload_too_large"

        def small():
            yield b'{"repo_root": '
            yield b'"/srv/x"}'

        assert (
            client.post(
                "/v1/sessions", content=small(), headers={"content-type": "application/json"}
            ).status_code
            == 201
        )


def test_bracketed_host_with_trailing_text_is_refused(client: TestClient) -> None:
    assert client.get("/healthz", headers={"Host": "[::1]evil.example"}).status_code == 403


def test_a_page_reads_the_same_headers_from_every_route(client: TestClient) -> None:
    """The fast path (append, remember) exposes to a page what every other route does."""
    origin = {"Origin": "http://127.0.0.1:4627"}
    made = client.post("/v1/sessions", json={"repo_root": REPO}, headers=origin)
    appended = client.post(
        f"/v1/sessions/{made.json()['id']}/events",
        json={"type": "message", "role": "user", "content": "hi"},
        headers=origin,
    )
    remembered = client.post(
        "/v1/memory/blocks", json={"name": "n", "content": "Plain words."}, headers=origin
    )
    assert made.status_code == appended.status_code == remembered.status_code == 201
    exposed = made.headers["access-control-expose-headers"]
    assert {h.strip() for h in exposed.split(",")} >= {"ETag", "Location", "Idempotent-Replayed"}
    assert appended.headers["access-control-expose-headers"] == exposed
    assert remembered.headers["access-control-expose-headers"] == exposed
