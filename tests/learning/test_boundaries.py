"""When a project's session ends, a consolidation pass is due: idle for the set time, or
a new session in the project; at most one a project in the interval (a fake clock)."""

from __future__ import annotations

from typing import Any

import pytest

from aster_persist.learning.boundaries import Boundaries


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def made() -> tuple[Boundaries, list[dict[str, Any]], Clock]:
    jobs: list[dict[str, Any]] = []
    clock = Clock()
    return Boundaries(jobs.append, idle=600, min_interval=3600, clock=clock), jobs, clock


def test_idle_for_the_set_time_makes_one_pass_due() -> None:
    due, jobs, clock = made()
    due.touched("project:a")
    clock.now += 599
    due.tick()
    assert jobs == []
    due.touched("project:a")  # still going on
    clock.now += 599
    due.tick()
    assert jobs == []
    clock.now += 1
    due.tick()
    due.tick()
    assert jobs == [
        {
            "kind": "consolidate",
            "scope": "project:a",
            "trigger": "no activity in the project for 10 min",
        }
    ]


def test_a_new_session_ends_the_one_before_and_the_interval_is_the_budget() -> None:
    due, jobs, clock = made()
    due.started("project:a")  # no session before it: nothing ended
    assert jobs == []
    due.touched("project:a")
    due.touched("project:b")
    due.started("project:a")
    assert [(j["scope"], j["trigger"]) for j in jobs] == [
        ("project:a", "a new session started in the project")
    ]
    due.touched("project:a")
    clock.now += 600
    due.tick()  # a's second boundary within the interval: held back; b's first: a pass
    assert [j["scope"] for j in jobs] == ["project:a", "project:b"]
    clock.now += 2999
    due.tick()  # a is still idle, and its pass still within the interval
    assert len(jobs) == 2
    clock.now += 1
    due.tick()  # the interval over, the idle project's pass held back is queued, once
    due.tick()
    assert [j["scope"] for j in jobs] == ["project:a", "project:b", "project:a"]


def test_a_pass_that_cannot_be_queued_uses_no_budget() -> None:
    clock = Clock()
    queued: list[dict[str, Any]] = []

    def put(job: dict[str, Any]) -> None:
        if not queued and job.get("failing") is None:
            queued.append({"failing": True})
            raise OSError("the queue's disk is full")
        queued.append(job)

    due = Boundaries(put, idle=600, min_interval=3600, clock=clock)
    due.touched("project:a")
    clock.now += 600
    with pytest.raises(OSError):
        due.tick()
    assert "project:a" in due.active  # still due
    due.tick()
    assert [j.get("scope") for j in queued] == [None, "project:a"]
