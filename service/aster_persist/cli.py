"""The command line: ``serve`` runs the daemon; ``reindex`` and ``doctor`` work on a home
with the daemon stopped; every other command is a client of the running daemon
(`commands.py`)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from . import settings as settings_module
from .commands import journal_command, memory_app, search_command, sessions_app, table
from .errors import HomeUnavailable
from .settings import Settings

app = typer.Typer(
    name="aster-persist",
    help="A local daemon that keeps AI coding agents' transcripts, memory and journal.",
    no_args_is_help=True,
    add_completion=False,
)


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"aster-persist: {message}", err=True)
    return typer.Exit(code)


def load_settings(**overrides: Any) -> Settings:
    """Settings from flags, the environment and ``<home>/config.toml``; exit 2 if bad."""
    try:
        return settings_module.load_settings(**overrides)
    except ValueError as exc:
        raise _fail(str(exc), 2) from None


def settings_help() -> str:
    """Every setting with its default, for ``serve --help``."""
    lines = ["Settings (environment, or <home>/config.toml with the same names):", ""]
    for name, field in Settings.model_fields.items():
        default = field.get_default(call_default_factory=True)
        shown = str(default).lower() if isinstance(default, bool) else default
        shown = "-" if shown in (None, []) else shown
        lines.append(f"ASTER_{name.upper()} (default: {shown}): {field.description}")
    return "\n\n".join(lines)


@app.command(epilog=settings_help())
def serve(
    host: Annotated[str | None, typer.Option(help="Address to bind (ASTER_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (ASTER_PORT).")] = None,
    home: Annotated[Path | None, typer.Option(help="Data home (ASTER_HOME).")] = None,
) -> None:
    """Run the daemon in the foreground until interrupted."""
    import uvicorn

    from .api.guard import connection
    from .app import create_app
    from .storage.home import Home

    settings = load_settings(host=host, port=port, home=home)
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        opened = Home.open(settings.home, fallback=settings.fallback)
    except HomeUnavailable as exc:
        raise _fail(str(exc)) from None
    try:
        application = create_app(settings, home=opened)
    except (OSError, ValueError) as exc:
        opened.close()
        raise _fail(str(exc)) from None
    logging.getLogger("aster_persist").info(
        "serving %s on http://%s:%d (durability %s)",
        opened.root,
        settings.host,
        settings.port,
        settings.durability,
    )
    _raise_open_file_limit()
    config = uvicorn.Config(
        application,
        host=settings.host,
        port=settings.port,
        http=connection(settings.max_header_bytes, settings.client_timeout_seconds),
        ws="none",
        log_level=settings.log_level,
        access_log=False,
        timeout_graceful_shutdown=10,
        server_header=False,
    )
    server = _server_class()(config)
    server.run()
    if not server.started:
        raise typer.Exit(3)


def _raise_open_file_limit() -> None:
    """Each connection is a descriptor: the soft limit (often 1024, or 256) is raised to
    the hard one, so that many idle or slow clients cannot use up the daemon's files."""
    import contextlib

    try:
        import resource
    except ImportError:  # not on Windows
        return
    unlimited = resource.RLIM_INFINITY
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # an unlimited hard limit cannot always be taken as it is (10240 is macOS's OPEN_MAX)
    for wanted in [hard] if hard != unlimited else [1 << 20, 10240]:
        if soft == unlimited or soft >= wanted:
            return
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            return


def _server_class() -> type:
    import contextlib
    from collections.abc import Iterator

    import uvicorn

    class Server(uvicorn.Server):
        """A SIGTERM or Ctrl-C that led to a clean shutdown exits 0, not by the signal."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                try:
                    yield
                finally:
                    if self.started:
                        self._captured_signals.clear()

    return Server


@app.command()
def reindex(
    home: Annotated[Path | None, typer.Option(help="Data home (ASTER_HOME).")] = None,
) -> None:
    """Rebuild the search index and session catalog from the files, with the daemon
    stopped. Never needed for correctness (the daemon rebuilds a missing or broken index
    by itself); useful to compact it or to time a rebuild."""
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from .index.catalog import rebuild
    from .storage.home import Home

    settings = load_settings(home=home)
    try:
        opened = Home.open(settings.home)
    except HomeUnavailable as exc:
        raise _fail(str(exc)) from None
    started = time.perf_counter()
    try:
        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            transient=True,
        ) as bar:
            task = bar.add_task("indexing sessions", total=None)
            stats = rebuild(
                opened, lambda done, total: bar.update(task, completed=done, total=total)
            )
    finally:
        opened.close()
    typer.echo(
        f"reindexed {stats['files']} sessions ({stats['documents']} documents) and "
        f"{stats['memory']} memory files in {time.perf_counter() - started:.1f} s"
    )


app.add_typer(sessions_app, name="sessions")
app.add_typer(memory_app, name="memory")
app.command("journal")(journal_command)
app.command("search")(search_command)


@app.command()
def doctor(
    repair: Annotated[
        bool, typer.Option(help="Quarantine what is broken (moved aside, never deleted).")
    ] = False,
    home: Annotated[Path | None, typer.Option(help="Data home (ASTER_HOME).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="The findings as JSON.")] = False,
) -> None:
    """Check the whole data home with the daemon stopped: torn tails, damaged lines,
    leftover temporary files, blob references with no blob, an index that disagrees with
    the files. Exits 0 when all is well (or all was repaired), 1 when something is left."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress

    from .doctor import Doctor
    from .paths import resolve_home
    from .storage.home import Home

    settings = load_settings(home=home)
    if settings.home is not None and not resolve_home(settings.home).exists():
        raise _fail(f"there is no data home at {resolve_home(settings.home)}", 4)
    try:
        opened = Home.open(settings.home)
    except HomeUnavailable as exc:
        raise _fail(f"{exc} (doctor works on a home no daemon is using)", 3) from None
    try:
        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            transient=True,
            disable=json_out,
        ) as bar:
            task = bar.add_task("checking sessions", total=None)
            findings = Doctor(opened, repair=repair).run(
                lambda done, total: bar.update(task, completed=done, total=total)
            )
    finally:
        opened.close()
    left = [f for f in findings if not f.repaired]
    if json_out:
        sys.stdout.write(
            orjson.dumps(
                {"home": str(opened.root), "findings": [f.public() for f in findings]}
            ).decode()
            + "\n"
        )
    elif not findings:
        typer.echo(f"{opened.root}: all well")
    else:
        table(
            "problem",
            "file",
            "detail",
            "repair",
            rows=[
                [
                    f.kind,
                    f.path,
                    f.detail,
                    (f"moved to {f.moved_to}" if f.moved_to else "done")
                    if f.repaired
                    else ("run with --repair" if f.repairable else "cannot be repaired"),
                ]
                for f in findings
            ],
        )
        typer.echo(f"{len(findings)} problems found, {len(findings) - len(left)} repaired")
    if left:
        raise typer.Exit(1)


@app.command()
def openapi(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
) -> None:
    """Print the OpenAPI document of the HTTP API."""
    text = openapi_text()
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")


def openapi_text() -> str:
    """The OpenAPI document as checked in at openapi/openapi.json."""
    import tempfile

    from .app import create_app

    with tempfile.TemporaryDirectory() as tmp:
        application = create_app(Settings(home=Path(tmp)))
        document = application.openapi()
        application.state.home.close()
    return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n"


def main(argv: list[str] | None = None) -> None:
    app(args=argv, prog_name="aster-persist")
