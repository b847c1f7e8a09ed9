"""Joining a team is refused at start with a clear message when its settings are wrong,
and a client can never make a session pass for a team's copy: ``machine`` and
``project_key`` in a create are a 422 that writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from aster_persist.settings import Settings


def test_team_settings_are_checked(tmp_path: Path) -> None:
    given = Settings(home=tmp_path, team_url="nats://a:4222, tls://b:4222", machine="lap-1.x")
    assert given.team_url == ["nats://a:4222", "tls://b:4222"] and given.machine == "lap-1.x"
    assert Settings(home=tmp_path).team_url == [] and Settings(home=tmp_path).machine
    with pytest.raises(ValidationError, match="nats://host:port"):
        Settings(home=tmp_path, team_url="http://a:4222")
    with pytest.raises(ValidationError, match="machine"):
        Settings(home=tmp_path, machine="my laptop")


@pytest.mark.parametrize("field", ["machine", "project_key"])
def test_a_client_cannot_create_a_copy(client: TestClient, home: Path, field: str) -> None:
    r = client.post("/v1/sessions", json={"repo_root": "/srv/x", field: "laptop"})
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert field in r.text
    assert not list((home / "sessions").glob("*/*.jsonl"))
