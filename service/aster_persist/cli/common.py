"""What every command shares: failing with a message and an exit code, the settings,
the connection to the daemon, and output for people (tables) and programs (JSON).

Every read takes ``--json`` (one JSON document, or one JSON line per item for streams);
without it, people get tables. Exit codes scripts can rely on, the same for every
command (``EXIT_CODES``, shown by ``--help``)::

    0  done
    1  a finding, a refusal or a failure (a conflict too: exists, changed meanwhile)
    2  bad usage: a flag, an argument or an id that cannot be right
    3  the daemon is not running (or not at --url), or one already holds the home
    4  not found
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from pydantic import BaseModel
from rich.console import Console
from rich.table import Column, Table

from .. import client as api
from .. import settings as settings_module
from ..paths import top_level as top_level  # what the commands stand in
from ..settings import Settings

EXIT_REFUSED, EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_NOT_FOUND = 1, 2, 3, 4
EXIT_CODES = (
    "Exit codes: 0 done; 1 a finding, a refusal or a failure; 2 bad usage; 3 the daemon "
    "is not running, or one already holds the home; 4 not found."
)

Url = Annotated[str | None, typer.Option(help="The daemon (default: ASTER_URL).")]
Json = Annotated[bool, typer.Option("--json", help="JSON instead of a table.")]


def project(value: str | None) -> str | None:
    """A project as given where you stand: ``.``, a relative path or a subfolder is the
    top of its git work tree (the daemon resolves a worktree to its repository)."""
    return None if value is None else str(top_level(Path(value)))


RepoRoot = Annotated[
    str | None,
    typer.Option(
        help="The project: its repository, or any folder in it (`.` for here); global without.",
        callback=project,
    ),
]


def fail(message: str, code: int = 1) -> typer.Exit:
    """The message on stderr, and the exit to raise with ``code``."""
    typer.echo(f"aster-persist: {message}", err=True)
    return typer.Exit(code)


def load_settings(**overrides: Any) -> Settings:
    """Settings from flags, the environment and ``<home>/config.toml``; exit 2 if bad."""
    try:
        return settings_module.load_settings(**overrides)
    except ValueError as exc:
        raise fail(str(exc), 2) from None


@contextmanager
def daemon(url: str | None) -> Iterator[api.Client]:
    """A client of the daemon; its refusals become a message and an exit code."""
    try:
        with api.Client(url) as aster:
            yield aster
    except api.DaemonUnavailable as exc:
        raise fail(f"{exc}; start it with `aster-persist serve`", EXIT_UNAVAILABLE) from None
    except api.NotFoundError as exc:
        raise fail(exc.detail or str(exc), EXIT_NOT_FOUND) from None
    except api.ApiError as exc:
        raise fail(str(exc), EXIT_REFUSED) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def session_id(value: str) -> str:
    """A session id argument, checked before the daemon is asked (exit 2 if malformed)."""
    from ..storage.home import ULID_RE

    if not ULID_RE.fullmatch(value):
        raise typer.BadParameter(f"{value!r} is not a session id (26 letters and digits)")
    return value


SessionId = Annotated[
    str, typer.Argument(metavar="ID", help="The session's id.", callback=session_id)
]


def open_home(explicit: Path | None, *, fallback: str = "none", why: str = "") -> Any:
    """The data home, locked; exit 3 when a daemon holds it, 1 when it cannot be used."""
    from ..errors import HomeInUse, HomeUnavailable
    from ..storage.home import Home

    try:
        return Home.open(explicit, fallback=fallback)
    except HomeInUse as exc:
        raise fail(f"{exc}{why}", EXIT_UNAVAILABLE) from None
    except HomeUnavailable as exc:
        raise fail(str(exc), EXIT_REFUSED) from None


def emit_json(value: Any) -> None:
    """One JSON document on stdout (models as the API sends them)."""
    sys.stdout.write(orjson.dumps(value, default=_plain).decode() + "\n")


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def table(*columns: str, rows: list[list[Any]], keys: tuple[str, ...] = ()) -> None:
    """Rows on stdout: for a terminal, a table whose ``keys`` columns (the first one
    unless named: ids, names, paths, what a person types next) are never cut, the
    others wrapped to fit; through a pipe, tab-separated rows with no header, each
    cell on one line."""
    cells = [["" if cell is None else " ".join(str(cell).split()) for cell in row] for row in rows]
    if not sys.stdout.isatty():
        sys.stdout.write("".join("\t".join(row) + "\n" for row in cells))
        return
    whole = set(keys or columns[:1])
    out = Table(
        *(
            Column(
                name,
                no_wrap=name in whole,
                overflow="fold",  # a key wider than the terminal folds; it is never cut
                min_width=max([len(name)] + [len(row[i]) for row in cells])
                if name in whole
                else None,
            )
            for i, name in enumerate(columns)
        )
    )
    for row in cells:
        out.add_row(*row)
    Console().print(out)


def short(text: Any, width: int = 60) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
