"""When a project's session ends, a consolidation pass is due: idle for the set time, or
a new session in the project; at most one a project in the interval (a fake clock)."""

from __future__ import annotations

from typing import Any

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
    due.tick()  # a's second boundary within the interval: no pass; b's first: a pass
    assert [j["scope"] for j in jobs] == ["project:a", "project:b"]
    clock.now += 3600
    due.touched("project:a")
    due.started("project:a")
    assert [j["scope"] for j in jobs] == ["project:a", "project:b", "project:a"]
