"""A start with the catalog present never opens a compressed transcript that has not
changed since it was indexed (what it holds is the indexed row's), and reads the frame
of one that has; either way the index holds what the file holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from aster_persist.index.catalog import files
from aster_persist.index.catalog.database import Catalog
from aster_persist.index.catalog.files import FileEntry
from aster_persist.storage.home import Home
from aster_persist.storage.transcripts import TranscriptStore

from ..conftest import stored_session

EVENTS = [{"type": "message", "role": "user", "content": f"kestrel {n}"} for n in range(30)]


def test_an_unchanged_compressed_transcript_is_never_opened_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TranscriptStore(Home.open(tmp_path / "home"))
    store.scan()
    sid = stored_session(store, EVENTS)
    size = store.live_path(sid).stat().st_size
    assert store.pack(sid, store.compress(sid), {})
    (tmp_path / "index").mkdir()
    catalog = Catalog(tmp_path / "index", store.path_of)

    opened: list[str] = []
    real = files.content_size_or_own
    monkeypatch.setattr(files, "content_size_or_own", lambda p: opened.append(p) or real(p))

    def start() -> dict[str, int]:
        return catalog.catch_up([FileEntry(*found) for found in store.scan()])

    assert start()["full"] == 1 and len(opened) == 1  # first seen: its frame read
    [info] = catalog.all()
    assert (info.file_size, info.events) == (size, 30)
    assert start()["unchanged"] == 1 and len(opened) == 1  # the next start opens nothing
    packed = store.live_path(sid)
    packed.touch()  # changed since: read again
    assert start()["unchanged"] == 0 and len(opened) == 2
    assert catalog.all()[0].file_size == size
    assert catalog.texts([1])  # and what it holds is read back from it
    catalog.close()
