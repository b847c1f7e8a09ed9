"""The processes the daemon starts to read for it (an import's files, a catch-up's
transcripts): each ends when the daemon does, however the daemon ended.

A pool's workers wait for work on a pipe whose writing end they hold too, so a daemon
killed outright (``kill -9``, the kernel out of memory) would leave them waiting for
ever, each holding its interpreter's memory. Each one looks for its parent every
``LOOK`` seconds from a thread of its own and ends when the parent is gone.
"""

from __future__ import annotations

import os
import threading
import time

LOOK = 1.0  # seconds between looks for the parent


def started(parent: int, nice: int = 0) -> None:
    """A reading process's initializer, given the daemon's process id (the process may
    start after the daemon has ended): end with the daemon, and give way to it by
    ``nice`` (a catch-up's readers yield to the requests and the writer)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(LOOK)
        os._exit(0)  # the daemon ended: this process was given to another parent

    threading.Thread(target=watch, name="aster-parent-watch", daemon=True).start()
    if nice:
        os.nice(nice)
