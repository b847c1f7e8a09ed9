"""Where the data home is, as the daemon and its clients both find it (SPEC §2)."""

from __future__ import annotations

import os
from pathlib import Path


def resolve_home(explicit: Path | None, environ: dict[str, str] | None = None) -> Path:
    """ASTER_HOME, else $XDG_DATA_HOME/aster, else ~/.local/share/aster."""
    env = os.environ if environ is None else environ
    if explicit is not None:
        return Path(explicit).expanduser().absolute()
    xdg = env.get("XDG_DATA_HOME")
    if xdg:
        return Path(xdg).expanduser().absolute() / "aster"
    return Path(env.get("HOME", str(Path.home()))) / ".local" / "share" / "aster"
