"""The journal after a failed write or sync: the entry is not there, and the ones after it
are found, also after a restart."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from aster_persist.schemas.clock import utc_now
from aster_persist.storage.journal import Journal


@pytest.mark.parametrize("failure", ["fdatasync", "short write then ENOSPC"])
def test_a_failed_entry_leaves_no_trace_and_later_ones_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    path = tmp_path / "journal.jsonl"
    journal = Journal(path, clock=utc_now)
    journal.open()
    journal.record("memory.write", scope="global", name="a")
    if failure == "fdatasync":

        def broken_sync(fd: int) -> None:
            raise OSError(errno.EIO, "I/O error")

        monkeypatch.setattr(os, "fdatasync", broken_sync)
    else:
        real_write = os.write
        calls = []

        def short_write(fd: int, data: bytes) -> int:
            calls.append(fd)
            if len(calls) == 1:
                return real_write(fd, bytes(data[:10]))
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(os, "write", short_write)
    with pytest.raises(OSError):
        journal.record("memory.write", scope="global", name="failed")
    monkeypatch.undo()
    later = journal.record("memory.write", scope="global", name="c")
    assert [e["name"] for e in journal.entries()] == ["a", "c"]
    assert journal.get(later["id"]) is not None
    journal.close()
    again = Journal(path, clock=utc_now)
    again.open()
    assert [e["name"] for e in again.entries()] == ["a", "c"]
    again.close()
