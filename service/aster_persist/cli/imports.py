"""``sessions import``: whole trees of other tools' transcripts, with files, bytes, rate
and time left shown. Each file is sent with where it is, its size and its time; the
daemon remembers them, so the same tree imported again (after an interruption, say)
sends only the files that changed since or were not imported yet (``--again`` sends
every one).
"""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from ..importers import CHOICES, files_in
from .common import EXIT_REFUSED, Json, Url, daemon, emit_json, fail, project, table

ASKED = 1000  # files asked about at once
IN_FLIGHT = min(4, (os.cpu_count() or 1) + 1)  # files sent at once


def import_command(
    paths: Annotated[
        list[Path], typer.Argument(metavar="PATH...", help="Files, or folders to search for them.")
    ],
    format: Annotated[
        str, typer.Option(help=f"{', '.join(CHOICES[:-1])} or {CHOICES[-1]}.")
    ] = "auto",
    repo_root: Annotated[
        str | None,
        typer.Option(
            help="The project, when a file does not say: its repository, or a folder in it.",
            callback=project,
        ),
    ] = None,
    again: Annotated[
        bool, typer.Option("--again", help="Send every file, even one imported unchanged.")
    ] = False,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """Import transcripts written by other tools (a ~/.claude/projects or ~/.codex/sessions
    tree, say), showing files, bytes, rate and time left. Importing the same files again
    creates nothing. Exits 1 if any failed."""
    from rich.progress import DownloadColumn, Progress, TransferSpeedColumn

    from .. import client as api

    if format not in CHOICES:
        raise fail(f"unknown format {format!r}; use one of {', '.join(CHOICES)}", 2)
    files, missing = transcript_files(paths)
    if not files:
        where = f"nothing at {', '.join(map(str, missing))}" if missing else "none found there"
        raise fail(f"no .jsonl or .json files to import: {where}", 2)
    results: list[dict[str, Any]] = [
        {"file": str(path), "failed": "no such file or folder"} for path in missing
    ]
    total = sum(size for _, size in files)
    bar = Progress(
        *Progress.get_default_columns(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=Console(stderr=True),  # stdout is the result's
        transient=True,
        disable=json_out,
    )
    with daemon(url) as aster, bar:
        task = bar.add_task(f"importing 0/{len(files)} files", total=total)
        named = {path: (str(path.absolute()), size, file_time(path)) for path, size in files}
        unchanged = {} if again else _unchanged(aster, list(named.values()))
        finished = itertools.count(1)

        def sent(path: Path, size: int) -> dict[str, Any]:
            row: dict[str, Any] = {"file": str(path)}
            where, _size, modified_at = named[path]
            if where in unchanged:  # imported as it is now: not sent again
                row |= {"already_imported": len(unchanged[where]), "unchanged": True}
                row["sessions"] = unchanged[where]
                bar.advance(task, size)
            else:
                try:
                    done = aster.import_file(
                        chunks(path, lambda n: bar.advance(task, n)),
                        format=format,
                        repo_root=repo_root,
                        modified_at=modified_at,
                        path=where,
                    )
                    row |= {
                        "format": done.format,
                        "imported": done.imported,
                        "updated": done.updated,
                        "already_imported": done.already_imported,
                        "sessions": [s.id for s in done.sessions],
                    }
                except (api.ApiError, OSError) as exc:
                    row["failed"] = str(exc)
            bar.update(task, description=f"importing {next(finished)}/{len(files)} files")
            return row

        # a few files on their way at once: the daemon reads one on each core while it
        # writes another; the rows stay in the files' order
        with ThreadPoolExecutor(IN_FLIGHT) as sending:
            results += sending.map(lambda found: sent(*found), files)
    failed = [r for r in results if "failed" in r]
    unsent = sum(bool(r.get("unchanged")) for r in results)
    if json_out:
        emit_json({"files": results})
    else:
        table(
            "file",
            "format",
            "imported",
            "updated",
            "already here",
            "failed",
            rows=[
                [
                    r["file"],
                    r.get("format", "-"),
                    r.get("imported", 0),
                    r.get("updated", 0),
                    r.get("already_imported", 0),
                    r.get("failed", ""),
                ]
                for r in results
            ],
        )
        typer.echo(
            f"{sum(r.get('imported', 0) for r in results)} sessions imported, "
            f"{sum(r.get('updated', 0) for r in results)} brought up to date, "
            f"{sum(r.get('already_imported', 0) for r in results)} already here"
            + (f" ({unsent} files unchanged, not sent)" if unsent else "")
            + f", {len(failed)} files failed",
            err=True,  # a notice: stdout holds the rows
        )
    if failed:
        raise typer.Exit(EXIT_REFUSED)


CHUNK = 1 << 20


def chunks(path: Path, sent: Callable[[int], object]) -> Iterator[bytes]:
    """A file's bytes a chunk at a time, telling ``sent`` of each (the progress bar):
    a file of any size goes to the daemon as a stream, never whole in memory."""
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            yield chunk
            sent(len(chunk))


def file_time(path: Path) -> str:
    """A file's modification time, which dates a transcript that holds no times."""
    moment = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def transcript_files(paths: list[Path]) -> tuple[list[tuple[Path, int]], list[Path]]:
    """The files named and every .jsonl, .json and .traj file under the folders named,
    with their sizes; and the paths named that are not there. Below a folder named,
    links are not followed (a linked file or folder is someone else's)."""
    out: list[tuple[Path, int]] = []
    missing: list[Path] = []
    for path in paths:
        try:
            info = path.stat()
        except OSError:
            missing.append(path)
            continue
        if not stat.S_ISDIR(info.st_mode):
            out.append((path, info.st_size))
            continue
        for found in files_in(path):  # no link followed
            with suppress(OSError):
                out.append((found, found.lstat().st_size))
    return out, missing


def _unchanged(aster: Any, named: list[tuple[str, int, str]]) -> dict[str, list[str]]:
    """The files the daemon imported as they are now, and the sessions each became (asked
    a thousand at a time; none when the daemon cannot say)."""
    found: dict[str, list[str]] = {}
    for start in range(0, len(named), ASKED):
        files = [
            {"path": where, "size": size, "modified_at": modified_at}
            for where, size, modified_at in named[start : start + ASKED]
        ]
        found |= {f.path: f.sessions for f in aster.known_files(files).known}
    return found
