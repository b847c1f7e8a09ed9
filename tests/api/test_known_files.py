"""`POST /v1/sessions/import/known`: a file imported with its path, size and time is
known while it is unchanged and its sessions are here; anything else is not, and bad
input is a 422 that changes nothing."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from ..conftest import CLAUDE_SMALL, snapshot
from .test_errors import assert_problem

WHEN = "2026-01-02T03:04:05.678Z"


def test_a_file_is_known_as_it_was_imported_and_while_its_sessions_are_here(
    client: TestClient, home: Path
) -> None:
    data = CLAUDE_SMALL.read_bytes()
    where = "/home/me/.claude/projects/-srv-app/1af7fc5e.jsonl"
    r = client.post(
        "/v1/sessions/import", content=data, params={"path": where, "modified_at": WHEN}
    )
    [sid] = [s["id"] for s in r.json()["sessions"]]
    same = {"path": where, "size": len(data), "modified_at": WHEN}

    def known(*files: dict[str, object]) -> list[dict[str, object]]:
        r = client.post("/v1/sessions/import/known", json={"files": list(files)})
        assert r.status_code == 200, r.text
        return r.json()["known"]

    assert known(same) == [{"path": where, "sessions": [sid]}]
    assert known({**same, "size": len(data) + 1}) == []  # grown since
    assert known({**same, "modified_at": "2026-01-02T03:04:06.000Z"}) == []  # touched
    assert known({**same, "path": where + ".other"}) == []
    assert client.delete(f"/v1/sessions/{sid}").status_code == 204
    assert known(same) == []  # its session gone: sent again


def test_bad_input_is_a_422_that_changes_nothing(client: TestClient, home: Path) -> None:
    client.get("/v1/sessions").raise_for_status()
    before = snapshot(home)
    for body in (
        {"files": [{"path": "/a", "size": -1, "modified_at": WHEN}]},
        {"files": [{"path": "", "size": 1, "modified_at": WHEN}]},
        {"files": [{"path": "/a", "size": 1}]},
        {"files": "no"},
        {"files": [], "more": 1},
        {"files": [{"path": "/a", "size": 1, "modified_at": WHEN}] * 1001},  # a thousand at most
        {"files": [{"path": "/" + "a" * 4096, "size": 1, "modified_at": WHEN}]},
    ):
        r = client.post("/v1/sessions/import/known", json=body)
        assert_problem(r, 422)
    for path in ("", "/" + "a" * 4096):
        r = client.post("/v1/sessions/import", content=b"{}", params={"path": path})
        assert_problem(r, 422)
    assert snapshot(home) == before
