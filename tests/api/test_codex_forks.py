"""A Codex fork: its rollout begins with its own header (naming the parent in
``forked_from_id``), then replays the parent's rollout, header and all, at the time of
the fork, then goes on. It is a session of its own, linked to its parent, and refers to
the parent's events instead of holding them again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from fastapi.testclient import TestClient

from ..conftest import FIXTURES, make_client

PARENT = next((FIXTURES / "codex").rglob("*.jsonl")).read_bytes()
CHILD = "019e2000-0000-7000-8000-00000000f0c1"


def fork_of(parent: bytes, child: str = CHILD) -> bytes:
    """The rollout Codex writes when ``parent`` is forked, and a turn after it."""
    records = [orjson.loads(line) for line in parent.splitlines()]
    meta = records[0]
    own = {
        "timestamp": "2026-05-12T09:00:00.000Z",
        "type": "session_meta",
        "payload": {
            **meta["payload"],
            "id": child,
            "forked_from_id": meta["payload"]["id"],
            "timestamp": "2026-05-12T09:00:00.000Z",
        },
    }
    replayed = [{**record, "timestamp": "2026-05-12T09:00:00.020Z"} for record in records]
    more = [
        {
            "timestamp": "2026-05-12T09:01:00.000Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": role,
                "content": [{"type": f"{kind}_text", "text": text}],
            },
        }
        for role, kind, text in (
            ("user", "input", "and now the fork goes its own way"),
            ("assistant", "output", "going my own way"),
        )
    ]
    return b"".join(orjson.dumps(r) + b"\n" for r in [own, *replayed, *more])


def imported(client: TestClient, data: bytes) -> dict[str, Any]:
    r = client.post("/v1/sessions/import", content=data)
    assert r.status_code in (200, 201), r.text
    [session] = r.json()["sessions"]
    return dict(session)


def said(client: TestClient, sid: str) -> list[tuple[Any, ...]]:
    """A session's messages as said (their times aside: a replay's are the fork's)."""
    messages = client.get(f"/v1/sessions/{sid}/messages").json()["messages"]
    return [(m["role"], m.get("content"), str(m.get("tool_calls"))) for m in messages]


def transcript(home: Path, sid: str) -> Path:
    [path] = [p for p in (home / "sessions").rglob(f"{sid}.jsonl*") if ".trash" not in p.parts]
    return path


def test_a_fork_is_a_session_of_its_own_whichever_is_imported_first(
    home: Path, tmp_path: Path
) -> None:
    fork = fork_of(PARENT)
    with make_client(tmp_path / "alone") as client:
        alone = {name: said(client, imported(client, data)["id"]) for name, data in
                 (("parent", PARENT), ("fork", fork))}  # fmt: skip
    for order in (("parent", "fork"), ("fork", "parent")):
        with make_client(home / "-".join(order)) as client:
            data = {"parent": PARENT, "fork": fork}
            got = {name: imported(client, data[name]) for name in order}
            assert [s["status"] for s in got.values()] == ["imported", "imported"]
            assert got["fork"]["id"] != got["parent"]["id"]
            assert {name: said(client, s["id"]) for name, s in got.items()} == alone
            detail = client.get(f"/v1/sessions/{got['fork']['id']}").json()
            assert (
                detail["header"]["x_import"]["forked_from"]
                == orjson.loads(PARENT.splitlines()[0])["payload"]["id"]
            )


def test_a_fork_imported_after_its_parent_refers_to_what_it_replays(home: Path) -> None:
    fork = fork_of(PARENT)
    with make_client(home) as client:
        parent = imported(client, PARENT)["id"]
        child = imported(client, fork)
        assert child["fork_of"] == parent
        header = orjson.loads(transcript(home, child["id"]).read_bytes().split(b"\n")[0])
        assert header["base"]["session"] == parent
        assert transcript(home, child["id"]).stat().st_size <= 0.1 * len(fork)
        shown = client.get(f"/v1/sessions/{child['id']}/events?raw=false").json()["events"]
        stored = client.get(f"/v1/sessions/{parent}/events?raw=false").json()["events"]
        through = header["base"]["through_seq"]
        # what it shares is shown as the parent said it, when it was said
        assert shown[:through] == stored[:through]
        assert shown[-1]["content"] == "going my own way"
        before = said(client, child["id"])
        assert client.delete(f"/v1/sessions/{parent}").status_code == 204
        assert "base" not in orjson.loads(
            transcript(home, child["id"]).read_bytes().split(b"\n")[0]
        )
        assert said(client, child["id"]) == before
