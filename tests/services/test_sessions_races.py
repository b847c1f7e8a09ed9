"""Sessions under the races and failures other writers bring: a purge during a read, a
prune racing a delete, a failed sync, a crash inside a batch."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from aster_persist.app import Built, build_sessions
from aster_persist.schemas.clock import utc_now
from aster_persist.schemas.validation import validate_events
from aster_persist.services.memory import Memory
from aster_persist.settings import Settings
from aster_persist.storage.home import Home
from aster_persist.storage.journal import Journal
from aster_persist.storage.transcripts import store as transcripts


def events(*texts: str) -> list[dict[str, Any]]:
    return validate_events([{"type": "message", "role": "user", "content": t} for t in texts])


async def opened(root: Path, **options: Any) -> Built:
    home = Home.open(root)
    journal = Journal(home.root / "journal.jsonl", clock=utc_now)
    journal.open()
    built = build_sessions(home, Settings.model_construct(**options), journal)
    await built.sessions.start()
    await built.sessions.ready.wait()
    return built


def run(test: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(test())


def test_a_read_that_a_purge_overtakes_is_not_found_or_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def test() -> None:
        built = await opened(tmp_path / "home")
        sessions = built.sessions
        sid = (await sessions.create(repo_root="/srv/x"))["id"]
        await sessions.append(sid, events("a"), learn=False)
        real = transcripts.parse

        def parse_while_purged(data: bytes, **kw: Any) -> Any:
            built.store.locations.pop(sid, None)  # the purge lands mid-read
            return real(data, **kw)

        monkeypatch.setattr(transcripts, "parse", parse_while_purged)
        parsed, info = built.store.read(sid)
        assert [line["seq"] for line in parsed.lines] == [0, 1]
        assert info.id == sid
        monkeypatch.undo()
        await sessions.close()

    run(test)


def test_a_prune_skips_what_someone_else_deleted_meanwhile(tmp_path: Path) -> None:
    async def test() -> None:
        built = await opened(tmp_path / "home")
        sessions = built.sessions
        ids = [(await sessions.create(repo_root="/srv/x"))["id"] for _ in range(3)]
        real = sessions.delete
        first = True

        async def delete_raced(sid: str, **kw: Any) -> Any:
            nonlocal first
            if first:  # another client deletes it between the listing and the prune
                first = False
                await real(sid)
            return await real(sid, **kw)

        sessions.delete = delete_raced  # type: ignore[method-assign]
        result = await sessions.prune(
            older_than_days=None, keep_latest=0, dry_run=False, purge_trash_older_than_days=None
        )
        assert len(result["trashed"]) == 2
        assert all(
            sid not in built.store.locations or built.store.locations[sid].trashed for sid in ids
        )
        await sessions.close()

    run(test)


def test_a_session_read_only_after_a_failed_sync_stays_so_in_the_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def test() -> None:
        built = await opened(tmp_path / "home", open_files=1)
        sessions = built.sessions
        sid = (await sessions.create(repo_root="/srv/x"))["id"]
        await sessions.append(sid, events("a"), learn=False)

        def broken(fd: int) -> None:
            raise OSError(errno.EIO, "I/O error")

        monkeypatch.setattr(os, "fdatasync", broken)
        with pytest.raises(Exception, match="read-only"):
            await sessions.append(sid, events("b"), learn=False)
        monkeypatch.undo()
        await sessions.create(repo_root="/srv/x")  # its writer closes the first one's
        page = await sessions.listing(limit=10)
        assert {info.id: info.state for info in page.items}[sid] == "read_only"
        await sessions.close()

    run(test)


def test_a_follower_is_never_sent_a_batch_a_crash_cut_short(tmp_path: Path) -> None:
    async def test() -> None:
        built = await opened(tmp_path / "home")
        sessions = built.sessions
        sid = (await sessions.create(repo_root="/srv/x"))["id"]
        await sessions.append(sid, events("a", "b", "c"), learn=False)
        path = built.store.live_path(sid)
        await sessions.close()
        sessions.home.close()
        data = path.read_bytes()
        path.write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 1])  # "c" never landed
        built = await opened(tmp_path / "home")
        sessions = built.sessions
        lines, offset = built.store.read_tail(sid, 0)
        assert [line["seq"] for line in lines] == [0]
        await sessions.append(sid, events("new"), learn=False)
        lines, _ = built.store.read_tail(sid, offset)
        assert [(line["seq"], line["content"]) for line in lines] == [(1, "new")]
        await sessions.close()

    run(test)


def test_a_retried_append_that_was_acknowledged_replays_whatever_came_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def test() -> None:
        built = await opened(tmp_path / "home")
        sessions = built.sessions
        sid = (await sessions.create(repo_root="/srv/x"))["id"]
        original = await sessions.append(sid, events("once"), key="K1", learn=False)

        def broken(fd: int) -> None:
            raise OSError(errno.EIO, "I/O error")

        monkeypatch.setattr(os, "fdatasync", broken)
        other = asyncio.create_task(sessions.append(sid, events("other"), learn=False))
        retry = await sessions.append(sid, events("once"), key="K1", learn=False)
        assert retry.replayed and (retry.first_seq, retry.last_seq) == (
            original.first_seq,
            original.last_seq,
        )
        with pytest.raises(Exception, match="could not be synced"):
            await other
        monkeypatch.undo()
        again = await sessions.append(sid, events("once"), key="K1", learn=False)
        assert again.replayed and again.last_seq == original.last_seq
        with pytest.raises(Exception, match="read-only"):
            await sessions.append(sid, events("new"), key="K2", learn=False)
        await sessions.close()

    run(test)


def test_an_append_cancelled_while_its_file_opens_leaves_nothing_open_or_broken(
    tmp_path: Path,
) -> None:
    async def test() -> None:
        built = await opened(tmp_path / "home")
        sessions = built.sessions
        sid = (await sessions.create(repo_root="/srv/x"))["id"]
        built.store.release(sid)  # as the open-files limit, or a restart, leaves it
        real = built.store.load_writer
        opening = threading.Event()

        def slow_load(session_id: str) -> Any:
            opening.set()
            time.sleep(0.2)
            return real(session_id)

        built.store.load_writer = slow_load  # type: ignore[method-assign]
        before = len(os.listdir("/proc/self/fd"))
        first = asyncio.create_task(sessions.append(sid, events("a"), learn=False))
        await asyncio.to_thread(opening.wait)
        second = asyncio.create_task(sessions.append(sid, events("b"), learn=False))
        await asyncio.sleep(0.01)
        first.cancel()  # the client that asked first went away
        with pytest.raises(asyncio.CancelledError):
            await first
        assert (await second).last_seq == 1
        assert built.store.writer(sid) is not None
        assert len(os.listdir("/proc/self/fd")) == before + 1  # the one installed writer
        await sessions.close()

    run(test)


def test_a_sync_that_cannot_start_for_want_of_descriptors_starts_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def test() -> None:
        built = await opened(tmp_path / "home")
        sessions = built.sessions
        ids = [(await sessions.create(repo_root="/srv/x"))["id"] for _ in range(3)]
        real = os.dup
        failures = 3

        def dup(fd: int) -> int:
            nonlocal failures
            if failures:
                failures -= 1
                if failures == 1:  # some descriptors were taken before this one failed
                    raise OSError(errno.EMFILE, "Too many open files")
            return real(fd)

        before = len(os.listdir("/proc/self/fd"))
        monkeypatch.setattr(os, "dup", dup)
        results = await asyncio.wait_for(
            asyncio.gather(*(sessions.append(sid, events("x"), learn=False) for sid in ids)), 10
        )
        monkeypatch.undo()
        assert [r.last_seq for r in results] == [1, 1, 1]
        assert len(os.listdir("/proc/self/fd")) == before
        await sessions.close()

    run(test)


def test_the_same_file_imported_twice_at_once_is_imported_once(tmp_path: Path) -> None:
    fixture = Path(__file__).parents[1] / "fixtures" / "openai-chat" / "tau-bench"
    data = next(fixture.glob("*.json")).read_bytes()

    async def test() -> None:
        built = await opened(tmp_path / "home")
        sessions = built.sessions
        first, second = await asyncio.gather(
            sessions.import_file(data, repo_root="/srv/x"),
            sessions.import_file(data, repo_root="/srv/x"),
        )
        total = len(first["sessions"])
        assert first["imported"] + second["imported"] == total
        assert first["already_imported"] + second["already_imported"] == total
        live = [sid for sid, where in built.store.locations.items() if not where.trashed]
        assert len(live) == total
        await sessions.close()

    run(test)


def test_an_extraction_applied_again_after_a_crash_writes_nothing_twice(tmp_path: Path) -> None:
    from aster_persist.learning.learner import Learner, normal_item
    from aster_persist.learning.queue import JobQueue
    from aster_persist.storage.memory import MemoryStore

    from ..conftest import snapshot

    item = {
        "type": "semantic",
        "title": "Indent with tabs",
        "content": "The user prefers tabs.",
        "importance": 0.8,
        "confidence": 0.9,
        "scope": "project",
        "tags": ["style"],
        "reason": "Every edit follows it.",
    }

    async def test() -> None:
        built = await opened(tmp_path / "home")
        sessions = built.sessions
        journal = built.journal
        assert journal is not None
        memory = MemoryStore(sessions.home, journal, clock=utc_now)
        memory.load()
        built.catalog.memory_doc = memory.index_doc
        service = Memory(memory, built.committer)
        learner = Learner(sessions, service, JobQueue(sessions.home.root / "queue"), None)
        sid = (await sessions.create(repo_root="/srv/x"))["id"]
        # an item merged into a block that was there, one written, one rejected
        await built.committer.call(
            memory.write_block,
            memory.scope_for("/srv/x"),
            "known",
            body="Builds run with make.\n",
            meta={},
        )
        merged = {**item, "title": "Builds", "content": "Builds run with make."}
        job = {
            "id": "job-1",
            "session": sid,
            "result": {
                "accepted": [normal_item(item), normal_item(merged)],
                "rejected": [{"item": {"title": "x"}, "reason": "reason is missing"}],
                "first_seq": 1,
                "last_seq": 2,
                "repo_root": "/srv/x",
            },
        }
        await learner.apply(job)
        files, entries = snapshot(tmp_path / "home" / "memory"), len(journal.entries())
        await learner.apply(job, again=True)  # the crash came before the job was marked done
        assert snapshot(tmp_path / "home" / "memory") == files
        assert len(journal.entries()) == entries
        await sessions.close()

    run(test)


def test_a_large_source_imported_twice_at_once_is_written_once(tmp_path: Path) -> None:
    """Two imports of one JSON Lines source at once (each written a batch at a time):
    the second waits for the first, finds every record written, and adds nothing."""
    from ..e2e.test_import_large import big_transcript

    source = tmp_path / "big.jsonl"
    big_transcript(source, 3 << 20)
    data = source.read_bytes()

    async def test() -> None:
        built = await opened(tmp_path / "home")
        sessions = built.sessions
        first, second = await asyncio.gather(sessions.import_file(data), sessions.import_file(data))
        assert sorted([first["imported"], second["imported"]]) == [0, 1]
        [made] = first["sessions"] if first["imported"] else second["sessions"]
        lines, _raw, info = await sessions.read(made["id"], inline=False)
        keys = [line["idempotency_key"] for line in lines[1:]]
        assert info.events == made["events"] == len(set(keys)) == len(keys) > 1000
        await sessions.close()

    run(test)
