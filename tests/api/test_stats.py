"""``GET /v1/stats``: what the sessions did and cost over a span of days, in total and by
day, project or model, read from the catalog; cost an estimate from the price table (its
source and date named), a model without a price counted and named, never priced."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ..conftest import FakeClock, make_client


def turn(ts: str, model: str, tokens_in: int, tokens_out: int, cached: int = 0) -> dict[str, Any]:
    usage = {"input_tokens": tokens_in, "output_tokens": tokens_out}
    if cached:
        usage["cached_input_tokens"] = cached
    return {
        "type": "message",
        "role": "assistant",
        "ts": ts,
        "model": model,
        "content": "done",
        "usage": usage,
        "tool_calls": [
            {"id": f"c{ts}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        ],
    }


def user(ts: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "ts": ts, "content": "go"}


def failed(ts: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "tool",
        "ts": ts,
        "tool_call_id": f"c{ts}",
        "content": "boom",
        "is_error": True,
    }


def session(client: TestClient, root: str, events: list[dict[str, Any]]) -> str:
    sid = client.post("/v1/sessions", json={"repo_root": root}).json()["id"]
    r = client.post(f"/v1/sessions/{sid}/events", json=events)
    assert r.status_code == 201, r.text
    return str(sid)


@pytest.fixture
def spent(tmp_path: Path) -> TestClient:
    clock = FakeClock(datetime(2026, 12, 5, 12, tzinfo=UTC))
    with make_client(tmp_path / "home", clock) as client:
        today, yesterday = "2026-12-05T10:00:00Z", "2026-12-04T10:00:00Z"
        session(
            client,
            "/srv/app",
            [
                user(today),
                turn(today, "claude-sonnet-4-20250514", 1_000_000, 100_000, cached=800_000),
                failed(today),
                turn(yesterday, "claude-opus-4-1-20250805", 10_000, 1_000),
            ],
        )
        session(client, "/srv/lib", [user(today), turn(today, "mystery-model", 5_000, 500)])
        yield client


def test_today_by_default_with_cache_reads_apart_and_an_estimated_cost(spent: TestClient) -> None:
    r = spent.get("/v1/stats")
    assert r.status_code == 200, r.text
    found = r.json()
    assert (found["since"], found["until"]) == ("2026-12-05", "2026-12-05")
    total = found["total"]
    assert total["sessions"] == 2 and total["turns"] == 4 and total["tool_calls"] == 2
    assert total["tool_errors"] == 1
    assert (total["tokens_in"], total["tokens_out"], total["cached_in"]) == (
        1_005_000,
        100_500,
        800_000,
    )
    # sonnet: 200k fresh at $3, 800k cached at $0.30, 100k out at $15 a million
    assert total["cost_usd"] == pytest.approx(0.6 + 0.24 + 1.5)
    assert total["unpriced_models"] == ["mystery-model"]
    assert found["prices"]["source"].startswith("https://") and found["prices"]["date"]


def test_a_session_says_what_it_cost_and_the_prices_of_its_models(spent: TestClient) -> None:
    everything = {"since": "2026-01-01", "until": "2026-12-31", "group": "project"}
    groups = {g["key"]: g for g in spent.get("/v1/stats", params=everything).json()["groups"]}
    for item in spent.get("/v1/sessions").json()["items"]:
        cost = spent.get(f"/v1/sessions/{item['id']}").json()["cost"]
        found = groups[item["repo_root"]]  # one session per project: the same sums
        assert cost["cost_usd"] == (
            None if found["cost_usd"] is None else pytest.approx(found["cost_usd"])
        )
        assert cost["unpriced_models"] == found["unpriced_models"]
        if item["repo_root"] == "/srv/app":  # sonnet today, opus yesterday
            assert cost["cost_usd"] == pytest.approx(
                0.6 + 0.24 + 1.5 + (10_000 * 15 + 1_000 * 75) / 1e6
            )
            sonnet = cost["prices"]["claude-sonnet-4-20250514"]
            assert (sonnet["input"], sonnet["cached_input"], sonnet["output"]) == (3, 0.3, 15)
            assert set(cost["prices"]) == {"claude-sonnet-4-20250514", "claude-opus-4-1-20250805"}
        else:  # a model without a price: named, never priced
            assert cost == {"cost_usd": None, "unpriced_models": ["mystery-model"], "prices": {}}


def test_grouped_by_day_project_and_model(spent: TestClient) -> None:
    week = {"since": "2026-11-29", "until": "2026-12-05"}  # the last day counted too
    days = spent.get("/v1/stats", params={**week, "group": "day"}).json()["groups"]
    assert [(g["key"], g["turns"]) for g in days] == [("2026-12-04", 1), ("2026-12-05", 4)]
    assert days[0]["cost_usd"] == pytest.approx((10_000 * 15 + 1_000 * 75) / 1e6)
    models = spent.get("/v1/stats", params={**week, "group": "model"}).json()["groups"]
    by_model = {g["key"]: g for g in models}
    assert by_model["mystery-model"]["cost_usd"] is None  # counted, never priced
    assert by_model["mystery-model"]["tokens_in"] == 5_000
    assert by_model[None]["turns"] == 2  # the users' turns: no model
    projects = spent.get("/v1/stats", params={**week, "group": "project"}).json()
    assert {g["key"]: g["sessions"] for g in projects["groups"]} == {"/srv/app": 1, "/srv/lib": 1}
    total = projects["total"]
    assert total["turns"] == sum(g["turns"] for g in projects["groups"])
    assert total["cost_usd"] == pytest.approx(sum(g["cost_usd"] or 0 for g in projects["groups"]))
    one = spent.get("/v1/stats", params={**week, "repo_root": "/srv/lib"}).json()["total"]
    assert one["sessions"] == 1 and one["cost_usd"] is None


def test_prices_are_overridden_by_the_setting(tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 12, 5, 12, tzinfo=UTC))
    prices = {"mystery-model": {"input": 1.0, "output": 2.0}}
    with make_client(tmp_path / "home", clock, prices=prices) as client:
        session(client, "/srv/lib", [turn("2026-12-05T10:00:00Z", "mystery-model", 5_000, 500)])
        found = client.get("/v1/stats").json()
    assert found["total"]["cost_usd"] == pytest.approx((5_000 * 1 + 500 * 2) / 1e6)
    assert found["prices"]["overridden"] == ["mystery-model"]


@pytest.mark.parametrize(
    "params", [{"since": "yesterday"}, {"until": "0"}, {"since": "2026-1-5"}, {"group": "week"}]
)
def test_bad_days_and_groups_are_refused(spent: TestClient, params: dict[str, str]) -> None:
    r = spent.get("/v1/stats", params=params)
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem")


def test_a_span_that_ends_before_it_starts_counts_nothing(spent: TestClient) -> None:
    found = spent.get("/v1/stats", params={"since": "2026-12-05", "until": "2026-12-04"}).json()
    assert found["total"]["sessions"] == 0 and found["total"]["cost_usd"] is None
    edge = spent.get("/v1/stats", params={"since": "2026-12-05", "until": "9999-12-31"}).json()
    assert edge["total"]["turns"] == 4


@pytest.mark.parametrize(
    ("price", "said"),
    [({"inptu": 1.0, "output": 2.0}, "'inptu' is not one of"), ({"output": 2.0}, "needs input")],
)
def test_a_price_that_cannot_be_used_is_refused_at_start(
    tmp_path: Path, price: dict[str, float], said: str
) -> None:
    with pytest.raises(ValueError, match=said):
        make_client(tmp_path / "home", prices={"house-model": price})
