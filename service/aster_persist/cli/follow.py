"""``aster-persist follow``: the folders of other agents' sessions the daemon imports as
they grow. ``add`` and ``remove`` edit ``<home>/follow.json``, which the running daemon
reads again when it changes; ``list`` shows them, those of ``ASTER_FOLLOW``, and the
usual places of Claude Code and Codex that are there and not yet followed.

A change is refused (exit 1, naming both homes) when the daemon that answers keeps
another home than the one the command works out: it would never read that list."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import EXIT_REFUSED, Json, Url, emit_json, fail, load_settings, table

follow_app = typer.Typer(help="Follow other agents' session folders.", no_args_is_help=True)
Folder = Annotated[Path, typer.Argument(help="A folder of session files.")]
Home = Annotated[Path | None, typer.Option(help="Data home (ASTER_HOME).")]


def _home(home: Path | None) -> tuple[Path, list[str]]:
    """The data home and the folders ``ASTER_FOLLOW`` names."""
    from ..paths import resolve_home

    settings = load_settings(home=home)
    return resolve_home(settings.home), settings.follow


def _same_home(root: Path, url: str | None) -> None:
    """Refuse when a daemon answers at ``url`` and keeps another home than ``root``."""
    from .. import client as api

    try:
        with api.Client(url, timeout=5) as aster:
            running = str(aster.info()["home"])
            where = str(aster.http.base_url).rstrip("/")
    except (api.DaemonUnavailable, api.ApiError):  # none answers (it reads the list at start)
        return
    try:
        same = Path(running).samefile(root)
    except OSError:  # not on this machine's paths (a container's home)
        same = Path(running) == root
    if not same:
        raise fail(
            f"the daemon at {where} keeps its data in {running}, not in {root}, and would "
            f"never read this list: run the command with --home {running} (or stop that "
            "daemon, or point --url at the daemon of this home)",
            EXIT_REFUSED,
        )


def _write(root: Path, folders: list[str]) -> None:
    from ..errors import UnsafePath
    from ..live.follow import write_list

    try:
        write_list(root, folders)
    except UnsafePath as exc:
        raise fail(exc.detail, 1) from None


@follow_app.command("add")
def add(path: Folder, home: Home = None, url: Url = None, json_out: Json = False) -> None:
    """Follow a folder: its sessions are imported now and as they grow."""
    folder = path.expanduser().absolute()
    if not folder.is_dir():
        raise fail(f"no folder at {folder}", 2)
    from ..live.follow import listed

    root, _configured = _home(home)
    _same_home(root, url)
    folders = [*listed(root), str(folder)]
    _write(root, folders)
    if json_out:
        return emit_json({"following": str(folder), "folders": listed(root)})
    typer.echo(f"following {folder}")


@follow_app.command("remove")
def remove(path: Folder, home: Home = None, url: Url = None, json_out: Json = False) -> None:
    """Stop following a folder (what was imported of it stays)."""
    folder = str(path.expanduser().absolute())
    from ..live.follow import listed

    root, _configured = _home(home)
    _same_home(root, url)
    folders = listed(root)
    if folder not in folders:
        raise fail(f"{folder} is not followed (ASTER_FOLLOW's folders are set there)", 2)
    _write(root, [f for f in folders if f != folder])
    if json_out:
        return emit_json({"stopped": folder, "folders": listed(root)})
    typer.echo(f"no longer following {folder}")


@follow_app.command("list")
def list_folders(home: Home = None, json_out: Json = False) -> None:
    """The folders followed, and the usual ones there to follow."""
    from ..live.follow import listed, usual_locations

    root, configured = _home(home)
    rows = [[f, "follow.json"] for f in listed(root)]
    rows += [[f, "ASTER_FOLLOW"] for f in configured]
    followed = {row[0] for row in rows}
    offered = [f for f in usual_locations() if f not in followed]
    if json_out:
        emit_json({"folders": [{"path": p, "from": s} for p, s in rows], "offered": offered})
        return
    table("folder", "from", rows=rows)
    for folder in offered:
        typer.echo(f"not followed yet: {folder}  (aster-persist follow add {folder})", err=True)
