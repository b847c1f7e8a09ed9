"""Every JSON reply ends with a newline, so a terminal running the README's `curl` lines
shows each reply on its own line: the framework's routes, the fast path (append,
remember, recall) and problems alike, with a Content-Length that counts it."""

from __future__ import annotations

import httpx

from ..conftest import Daemon, user


def test_every_json_reply_ends_its_line(daemon: Daemon) -> None:
    with httpx.Client(base_url=daemon.url) as http:
        made = http.post("/v1/sessions", json={"repo_root": "/srv/lines"})
        sid = made.json()["id"]
        replies = {
            "create": made,
            "append (fast path)": http.post(f"/v1/sessions/{sid}/events", json=user("hi")),
            "list": http.get("/v1/sessions"),
            "remember (fast path)": http.post("/v1/memory/blocks", json={"content": "Port 5433."}),
            "note": http.post("/v1/memory/core/notes", json={"note": "Deploys on Fridays."}),
            "context": http.get("/v1/memory/context"),
            "problem": http.get("/v1/sessions/01ARZ3NDEKTSV4RRFFQ69G5FAV"),
            "bad body": http.post(f"/v1/sessions/{sid}/events", content=b"{"),
        }
        assert [r.status_code for r in replies.values()] == [201, 201, 200, 201, 201, 200, 404, 422]
        for what, reply in replies.items():
            kind = reply.headers["content-type"]
            assert "json" in kind, (what, kind)
            assert reply.content.endswith(b"}\n"), (what, reply.content[-20:])
            assert int(reply.headers["content-length"]) == len(reply.content), what
        export = http.get(f"/v1/sessions/{sid}/export")  # not JSON: its bytes as they are
        assert export.content.count(b"\n") == len(export.content.splitlines())
