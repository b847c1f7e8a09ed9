"""The catalog indexes what the daemon appended from the lines as they were written,
without reading them back from the file; what it does not hold whole (past what it may
hold, or another program's append) it reads from the file, as before."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from aster_persist.app import Built, build_sessions
from aster_persist.index.catalog import database, worker
from aster_persist.schemas.clock import utc_now
from aster_persist.schemas.validation import validate_events
from aster_persist.settings import Settings
from aster_persist.storage.home import Home
from aster_persist.storage.journal import Journal

from ..conftest import CLAUDE_SMALL


def events(*texts: str) -> list[dict[str, Any]]:
    return validate_events([{"type": "message", "role": "user", "content": t} for t in texts])


async def opened(root: Path) -> Built:
    home = Home.open(root)
    journal = Journal(home.root / "journal.jsonl", clock=utc_now)
    journal.open()
    built = build_sessions(home, Settings.model_construct(), journal)
    await built.sessions.start()
    await built.sessions.ready.wait()
    return built


def found(built: Built, word: str) -> list[int]:
    """The seqs whose indexed text holds ``word``."""
    rows = built.catalog.run(
        lambda catalog: catalog.db.execute(
            "SELECT seq FROM docs JOIN doc_text ON doc_text.rowid = docs.rowid"
            " WHERE doc_text MATCH ? ORDER BY seq",
            (word,),
        ).fetchall()
    )
    return [seq for (seq,) in rows]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The byte ranges the catalog reads back from transcripts."""
    seen: list[tuple[int, int]] = []
    real = database.read_bytes

    def counted(path: Path, start: int, end: int) -> bytes:
        seen.append((start, end))
        return real(path, start, end)

    monkeypatch.setattr(database, "read_bytes", counted)
    return seen


def test_appends_are_indexed_as_written_and_never_read_back(
    tmp_path: Path, reads: list[tuple[int, int]]
) -> None:
    async def test() -> None:
        built = await opened(tmp_path / "home")
        sessions = built.sessions
        sid = (await sessions.create(repo_root="/srv/x"))["id"]
        await sessions.append(sid, events("quokka one", "wombat two"), learn=False)
        assert found(built, "quokka") == [1] and found(built, "wombat") == [2]
        for n in range(3, 8):  # one flush or several: either way, as written
            await sessions.append(sid, events(f"numbat {n}"), learn=False)
        await sessions.append(sid, events("platypus last"), learn=False)
        assert found(built, "numbat") == [3, 4, 5, 6, 7] and found(built, "platypus") == [8]
        # an import written whole is indexed as written too
        with CLAUDE_SMALL.open("rb") as handle:
            done = await sessions.import_stream(handle, repo_root="/srv/y")
        [imported] = [s["id"] for s in done["sessions"]]
        rows = built.catalog.run(
            lambda catalog: catalog.db.execute(
                "SELECT count(*) FROM docs JOIN session_numbers k ON k.n = docs.session"
                " WHERE k.id = ?",
                (imported,),
            ).fetchone()
        )
        assert rows[0] > 0
        assert reads == []

        await sessions.close()
        sessions.home.close()

    asyncio.run(test())


def test_past_what_it_may_hold_the_index_reads_the_file(
    tmp_path: Path, reads: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "HELD_MAX", 100)  # bytes written and not yet indexed

    async def test() -> None:
        built = await opened(tmp_path / "home")
        sessions = built.sessions
        sid = (await sessions.create(repo_root="/srv/x"))["id"]
        await sessions.append(sid, events("quokka one", "wombat two", "numbat three"))
        assert found(built, "quokka") == [1] and found(built, "numbat") == [3]
        assert reads and reads[0][0] == 0  # the whole file, as nothing was held
        await sessions.append(sid, events("platypus four"), learn=False)
        assert found(built, "platypus") == [4] and found(built, "wombat") == [2]
        await sessions.close()
        sessions.home.close()

    asyncio.run(test())
