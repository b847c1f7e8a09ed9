"""`If-Match` as RFC 9110 (section 13.1.1) defines it, on every route that reads it:
a well-formed entity tag that is not the current version is 412 (with the current ETag)
and changes nothing; a weak tag never matches (a write needs the strong comparison); a
list matches when any of its tags does; `*` matches what exists; only a header of no
such form is 422."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from ..conftest import new_session, snapshot, user

Write = Callable[[TestClient, dict[str, str]], httpx.Response]


def core(client: TestClient) -> str:
    return str(client.get("/v1/memory/core").headers["etag"])


def block(client: TestClient) -> str:
    r = client.get("/v1/memory/blocks/db")
    if r.status_code == 404:
        r = client.post("/v1/memory/blocks", json={"name": "db", "content": "Port 5433."})
    return str(r.headers["etag"])


def session(client: TestClient) -> tuple[str, str]:
    sid = new_session(client)
    assert client.post(f"/v1/sessions/{sid}/events", json=user("hi")).status_code == 201
    return sid, str(client.get(f"/v1/sessions/{sid}").headers["etag"])


# route → (make the resource, giving its ETag and the call that writes it with headers)
ROUTES: dict[str, Callable[[TestClient], tuple[str, Write]]] = {
    "PUT core": lambda c: (
        core(c),
        lambda c, h: c.put("/v1/memory/core", json={"content": "- new"}, headers=h),
    ),
    "PUT block": lambda c: (
        block(c),
        lambda c, h: c.put("/v1/memory/blocks/db", json={"content": "Port 6543."}, headers=h),
    ),
    "PATCH block": lambda c: (
        block(c),
        lambda c, h: c.patch("/v1/memory/blocks/db", json={"pinned": True}, headers=h),
    ),
    "DELETE block": lambda c: (block(c), lambda c, h: c.delete("/v1/memory/blocks/db", headers=h)),
    "append": lambda c: (
        lambda s: (
            s[1],
            lambda c, h: c.post(f"/v1/sessions/{s[0]}/events", json=user("b"), headers=h),
        )
    )(session(c)),
    "rename": lambda c: (
        lambda s: (
            s[1],
            lambda c, h: c.patch(f"/v1/sessions/{s[0]}", json={"title": "t"}, headers=h),
        )
    )(session(c)),
    "delete session": lambda c: (
        lambda s: (s[1], lambda c, h: c.delete(f"/v1/sessions/{s[0]}", headers=h))
    )(session(c)),
}


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize(
    "header",
    ['"stale"', '"0"', '"' + "0" * 64 + '"', 'W/"{etag}"', '"stale", W/"{etag}"', '""'],
    ids=["word", "seq", "sha", "weak", "list-no-strong", "empty-tag"],
)
def test_a_well_formed_tag_that_does_not_match_is_412(
    client: TestClient, home: Path, route: str, header: str
) -> None:
    etag, write = ROUTES[route](client)
    before = snapshot(home)
    r = write(client, {"If-Match": header.format(etag=etag.strip('"'))})
    assert r.status_code == 412, (route, header, r.text)
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.headers["etag"] == etag  # the current version, to read again
    assert snapshot(home) == before


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize(
    "header",
    ["not-an-etag", "12", '"unclosed', 'W/ "x"', '"a" "b"', '*, "x"'],
)
def test_only_a_header_of_no_such_form_is_422(
    client: TestClient, home: Path, route: str, header: str
) -> None:
    _etag, write = ROUTES[route](client)
    before = snapshot(home)
    r = write(client, {"If-Match": header})
    assert r.status_code == 422, (route, header, r.text)
    assert "entity tags in double quotes" in r.json()["detail"]
    assert snapshot(home) == before


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("form", ["{etag}", '"stale", {etag}', "*"], ids=["tag", "list", "star"])
def test_the_current_tag_alone_in_a_list_or_star_matches(
    client: TestClient, route: str, form: str
) -> None:
    etag, write = ROUTES[route](client)
    r = write(client, {"If-Match": form.format(etag=etag)})
    assert r.status_code in (200, 201, 204), (route, form, r.text)


def test_star_on_a_block_that_is_not_there_is_412(client: TestClient, home: Path) -> None:
    before = snapshot(home)
    r = client.put("/v1/memory/blocks/ghost", json={"content": "x"}, headers={"If-Match": "*"})
    assert r.status_code == 412 and snapshot(home) == before
