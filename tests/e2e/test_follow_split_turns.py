"""Following a live Claude Code file on a real daemon: the agent's writes stop inside
turns written over several records, and each read takes the file as far as it goes.
The session shows each turn once and whole, as one import of the finished file does."""

from __future__ import annotations

from pathlib import Path

import httpx

from aster_persist.schemas.rendering import unretracted

from ..api.test_import_split_turns import CUTS, RECORDS
from ..conftest import Daemon, make_client, wait_until
from .test_follow import cli, sessions, taken_in


def shown(lines: list[dict]) -> list[tuple]:
    return [
        (e.get("type"), e.get("role"), e.get("content"), str(e.get("tool_calls")))
        for e in unretracted(lines)
    ]


def test_a_followed_file_cut_inside_turns_shows_each_turn_once(tmp_path: Path) -> None:
    with make_client(tmp_path / "whole") as client:
        client.post("/v1/sessions/import", content=b"".join(RECORDS))
        [one] = client.get("/v1/sessions").json()["items"]
        whole = client.get(f"/v1/sessions/{one['id']}/events", params={"limit": 10_000})
        expected = shown(whole.json()["events"])
    home, agent = tmp_path / "home", tmp_path / "agent" / "projects" / "demo"
    agent.mkdir(parents=True)
    daemon = Daemon(home).start()
    try:
        assert cli(home, "add", str(agent.parents[0])).returncode == 0
        source = agent / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
        written = 0
        for end in [*CUTS[:4], len(RECORDS)]:  # the agent stops mid-turn, then goes on
            with source.open("ab") as handle:
                handle.write(b"".join(RECORDS[written:end]))
            written = end
            wait_until(lambda: taken_in(home, source) == source.stat().st_size)
        [made] = sessions(daemon.url)
        events = httpx.get(
            f"{daemon.url}/v1/sessions/{made['id']}/events", params={"limit": 10_000}
        ).json()["events"]
        assert shown(events) == expected
    finally:
        daemon.stop()
