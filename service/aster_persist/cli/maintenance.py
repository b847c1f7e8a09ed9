"""The commands that need no running daemon: ``reindex`` and ``doctor`` work on a data
home with the daemon stopped (the home's lock keeps them from running beside one);
``openapi`` prints the HTTP API's document, as checked in at openapi/openapi.json (built
from an app over a temporary home)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import orjson
import typer

from ..settings import Settings
from .common import (
    EXIT_NOT_FOUND,
    EXIT_REFUSED,
    EXIT_UNAVAILABLE,
    emit_json,
    fail,
    load_settings,
    open_home,
)
from .userfiles import SHARED, UserFile, UserFileError


def reindex(
    home: Annotated[Path | None, typer.Option(help="Data home (ASTER_HOME).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="What was rebuilt, as JSON.")] = False,
) -> None:
    """Rebuild the search index and session catalog from the files, with the daemon
    stopped. Never needed for correctness (the daemon rebuilds a missing or broken index
    by itself); useful to compact it or to time a rebuild."""
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from ..index.catalog import rebuild

    settings = load_settings(home=home)
    opened = open_home(settings.home, why=" (reindex works on a home no daemon is using)")
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
    seconds = round(time.perf_counter() - started, 3)
    if json_out:
        return emit_json({**stats, "seconds": seconds})
    typer.echo(
        f"reindexed {stats['files']} sessions ({stats['documents']} documents) and "
        f"{stats['memory']} memory files in {time.perf_counter() - started:.1f} s"
    )


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

    from ..doctor import Doctor
    from ..errors import HomeInUse, HomeUnavailable
    from ..offline import open_home as opened_home
    from ..paths import resolve_home

    settings = load_settings(home=home)
    if settings.home is not None and not resolve_home(settings.home).exists():
        raise refuse(
            f"there is no data home at {resolve_home(settings.home)}", EXIT_NOT_FOUND, json_out
        )
    try:
        opened = opened_home(settings.home, fallback="none")
    except HomeInUse as exc:
        why = f"{exc}; doctor works on a home no daemon is using: {stopping()}"
        raise refuse(why, EXIT_UNAVAILABLE, json_out) from None
    except HomeUnavailable as exc:
        raise refuse(str(exc), EXIT_REFUSED, json_out) from None
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
        for f in findings:  # the path on a line of its own: whole, whatever the width
            fix = (
                (f"moved to {f.moved_to}" if f.moved_to else "repaired")
                if f.repaired
                else ("run with --repair" if f.repairable else "cannot be repaired")
            )
            typer.echo(f"{f.kind}: {f.path}\n    {f.detail} ({fix})")
        typer.echo(f"{len(findings)} problems found, {len(findings) - len(left)} repaired")
    if left:
        raise typer.Exit(1)


def stopping() -> str:
    """How to stop the daemon: through the service manager when a unit of ours is
    installed, else where it was started."""
    from .service import LABEL, NAME, Kind, place

    if place(Kind.systemd).exists():
        return f"stop it with `systemctl --user stop {NAME}`"
    if place(Kind.launchd).exists():
        return f"stop it with `launchctl bootout gui/{os.getuid()}/{LABEL}`"
    return "stop the `aster-persist serve` that holds it (Ctrl-C where it runs)"


def refuse(message: str, code: int, json_out: bool) -> typer.Exit:
    """A refusal of doctor's, on stderr and, with ``--json``, as one JSON document on
    stdout too (what a program reads), with the exit code."""
    if json_out:
        emit_json({"findings": None, "error": message, "exit_code": code})
    return fail(message, code)


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
        try:
            UserFile(output).write(text.encode(), new_mode=SHARED)
        except UserFileError as exc:
            raise fail(str(exc), EXIT_REFUSED) from None


def openapi_text() -> str:
    """The OpenAPI document as checked in at openapi/openapi.json."""
    import tempfile

    from ..api.plumbing import configured
    from ..app import create_app

    with tempfile.TemporaryDirectory() as tmp:
        application = create_app(Settings(home=Path(tmp)))
        document = application.openapi()
        configured(application).home.close()
    return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n"
