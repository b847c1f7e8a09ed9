"""``GET /v1/sessions/running``: the sessions being written now. An append written here
makes a session run for the window after it; an import of old history does not, lines
of now from another tool do; a session deleted or past its window is not listed."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from aster_persist.services.sessions import Activity, Appended
from aster_persist.services.sessions.activity import FORGET_PAST

from ..conftest import CLAUDE_SMALL, FakeClock, make_client

NOW = datetime(2026, 12, 5, 12, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
def client(tmp_path: Path, clock: FakeClock) -> TestClient:
    with make_client(tmp_path / "home", clock, running_seconds=60) as c:
        yield c


def running(client: TestClient) -> list[str]:
    r = client.get("/v1/sessions/running")
    assert r.status_code == 200, r.text
    assert r.json()["window_seconds"] == 60
    return [s["id"] for s in r.json()["items"]]


def written(client: TestClient, text: str = "go") -> str:
    sid = str(client.post("/v1/sessions", json={"repo_root": "/srv/run"}).json()["id"])
    r = client.post(
        f"/v1/sessions/{sid}/events", json={"type": "message", "role": "user", "content": text}
    )
    assert r.status_code == 201, r.text
    return sid


def test_an_append_runs_a_session_for_the_window_after_it(
    client: TestClient, clock: FakeClock
) -> None:
    assert running(client) == []
    first = written(client)
    clock.advance(seconds=30)
    second = written(client)
    assert running(client) == [second, first]  # the latest first
    item = client.get("/v1/sessions/running").json()["items"][0]
    assert item["last_append"] == "2026-12-05T12:00:30.000Z"
    assert item["turns"] == 1 and item["repo_root"] == "/srv/run"  # a whole summary
    clock.advance(seconds=31)  # the first's window has passed, not the second's
    assert running(client) == [second]
    client.post(
        f"/v1/sessions/{first}/events",
        json={"type": "message", "role": "assistant", "content": "back"},
    )
    assert running(client) == [first, second]
    clock.advance(seconds=61)
    assert running(client) == []


def test_an_import_of_old_history_is_not_running_and_lines_of_now_are(
    client: TestClient, clock: FakeClock
) -> None:
    old = CLAUDE_SMALL.read_bytes()
    r = client.post("/v1/sessions/import", content=old, params={"repo_root": "/srv/run"})
    assert r.status_code == 201, r.text
    assert running(client) == []
    now = re.sub(rb'"timestamp":"[^"]+"', b'"timestamp":"2026-12-05T11:59:50.000Z"', old)
    now = now.replace(
        b"1af7fc5e-8455-4414-9ccd-011d40f70b2a", b"2af7fc5e-8455-4414-9ccd-011d40f70b2a"
    )
    r = client.post("/v1/sessions/import", content=now, params={"repo_root": "/srv/run"})
    assert r.status_code == 201, r.text
    assert running(client) == [r.json()["sessions"][0]["id"]]


def test_a_deleted_session_is_not_running(client: TestClient) -> None:
    kept, gone = written(client), written(client)
    assert client.delete(f"/v1/sessions/{gone}").status_code == 204
    assert running(client) == [kept]


def test_what_ran_before_is_forgotten_even_when_no_one_asks(clock: FakeClock) -> None:
    activity = Activity(60, clock)
    for n in range(FORGET_PAST):
        activity.appended(Appended(f"old-{n}", "project:x", 1, 1))
    clock.advance(seconds=61)
    activity.appended(Appended("new", "project:x", 1, 1))  # past the bound: the old go
    assert len(activity) == 1
    assert list(activity.running()) == ["new"]
