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
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer
from pydantic import BaseModel
from rich.console import Console

from .. import settings as settings_module
from ..paths import top_level as top_level  # what the commands stand in
from ..settings import Settings

if TYPE_CHECKING:  # the client is loaded by the commands that talk to the daemon
    from .. import client as api

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
# The project as an argument too, wherever a command takes no other: `sessions list .`
# and `sessions list --repo-root .` are one request.
ProjectArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="[PROJECT]",
        help="The project, as --repo-root names it (`.` for here).",
        callback=project,
        show_default=False,
    ),
]


def one_project(argument: str | None, option: str | None) -> str | None:
    """The project named by the argument or by ``--repo-root`` (exit 2 when both name
    different ones)."""
    if argument and option and argument != option:
        raise fail("name the project once: as the argument or with --repo-root", EXIT_USAGE)
    return argument or option


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
    from .. import client as api

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
    from ..schemas.names import ULID_RE

    if not ULID_RE.fullmatch(value):
        raise typer.BadParameter(f"{value!r} is not a session id (26 letters and digits)")
    return value


SessionId = Annotated[
    str, typer.Argument(metavar="ID", help="The session's id.", callback=session_id)
]


def open_home(explicit: Path | None, *, fallback: str = "none", why: str = "") -> Any:
    """The data home, locked; exit 3 when a daemon holds it, 1 when it cannot be used."""
    from ..errors import HomeInUse, HomeUnavailable
    from ..offline import open_home as opened

    try:
        return opened(explicit, fallback=fallback)
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


def table(
    *columns: str,
    rows: list[list[Any]],
    keys: tuple[str, ...] = (),
    lesser: tuple[str, ...] = (),
    times: tuple[str, ...] = (),
    group: str | None = None,
) -> None:
    """Rows on stdout. Through a pipe: tab-separated rows with no header, each cell on
    one line, times as sent. In a terminal: one line a row that fits its width: the
    ``keys`` columns (the first one unless named: ids, names, paths, what a person types
    next) are never cut, the ``lesser`` ones are dropped first when they do not fit, the
    others are shortened with an ellipsis, ``times`` read as people read them (``3 min
    ago``, ``Feb 11``); when the keys alone are wider than the terminal, each row is a
    record: its keys on a line of their own, the rest beneath. The ``group`` column (a
    project, say) is not a column there: its value is a line of its own, whole, above
    the rows that share it."""
    cells = [["" if cell is None else " ".join(str(cell).split()) for cell in row] for row in rows]
    if not sys.stdout.isatty():
        sys.stdout.write("".join("\t".join(row) + "\n" for row in cells))
        return
    for i, name in enumerate(columns):
        if name in times:
            for row in cells:
                row[i] = when(row[i])
    console = Console(highlight=False)
    width = console.width - 1  # a line as wide as the terminal wraps in some of them
    whole = keys or columns[:1]
    natural = {
        name: max([len(name)] + [len(row[i]) for row in cells]) for i, name in enumerate(columns)
    }
    shown = [name for name in columns if name != group]
    for name in lesser:  # the least needed go first
        if _least(shown, whole, natural) <= width:
            break
        shown.remove(name)
    at = {name: columns.index(name) for name in shown}
    heading = columns.index(group) if group is not None else None
    headings = [row[heading] if heading is not None else "" for row in cells]
    if _least(shown, whole, natural) > width:  # records: keys whole on their own line
        for n, row in enumerate(cells):
            if headings[n] and (n == 0 or headings[n] != headings[n - 1]):
                console.print(headings[n], style="underline", markup=False)
            console.print("  ".join(row[at[k]] for k in shown if k in whole), style="bold")
            for name in (n for n in shown if n not in whole):
                console.print(short(f"  {name}: {row[at[name]]}", width), markup=False)
        return
    widths = _share(shown, whole, natural, width - GAP * (len(shown) - 1))
    line = (" " * GAP).join
    console.print(line(name.ljust(widths[name]) for name in shown).rstrip(), style="bold")
    for n, row in enumerate(cells):
        if headings[n] and (n == 0 or headings[n] != headings[n - 1]):
            console.print(headings[n], style="underline", markup=False)
        text = line(short(row[at[name]], widths[name]).ljust(widths[name]) for name in shown)
        console.print(text.rstrip(), markup=False)


def more(hint: str) -> None:
    """For a person at a terminal, how to see the rest of a list that stopped early (on
    stderr: stdout holds the rows); a program pages with ``--json``'s cursor."""
    if sys.stdout.isatty():
        typer.echo(hint, err=True)


GAP = 2  # spaces between a terminal table's columns
NARROWEST = 20  # a shortened column keeps at least this much of itself


def _least(shown: list[str], whole: tuple[str, ...], natural: dict[str, int]) -> int:
    """The narrowest a one-line table of ``shown`` can be."""
    return sum(
        natural[n] if n in whole else min(natural[n], max(NARROWEST, len(n))) for n in shown
    ) + GAP * (len(shown) - 1)


def _share(
    shown: list[str], whole: tuple[str, ...], natural: dict[str, int], room: int
) -> dict[str, int]:
    """Each column's width: keys whole, the rest sharing what is left, the narrow ones
    whole and the wide ones cut to an equal share."""
    widths = {n: natural[n] for n in shown if n in whole}
    left = room - sum(widths.values())
    rest = sorted((n for n in shown if n not in whole), key=lambda n: natural[n])
    for count, name in enumerate(rest):
        share = left // (len(rest) - count)
        widths[name] = max(min(natural[name], share), min(natural[name], NARROWEST))
        left -= widths[name]
    return widths


def when(value: str) -> str:
    """An RFC 3339 time as people read it: ``just now``, ``3 min ago``, ``5 h ago``,
    ``Feb 11`` this year, ``Feb 11 2025`` before; anything else as it is."""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    if moment.tzinfo is None:
        return value
    now = datetime.now(UTC)
    seconds = (now - moment).total_seconds()
    if 0 <= seconds < 60:
        return "just now"
    if 0 <= seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if 0 <= seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    local = moment.astimezone()
    day = f"{local:%b} {local.day}"
    return day if local.year == now.astimezone().year else f"{day} {local.year}"


def short(text: Any, width: int = 60) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
