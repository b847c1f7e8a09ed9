"""The sessions service tells its listeners of every durable append, and only of those:
its own appends, an import's sessions and what another program appended, each once,
in order; a listener that fails costs nobody else."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson

from aster_persist.services.sessions import Appended, Sessions

from .test_sessions_races import events, opened


def listening(sessions: Sessions) -> list[Appended]:
    heard: list[Appended] = []
    sessions.listeners.append(heard.append)
    return heard


def test_an_append_is_announced_once_with_its_events_and_a_retry_is_not(tmp_path: Path) -> None:
    async def test() -> None:
        built = await opened(tmp_path / "home")
        sessions = built.sessions
        heard = listening(sessions)
        sid = (await sessions.create(repo_root="/srv/app"))["id"]
        batch = events("one", "two")
        await sessions.append(sid, batch, key="k1")
        await sessions.append(sid, batch, key="k1")  # the same key: a replay
        await sessions.append(sid, events("three"), learn=False)
        assert [(n.first_seq, n.last_seq, n.learn) for n in heard] == [(1, 2, True), (3, 3, False)]
        first = heard[0]
        assert first.session_id == sid and first.scope.startswith("project:")
        assert first.events is not None and [e["content"] for e in first.events] == ["one", "two"]
        assert first.wire() == {
            "session_id": sid,
            "scope": first.scope,
            "first_seq": 1,
            "last_seq": 2,
            "kinds": ["message"],
        }
        await sessions.close()

    asyncio.run(test())


def test_an_import_is_announced_without_learning(tmp_path: Path) -> None:
    async def test() -> None:
        built = await opened(tmp_path / "home")
        sessions = built.sessions
        heard = listening(sessions)
        exported = [
            {"type": "session", "id": "01J0000000000000000000000A", "v": 1,
             "created_at": "2026-01-01T00:00:00Z", "repo_root": "/srv/old"},
            {"type": "message", "role": "user", "content": "old question", "seq": 1,
             "ts": "2026-01-01T00:00:01Z"},
        ]  # fmt: skip
        data = b"".join(orjson.dumps(line) + b"\n" for line in exported)
        result = await sessions.import_file(data, format="native")
        assert result["imported"] == 1
        (notice,) = heard
        assert (notice.first_seq, notice.last_seq, notice.learn) == (1, 1, False)
        assert notice.kinds == ["message"]
        await sessions.import_file(data, format="native")  # already here: nothing new
        assert len(heard) == 1
        await sessions.close()

    asyncio.run(test())


def test_what_another_program_appended_is_announced_with_its_kinds(tmp_path: Path) -> None:
    async def test() -> None:
        built = await opened(tmp_path / "home")
        sessions = built.sessions
        sid = (await sessions.create(repo_root="/srv/app"))["id"]
        await sessions.append(sid, events("mine"), learn=False)
        heard = listening(sessions)
        where = built.store.locations[sid]
        path = sessions.home.session_path(where.slug, sid)
        line: dict[str, Any] = {
            "type": "summary",
            "content": "written by another program",
            "through_seq": 1,
            "seq": 2,
            "ts": "2026-01-01T00:00:02Z",
        }
        with open(path, "ab") as handle:
            handle.write(orjson.dumps(line) + b"\n")
        await sessions.reconcile([path])
        (notice,) = heard
        assert (notice.first_seq, notice.last_seq, notice.events) == (2, 2, None)
        assert notice.kinds == ["summary"] and not notice.learn
        await sessions.close()

    asyncio.run(test())


def test_a_listener_that_fails_costs_the_append_and_the_others_nothing(tmp_path: Path) -> None:
    async def test() -> None:
        built = await opened(tmp_path / "home")
        sessions = built.sessions

        def broken(notice: Appended) -> None:
            raise RuntimeError("a listener's own bug")

        sessions.listeners.append(broken)
        heard = listening(sessions)
        sid = (await sessions.create(repo_root="/srv/app"))["id"]
        result = await sessions.append(sid, events("still durable"))
        assert result.last_seq == 1 and [n.last_seq for n in heard] == [1]
        lines, _raw, _info = await sessions.read(sid)
        assert lines[-1]["content"] == "still durable"
        await sessions.close()

    asyncio.run(test())
