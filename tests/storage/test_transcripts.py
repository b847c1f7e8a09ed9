"""The transcript store directly: sync passes, read-only state, file handles."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from aster_persist.errors import SessionReadOnly
from aster_persist.storage.home import Home
from aster_persist.storage.transcripts import AppendRequest, TranscriptStore

EVENT = {"type": "message", "role": "user", "content": "hi"}


def store_in(tmp_path: Path, **kwargs: object) -> TranscriptStore:
    home = Home.open(tmp_path / "home")
    store = TranscriptStore(home, **kwargs)  # type: ignore[arg-type]
    store.scan()
    return store


def open_session(store: TranscriptStore) -> str:
    header, writer = store.create(repo_root="/srv/x")
    sid = str(header["id"])
    store.install(sid, writer)
    return sid


def test_regression_one_file_is_never_in_two_sync_passes(tmp_path: Path) -> None:
    """Two fdatasyncs of one open file at once could let one miss the other's writeback error."""
    store = store_in(tmp_path)
    sid = open_session(store)
    store.append(AppendRequest(sid, [EVENT]))
    first = store.begin_sync()
    assert list(first.fds) == [sid]
    store.append(AppendRequest(sid, [EVENT]))
    second = store.begin_sync()
    assert second.fds == {}, "the session must wait for the pass it is in"
    store.sync_fds(first)
    store.end_sync(first)
    third = store.begin_sync()
    assert list(third.fds) == [sid]
    store.sync_fds(third)
    store.end_sync(third)
    assert store.acked(sid, store.writer(sid).size) is True  # type: ignore[union-attr]


def test_regression_synced_bytes_stay_acknowledged_after_a_later_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request whose bytes a successful pass covered got 500 once the session went read-only."""
    store = store_in(tmp_path)
    sid = open_session(store)
    _, covered = store.append(AppendRequest(sid, [EVENT]))
    good = store.begin_sync()
    store.sync_fds(good)
    store.end_sync(good)
    _, lost = store.append(AppendRequest(sid, [EVENT]))
    bad = store.begin_sync()

    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", failing)
    store.sync_fds(bad)
    store.end_sync(bad)
    assert store.acked(sid, covered) is True
    assert store.acked(sid, lost) is None
    assert os.path.getsize(store.writer(sid).path) == covered  # type: ignore[union-attr]
    with pytest.raises(SessionReadOnly):
        store.append(AppendRequest(sid, [EVENT]))


def test_regression_read_only_survives_trash_and_restore(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trashing and restoring a session lifted its read-only state before a restart."""
    store = store_in(tmp_path)
    sid = open_session(store)
    store.append(AppendRequest(sid, [EVENT]))
    sync = store.begin_sync()
    monkeypatch.setattr(
        os, "fdatasync", lambda fd: (_ for _ in ()).throw(OSError(errno.EIO, "EIO"))
    )
    store.sync_fds(sync)
    store.end_sync(sync)
    monkeypatch.undo()
    where = store.detach(sid)
    store.trash(sid, where)
    store.restore(sid)
    store.install(sid, store.load_writer(sid))
    with pytest.raises(SessionReadOnly):
        store.append(AppendRequest(sid, [EVENT]))


def test_regression_none_mode_does_not_pin_open_files(tmp_path: Path) -> None:
    """In `none` mode written sessions counted as waiting for a sync forever and were never closed."""
    store = store_in(tmp_path, durability="none", open_files=8)
    for _ in range(40):
        sid = open_session(store)
        store.append(AppendRequest(sid, [EVENT]))
    assert store.open_count <= 8
    assert not store.busy(sid)
