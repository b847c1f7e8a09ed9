"""Where the data home is, as the daemon and its clients both find it (SPEC §2)."""

from __future__ import annotations

import os
from pathlib import Path


def resolve_home(explicit: Path | None, environ: dict[str, str] | None = None) -> Path:
    """ASTER_HOME, else $XDG_DATA_HOME/aster, else ~/.local/share/aster: absolute and
    normalized (``a/../b`` is ``b``), so every path built from it names the same place
    the daemon confines itself to."""
    env = os.environ if environ is None else environ
    if explicit is not None:
        return _normal(Path(explicit))
    xdg = env.get("XDG_DATA_HOME")
    if xdg:
        return _normal(Path(xdg)) / "aster"
    return _normal(Path(env.get("HOME", str(Path.home()))) / ".local" / "share" / "aster")


def top_level(folder: Path) -> Path:
    """The top of the git work tree a folder is in (the folder holding ``.git``), else
    the folder."""
    folder = Path(os.path.normpath(folder.expanduser().absolute()))  # `..` taken first
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def here() -> str:
    """The project where the program runs: the top of the git work tree it stands in,
    as the CLI takes ``.``."""
    return str(top_level(Path.cwd()))


def _normal(path: Path) -> Path:
    return Path(os.path.abspath(path.expanduser()))
