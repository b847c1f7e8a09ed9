"""The data home opened by the command line itself, with no daemon in between (the
daemon being started, ``doctor``, ``reindex``): locked, so a second process never
writes it, or refused when another holds it.
"""

from __future__ import annotations

from pathlib import Path

from .storage.home import Home


def open_home(explicit: Path | None, *, fallback: str = "none") -> Home:
    """The data home, locked; ``HomeInUse`` when a daemon holds it, ``HomeUnavailable``
    when it cannot be used (``fallback``: where to go instead, as the settings say)."""
    return Home.open(explicit, fallback=fallback)
