"""What the storage tests share: a memory store on real files in tmp_path, with a real
journal and the fake clock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aster_persist.storage.home import Home
from aster_persist.storage.journal import Journal
from aster_persist.storage.memory import MemoryStore

from ..conftest import FakeClock


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[MemoryStore]:
    home = Home.open(tmp_path / "home")
    journal = Journal(home.root / "journal.jsonl", clock=clock, durable=False)
    journal.open()
    memory = MemoryStore(home, journal, clock=clock)
    memory.load()
    yield memory
    journal.close()
    home.close()
