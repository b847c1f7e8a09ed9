"""One live session per alias, whoever asks, at the same moment: on a real daemon,
imports of exports holding 30 aliases race creates asking for the same 30, and
restores race creates too; afterwards every alias names at most one live session, and
each loser was told (409 `alias_taken`, or an import that kept the alias as `x_alias`)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from ..conftest import Daemon, user

N = 30


def holders(url: str) -> dict[str, list[str]]:
    """Each alias and the live sessions that hold it."""
    found: dict[str, list[str]] = {}
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 500, **({"cursor": cursor} if cursor else {})}
        page = httpx.get(f"{url}/v1/sessions", params=params).json()
        for item in page["items"]:
            if item.get("alias"):
                found.setdefault(item["alias"], []).append(item["id"])
        cursor = page.get("next_cursor")
        if not cursor:
            return found


def test_imports_and_creates_racing_for_aliases_leave_one_holder_each(daemon: Daemon) -> None:
    url = daemon.url
    exports = []
    with httpx.Client(base_url=url) as http:
        for n in range(N):
            made = http.post("/v1/sessions", json={"repo_root": "/srv/race", "alias": f"al-{n}"})
            sid = made.json()["id"]
            turns = [user(f"turn {k} of {n}: " + "words " * 40) for k in range(300)]
            http.post(f"/v1/sessions/{sid}/events", json=turns)  # an import that takes time
            exports.append(http.get(f"/v1/sessions/{sid}/export").content)
            assert http.delete(f"/v1/sessions/{sid}", params={"purge": "true"}).status_code == 204

    def imported(n: int) -> httpx.Response:
        return httpx.post(f"{url}/v1/sessions/import", content=exports[n], timeout=60)

    def created(n: int) -> httpx.Response:
        body = {"repo_root": "/srv/race", "alias": f"al-{n}"}
        return httpx.post(f"{url}/v1/sessions", json=body, timeout=60)

    with ThreadPoolExecutor(2 * N) as pool:  # each create asks while the imports write
        imports = [pool.submit(imported, n) for n in range(N)]
        creates = [pool.submit(created, n) for n in range(N)]
        answers = [(f.result(), g.result()) for f, g in zip(imports, creates, strict=True)]
    held = holders(url)
    assert all(len(ids) == 1 for ids in held.values()), held
    assert sorted(held) == sorted(f"al-{n}" for n in range(N))
    for n, (imp, made) in enumerate(answers):
        assert imp.status_code in (200, 201), imp.text
        if made.status_code == 201:  # the create won: the import kept its alias aside
            [sid] = [s["id"] for s in imp.json()["sessions"]]
            header = httpx.get(f"{url}/v1/sessions/{sid}").json()["header"]
            assert header.get("x_alias") == f"al-{n}" and "alias" not in header
        else:
            assert made.status_code == 409 and made.json()["code"] == "alias_taken"


def test_restores_and_creates_racing_for_aliases_leave_one_holder_each(daemon: Daemon) -> None:
    url = daemon.url
    trashed = []
    with httpx.Client(base_url=url) as http:
        for n in range(N):
            body = {"repo_root": "/srv/race2", "alias": f"back-{n}"}
            sid = http.post("/v1/sessions", json=body).json()["id"]
            assert http.delete(f"/v1/sessions/{sid}").status_code == 204
            trashed.append(sid)

    def restored(n: int) -> httpx.Response:
        return httpx.post(f"{url}/v1/sessions/{trashed[n]}/restore", timeout=60)

    def created(n: int) -> httpx.Response:
        body = {"repo_root": "/srv/race2", "alias": f"back-{n}"}
        return httpx.post(f"{url}/v1/sessions", json=body, timeout=60)

    with ThreadPoolExecutor(16) as pool:
        pairs = [(pool.submit(restored, n), pool.submit(created, n)) for n in range(N)]
        answers = [(a.result().status_code, b.result().status_code) for a, b in pairs]
    held = holders(url)
    assert all(len(held[f"back-{n}"]) == 1 for n in range(N)), held
    assert all(sorted(pair) in ([200, 409], [201, 409], [204, 409]) for pair in answers), answers
