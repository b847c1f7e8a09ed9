"""The command line: ``serve`` runs the daemon; ``reindex`` and ``doctor`` work on a home
with the daemon stopped; every other command is a client of the running daemon, a thin
wrapper over `aster_persist.client.Client` (exit codes and ``--json`` in `common.py`).

One module per command group, registered here in the order ``--help`` lists them::

    server.py       serve (and the server class that exits 0 after a clean shutdown)
    maintenance.py  reindex, doctor (a home with the daemon stopped), openapi
    journal.py      journal (list, filter, follow) and journal revert
    search.py       search
    space.py        du (what the data home takes, and what could be freed)
    stats.py        stats (what the sessions did and cost, by day, project or model)
    team.py         team status (the team this machine shares sessions with)
    sessions.py     sessions list/show/latest/rename/delete/restore/export/prune/compress/import
    memory.py       memory list/show/add/remove/archive/restore/context/search
    follow.py       follow add/remove/list (the folders of other agents' sessions)
    hooks.py        hooks claude (print, install, uninstall), and hook claude-code
                    (what those hooks run)
    codex_hooks.py  hooks codex and codex-instructions, and hook codex (Codex's notify)
    service.py      service install/uninstall (a systemd user unit, a launchd agent)
    mcp_stdio.py    mcp (the daemon's MCP server over stdio, for stdio-only clients)
    writing.py      sessions create/append, memory success/failure (writes for headless hosts)
    common.py       failing with an exit code, settings, the daemon connection, tables, JSON
"""

from __future__ import annotations

import contextlib
import errno
import inspect
import os
import sys
from typing import Annotated, Any, NoReturn, TextIO

import typer

from .. import __version__
from .common import EXIT_CODES, load_settings
from .follow import follow_app
from .hooks import hook_app, hooks_app
from .imports import import_command
from .journal import journal_app
from .maintenance import doctor, openapi, openapi_text, reindex
from .mcp_stdio import mcp_command
from .memory import memory_app
from .search import search_command
from .server import serve, settings_help
from .service import service_app
from .sessions import sessions_app
from .space import du_command
from .stats import stats_command
from .team import team_app
from .writing import memory_failure, memory_success, sessions_append, sessions_create

__all__ = [
    "app",
    "doctor",
    "load_settings",
    "main",
    "openapi",
    "openapi_text",
    "reindex",
    "serve",
    "settings_help",
]

app = typer.Typer(
    name="aster-persist",
    help="A local daemon that keeps AI coding agents' transcripts, memory and journal.",
    no_args_is_help=True,
    add_completion=False,
    epilog=EXIT_CODES,
)


def _version(shown: bool) -> None:
    if shown:
        typer.echo(f"aster-persist {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    pass


# `--help` lists commands in the order they are registered, then the groups.
app.command(epilog=settings_help())(serve)
app.command()(reindex)
sessions_app.command("import")(import_command)
sessions_app.command("create")(sessions_create)
sessions_app.command("append")(sessions_append)
memory_app.command("success")(memory_success)
memory_app.command("failure")(memory_failure)
app.add_typer(sessions_app, name="sessions")
app.add_typer(memory_app, name="memory")
app.add_typer(follow_app, name="follow")
app.add_typer(hooks_app, name="hooks")
app.add_typer(service_app, name="service")
app.add_typer(hook_app, name="hook")
app.add_typer(journal_app, name="journal")
app.add_typer(team_app, name="team")
app.command("search")(search_command)
app.command("du")(du_command)
app.command("stats")(stats_command)
app.command("mcp")(mcp_command)
app.command()(doctor)
app.command()(openapi)


def tidy(doc: str | None) -> str | None:
    """A docstring as help: each paragraph one line (the terminal wraps it), and
    ``code`` as `code`."""
    if not doc:
        return doc
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs).replace("``", "`")


def _tidy_help(group: typer.Typer) -> None:
    """Every command's help in ``group`` (and its groups) tidied, once."""
    for command in group.registered_commands:
        doc = command.help or (command.callback.__doc__ if command.callback else None)
        command.help = tidy(doc)
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _tidy_help(sub.typer_instance)


_tidy_help(app)


class QuietPipe:
    """stdout, where a reader that went away (``| head``) ends the command quietly with
    exit 0, as it does for every other command-line tool, not with a failure."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            self.gone()

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            self.gone()

    def gone(self) -> NoReturn:
        with contextlib.suppress(OSError, ValueError):  # what is left unflushed goes nowhere
            os.dup2(os.open(os.devnull, os.O_WRONLY), self.stream.fileno())
        raise SystemExit(0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # what a full disk or quota says


def main(argv: list[str] | None = None) -> None:
    """Run the command line on ``argv`` (the process arguments without). A mistake in
    the command (a flag, a value, an argument) is one line and where to read more, a
    full disk under what is written is one line: never a traceback."""
    stdout = sys.stdout
    if not isinstance(stdout, QuietPipe):
        sys.stdout = QuietPipe(stdout)
    try:
        code = app(args=argv, prog_name="aster-persist", standalone_mode=False)
        sys.stdout.flush()  # a full disk under stdout says so now, not at exit
    except typer.Abort:
        raise SystemExit(130) from None
    except typer.TyperException as exc:  # the command line's own refusals (typer's click)
        if type(exc).__name__ == "NoArgsIsHelpError":
            exc.show()  # type: ignore[attr-defined]  # the help of a group named alone
        else:
            said = exc.format_message() if hasattr(exc, "format_message") else str(exc)
            typer.echo(f"aster-persist: {said}", err=True)
            context = getattr(exc, "ctx", None)  # a usage error's: where to read more
            if context is not None:
                typer.echo(f"  (see `{context.command_path} --help`)", err=True)
        raise SystemExit(getattr(exc, "exit_code", 1)) from None
    except OSError as exc:
        if exc.errno not in _FULL:
            raise
        typer.echo(f"aster-persist: cannot write what it made: {exc.strerror}", err=True)
        with contextlib.suppress(OSError, ValueError):  # what is left unwritten goes nowhere
            os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
        raise SystemExit(1) from None
    finally:
        sys.stdout = stdout
    raise SystemExit(code if isinstance(code, int) else 0)  # typer.Exit's code, else 0
