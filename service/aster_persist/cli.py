"""The command line: ``aster-persist serve`` runs the daemon; more commands come as clients."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from pydantic import ValidationError

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
    """Settings from the environment, with command-line flags taking precedence."""
    try:
        settings = Settings(**{k: v for k, v in overrides.items() if v is not None})
        settings.check()
    except ValidationError as exc:
        err = exc.errors()[0]
        name = "ASTER_" + str(err["loc"][0]).upper() if err.get("loc") else "a setting"
        raise _fail(f"invalid setting {name}={err.get('input')!r}: {err['msg']}", 2) from None
    except ValueError as exc:
        raise _fail(str(exc), 2) from None
    return settings


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Address to bind (ASTER_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (ASTER_PORT).")] = None,
    home: Annotated[Path | None, typer.Option(help="Data home (ASTER_HOME).")] = None,
) -> None:
    """Run the daemon in the foreground until interrupted."""
    import uvicorn

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
    config = uvicorn.Config(
        application,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        access_log=False,
        timeout_graceful_shutdown=10,
        server_header=False,
    )
    server = _server_class()(config)
    server.run()
    if not server.started:
        raise typer.Exit(3)


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


sessions_app = typer.Typer(help="Sessions in the running daemon.", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")


def transcript_files(paths: list[Path]) -> list[Path]:
    """The files named, and every .jsonl and .json file under the folders named."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += sorted(
                p for p in path.rglob("*") if p.suffix in (".jsonl", ".json") and p.is_file()
            )
        else:
            out.append(path)
    return out


@sessions_app.command("import")
def import_command(
    paths: Annotated[list[Path], typer.Argument(help="Files, or folders to search for them.")],
    format: Annotated[
        str, typer.Option(help="auto, native, claude-code, codex or openai-chat.")
    ] = "auto",
    repo_root: Annotated[
        str | None, typer.Option(help="The project, when a file does not say.")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="The results as JSON.")] = False,
    url: Annotated[str | None, typer.Option(help="The daemon (ASTER_URL).")] = None,
) -> None:
    """Import transcripts written by other tools (a ~/.claude/projects or ~/.codex/sessions
    tree, say). Importing the same files again creates nothing. Exits 1 if any failed."""
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from . import client

    files = transcript_files(paths)
    if not files:
        raise _fail("no .jsonl or .json files found there")
    results: list[dict[str, Any]] = []
    with client.connect(url) as http, Progress(transient=True, disable=json_out) as bar:
        task = bar.add_task("importing", total=len(files))
        for path in files:
            row: dict[str, Any] = {"file": str(path)}
            try:
                done = client.import_file(
                    http, path.read_bytes(), format=format, repo_root=repo_root
                )
                row |= {
                    "format": done["format"],
                    "imported": done["imported"],
                    "already_imported": done["already_imported"],
                    "sessions": [s["id"] for s in done["sessions"]],
                }
            except client.DaemonUnavailable as exc:
                raise _fail(str(exc)) from None
            except (client.ServiceError, OSError) as exc:
                row["failed"] = str(exc)
            results.append(row)
            bar.advance(task)
    failed = [r for r in results if "failed" in r]
    if json_out:
        typer.echo(orjson.dumps({"files": results}).decode())
    else:
        table = Table("file", "format", "imported", "already here", "failed")
        for r in results:
            table.add_row(
                r["file"],
                r.get("format", "-"),
                str(r.get("imported", 0)),
                str(r.get("already_imported", 0)),
                r.get("failed", ""),
            )
        console = Console()
        console.print(table)
        console.print(
            f"{sum(r.get('imported', 0) for r in results)} sessions imported, "
            f"{sum(r.get('already_imported', 0) for r in results)} already here, "
            f"{len(failed)} files failed"
        )
    if failed:
        raise typer.Exit(1)


def describe(entry: dict[str, Any]) -> str:
    """One journal entry as a line for people."""
    what = entry.get("name") or entry.get("session") or ""
    detail = entry.get("detail") or {}
    extra = ""
    if "first_seq" in detail:
        extra = f" seq {detail['first_seq']}-{detail['last_seq']}"
    elif "title" in detail:
        extra = f" {detail['title']!r}"
    return f"{entry['ts']}  {entry['op']:<17} {entry['scope']}  {what}{extra}  ({entry['actor']})"


@app.command("journal")
def journal_command(
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing changes as they happen.")
    ] = False,
    json_lines: Annotated[bool, typer.Option("--json", help="One JSON entry per line.")] = False,
    after: Annotated[str | None, typer.Option(help="Start after this entry id.")] = None,
    op: Annotated[
        str | None, typer.Option(help="Only this op (`memory` for every memory.*).")
    ] = None,
    scope: Annotated[str | None, typer.Option(help="Only this scope.")] = None,
    url: Annotated[str | None, typer.Option(help="The daemon (ASTER_URL).")] = None,
) -> None:
    """Print the journal; with --follow, the live change feed (resuming by itself after
    the daemon restarts). Without --follow and --after, every entry from the first."""
    from . import client

    def emit(entry: dict[str, Any]) -> None:
        line = orjson.dumps(entry).decode() if json_lines else describe(entry)
        typer.echo(line)

    with client.connect(url) as http:
        try:
            last = after
            if not follow or after is not None:
                for entry in client.journal(http, after=after, op=op, scope=scope):
                    emit(entry)
                    last = entry["id"]
            elif follow:
                # from now on: the newest entry is where the feed starts
                last = _newest(http)
            if follow:
                for entry in client.follow(http, after=last, op=op, scope=scope):
                    emit(entry)
        except client.ServiceError as exc:
            raise _fail(str(exc)) from None
        except KeyboardInterrupt:
            raise typer.Exit(0) from None


def _newest(http: Any) -> str | None:
    from . import client

    newest = None
    for entry in client.journal(http):
        newest = entry["id"]
    return newest


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
