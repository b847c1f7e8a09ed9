"""The group committer under load from other sessions."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aster_persist.app import build_sessions
from aster_persist.schemas.clock import utc_now
from aster_persist.schemas.validation import validate_events
from aster_persist.settings import Settings
from aster_persist.storage.home import Home
from aster_persist.storage.journal import Journal

EVENT = validate_events([{"type": "message", "role": "user", "content": "x"}])


def test_deleting_a_session_does_not_wait_for_other_sessions_to_go_quiet(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        home = Home.open(tmp_path / "home")
        journal = Journal(home.root / "journal.jsonl", clock=utc_now)
        journal.open()
        sessions = build_sessions(home, Settings(), journal).sessions
        await sessions.start()
        await sessions.ready.wait()
        busy = (await sessions.create(repo_root="/srv/x"))["id"]
        quiet = (await sessions.create(repo_root="/srv/x"))["id"]
        stop = False

        async def appender() -> None:
            while not stop:
                await sessions.append(busy, list(EVENT), learn=False)

        workers = [asyncio.create_task(appender()) for _ in range(4)]
        await asyncio.sleep(0.2)
        last = asyncio.create_task(sessions.append(quiet, list(EVENT), learn=False))
        await asyncio.sleep(0)
        # Before, the delete waited until no session at all had a write in flight.
        await asyncio.wait_for(sessions.delete(quiet), 10)
        assert (await last).last_seq == 1  # its append was acknowledged first
        stop = True
        await asyncio.gather(*workers)
        await sessions.close()
        journal.close()

    asyncio.run(main())
