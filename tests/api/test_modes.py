"""The durability modes and concurrent writers inside one daemon."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from aster_persist.app import create_app
from aster_persist.settings import Settings

from ..conftest import FakeClock, make_client, new_session, user
from .test_sessions import lines, session_file


@pytest.mark.parametrize("mode", ["interval", "none"])
def test_other_modes_keep_every_acknowledged_event(home: Path, clock: FakeClock, mode: str) -> None:
    with make_client(home, clock, durability=mode, sync_interval_ms=20) as client:
        sid = new_session(client)
        for i in range(20):
            assert client.post(f"/v1/sessions/{sid}/events", json=user(str(i))).status_code == 201
        time.sleep(0.1)
        info = client.get("/v1/info").json()
        assert info["durability"] == mode
        if mode == "interval":
            assert info["appends"]["syncs"] >= 1
    assert [line["content"] for line in lines(session_file(home, sid))[1:]] == [
        str(i) for i in range(20)
    ]


async def _concurrent(home: Path, clock: FakeClock, fn) -> object:  # type: ignore[no-untyped-def]
    app = create_app(Settings(home=home), clock=clock)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://127.0.0.1:4627"
        ) as client:
            return await fn(client, app)


def test_concurrent_appends_share_syncs_and_keep_seq_gapless(home: Path, clock: FakeClock) -> None:
    async def run(client: httpx.AsyncClient, app: object) -> dict:
        sid = (await client.post("/v1/sessions", json={"repo_root": "/srv/x"})).json()["id"]
        replies = await asyncio.gather(
            *(client.post(f"/v1/sessions/{sid}/events", json=user(f"m{i}")) for i in range(200))
        )
        assert all(r.status_code == 201 for r in replies)
        seqs = sorted(r.json()["first_seq"] for r in replies)
        assert seqs == list(range(1, 201))
        return (await client.get("/v1/info")).json()["appends"] | {"sid": sid}

    stats = asyncio.run(_concurrent(home, clock, run))
    assert stats["requests"] == 200
    assert stats["syncs"] < 100, "concurrent appends must share fdatasyncs (group commit)"
    stored = lines(session_file(home, str(stats["sid"]), "/srv/x"))
    assert [line["seq"] for line in stored] == list(range(201))


def test_if_match_lets_exactly_one_of_racing_writers_win(home: Path, clock: FakeClock) -> None:
    async def run(client: httpx.AsyncClient, app: object) -> list[int]:
        sid = (await client.post("/v1/sessions", json={"repo_root": "/srv/x"})).json()["id"]
        replies = await asyncio.gather(
            *(
                client.post(
                    f"/v1/sessions/{sid}/events", json=user(f"w{i}"), headers={"If-Match": '"0"'}
                )
                for i in range(10)
            )
        )
        return [r.status_code for r in replies]

    codes = asyncio.run(_concurrent(home, clock, run))
    assert sorted(codes) == [201] + [412] * 9


def test_delete_while_appends_are_in_flight(home: Path, clock: FakeClock) -> None:
    async def run(client: httpx.AsyncClient, app: object) -> tuple[list[int], int]:
        sid = (await client.post("/v1/sessions", json={"repo_root": "/srv/x"})).json()["id"]
        appends = [client.post(f"/v1/sessions/{sid}/events", json=user(f"m{i}")) for i in range(50)]
        results = await asyncio.gather(*appends, client.delete(f"/v1/sessions/{sid}"))
        codes = [r.status_code for r in results[:-1]]
        assert results[-1].status_code == 204
        restored = await client.post(f"/v1/sessions/{sid}/restore")
        return codes, restored.json()["events"]

    codes, events = asyncio.run(_concurrent(home, clock, run))
    assert set(codes) <= {201, 404}
    assert events == codes.count(201), "every acknowledged append is in the restored file"
