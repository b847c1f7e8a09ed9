"""The index worker's threads end with it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from aster_persist.index.catalog import FLUSH_QUIET, CatalogWorker


def test_closing_during_a_write_pause_stops_the_flush_thread(tmp_path: Path) -> None:
    (tmp_path / "index").mkdir()
    worker = CatalogWorker(tmp_path / "index", lambda sid: tmp_path / sid)

    def slow_load(scope: str, name: str) -> Any:
        time.sleep(FLUSH_QUIET * 3)  # the last flush outlasts the ticker's pause
        return None

    worker.memory_doc = slow_load
    worker.mark_memory("global", "note")  # wakes the ticker, which waits for writes to pause
    time.sleep(FLUSH_QUIET / 4)  # ... and is inside that pause when the index closes
    worker.close()
    worker._ticker.join(timeout=2)
    assert not worker._ticker.is_alive()
