"""``hooks codex``, ``hooks codex-instructions`` and ``hook codex``: Codex plugged into
the store (registered in ``hooks.py``, next to Claude Code's, which finds a folder's
project with ``top_level`` too).

- ``hook codex PAYLOAD`` is Codex's ``notify`` program, which Codex runs after each
  agent turn with the turn as one JSON argument. On ``agent-turn-complete`` it finds the
  thread's rollout under ``$CODEX_HOME/sessions`` (never through a symbolic link) and
  imports it as a stream, whole lines only: an import of a source already here appends
  exactly what it gained, so running after every turn never copies a session. Like a
  Claude Code hook it never breaks the agent: a warning on stderr and exit 0, unless
  ``--strict`` asks for exit 1. Other payload types are ignored.
- ``hooks codex`` prints the ``notify`` line of Codex's ``config.toml``; ``--install``
  sets it and ``--uninstall`` takes it out, every other byte of the file kept.
- ``hooks codex-instructions`` writes the project's memory into ``AGENTS.md`` (which
  Codex reads), in a marked block replaced on each run; ``--remove`` takes it out.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import tomllib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, BinaryIO

import orjson
import typer

from .common import EXIT_REFUSED, Json, Url, daemon, emit_json, fail, top_level
from .userfiles import PRIVATE, SHARED, UserFile, UserFileError

TURN_DONE = "agent-turn-complete"
RUNS = ("aster_persist hook codex", "aster-persist hook codex")  # marks a notify of ours
BEGIN = "<!-- aster-persist:memory begin -->"
END = "<!-- aster-persist:memory end -->"
NOTE = (
    "<!-- Written by `aster-persist hooks codex-instructions` from this project's memory,"
    " and rewritten by it: edit the memory, not this block. -->"
)
CHUNK = 1 << 20
DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC

CodexHome = Annotated[
    Path | None,
    typer.Option(envvar="CODEX_HOME", help="Codex's home (default: CODEX_HOME, ~/.codex)."),
]


def codex_hook(
    payload: Annotated[
        str | None,
        typer.Argument(metavar="PAYLOAD", help="The turn, as JSON.", show_default=False),
    ] = None,
    strict: Annotated[bool, typer.Option(help="Exit 1 when it fails (else 0).")] = False,
    url: Url = None,
    codex_home: CodexHome = None,
) -> None:
    """Codex's notify program: after a turn, the thread's rollout brought in."""
    try:
        _notified(payload, url, codex_home)
    except Exception as exc:  # a notify program never breaks the agent
        typer.echo(f"aster-persist hook: {exc}", err=True)
        raise typer.Exit(1 if strict else 0) from None


def _notified(payload: str | None, url: str | None, codex_home: Path | None) -> None:
    if payload is None:
        raise ValueError("no payload: Codex adds the turn, as JSON, as the last argument")
    try:
        turn = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"the Codex payload is not JSON ({exc})") from None
    if not isinstance(turn, dict):
        raise ValueError("the Codex payload is not a JSON object")
    if turn.get("type") != TURN_DONE:
        return
    thread = turn.get("thread-id")
    if not isinstance(thread, str) or not thread:
        raise ValueError(f"an {TURN_DONE} payload without a thread-id")
    if not thread.replace("-", "").isalnum() or len(thread) > 200:
        raise ValueError(f"not a Codex thread id: {thread[:100]!r}")
    sessions = (codex_home or Path("~/.codex")).expanduser() / "sessions"
    from .. import client as api

    with _rollout(sessions, thread) as handle, api.Client(url) as aster:
        _send(aster, handle)


def _rollout(sessions: Path, thread: str) -> BinaryIO:
    """The newest rollout of ``thread`` under ``sessions``, open: no symbolic link is
    followed, to a folder or to a file, when looking nor when opening."""
    suffix = f"-{thread}.jsonl"
    try:
        root = os.open(sessions, DIRECTORY)
    except FileNotFoundError:
        raise ValueError(f"no rollout of thread {thread} under {sessions}") from None
    try:
        found = max(_rollouts(root, suffix), default=None)
        if found is None:
            raise ValueError(f"no rollout of thread {thread} under {sessions}")
        return os.fdopen(_open_beneath(root, found[1]), "rb")
    finally:
        os.close(root)


def _rollouts(folder: int, suffix: str) -> Iterator[tuple[int, tuple[str, ...]]]:
    """Each rollout file named ``rollout-…<suffix>`` below an open folder: its
    modification time and its path from there, links left out."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                inner = os.open(entry.name, DIRECTORY, dir_fd=folder)
                try:
                    for moment, parts in _rollouts(inner, suffix):
                        yield moment, (entry.name, *parts)
                finally:
                    os.close(inner)
            elif (
                entry.is_file(follow_symlinks=False)
                and entry.name.startswith("rollout-")
                and entry.name.endswith(suffix)
            ):
                yield entry.stat(follow_symlinks=False).st_mtime_ns, (entry.name,)


def _open_beneath(root: int, parts: tuple[str, ...]) -> int:
    """A file below an open folder, opened one name at a time, none of them a link."""
    folder = os.dup(root)
    try:
        for name in parts[:-1]:
            inner = os.open(name, DIRECTORY, dir_fd=folder)
            os.close(folder)
            folder = inner
        return os.open(parts[-1], FILE, dir_fd=folder)
    finally:
        os.close(folder)


def _send(aster: Any, handle: BinaryIO) -> None:
    """A rollout imported as it stands, sent as it is read, up to its last whole line
    (a line Codex is still writing waits for the next turn)."""
    moment = datetime.fromtimestamp(os.fstat(handle.fileno()).st_mtime, UTC)

    def whole_lines() -> Iterator[bytes]:
        rest = b""
        while chunk := handle.read(CHUNK):
            cut = chunk.rfind(b"\n") + 1
            if cut:
                yield rest + chunk[:cut]
                rest = chunk[cut:]
            else:
                rest += chunk

    when = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    aster.import_file(whole_lines(), format="codex", modified_at=when)


def notify_argv() -> list[str]:
    """What Codex runs after each turn: this program, in the interpreter it runs in."""
    return [sys.executable, "-m", "aster_persist", "hook", "codex"]


def notify_line(argv: list[str]) -> str:
    """The ``notify`` line of a ``config.toml`` (a JSON string is a TOML basic string)."""
    return f"notify = [{', '.join(orjson.dumps(arg).decode() for arg in argv)}]"


def is_program(value: Any) -> bool:
    """Whether a ``notify`` value is a program to run (its argv: a list of strings)."""
    return isinstance(value, list) and all(isinstance(arg, str) for arg in value)


def is_ours(value: Any) -> bool:
    """Whether a ``notify`` value runs ``hook codex`` of this program."""
    return is_program(value) and " ".join(value).endswith(RUNS)


def codex_notify(
    install: Annotated[bool, typer.Option(help="Set it in config.toml.")] = False,
    uninstall: Annotated[bool, typer.Option(help="Take it out of config.toml.")] = False,
    force: Annotated[bool, typer.Option(help="Replace another notify program.")] = False,
    config: Annotated[
        Path | None,
        typer.Option(help="Codex's config file (default: config.toml in CODEX_HOME, ~/.codex)."),
    ] = None,
    json_out: Json = False,
) -> None:
    """Codex's notify program for this store: its line of config.toml, printed or set.

    Codex runs it after every turn, and it brings the session in."""
    line = notify_line(notify_argv())
    if not install and not uninstall:
        typer.echo(line)
        return
    if install and uninstall:
        raise fail("say --install or --uninstall, not both", 2)
    home = Path(os.environ.get("CODEX_HOME") or "~/.codex")
    path = (config or home / "config.toml").expanduser()
    try:
        text = read_text(path)
        updated = with_notify(text or "", line if install else None, force)
    except UserFileError as exc:
        raise fail(str(exc), EXIT_REFUSED) from None
    except (OSError, ValueError) as exc:
        raise fail(f"{path}: {exc}; it was left as it is", EXIT_REFUSED) from None
    changed = updated != (text or "")
    if changed:
        try:
            write_text(path, updated)
        except UserFileError as exc:
            raise fail(str(exc), EXIT_REFUSED) from None
    if json_out:  # once it is done
        emit_json({"config": str(path), "installed": install, "changed": changed})
    if not changed:
        said = "already set in" if install else "not set by this program in"
        typer.echo(f"Codex notify {said} {path}; it was left as it is", err=True)
        return
    typer.echo(f"Codex notify {'set in' if install else 'removed from'} {path}", err=True)


def with_notify(text: str, line: str | None, force: bool = False) -> str:
    """A ``config.toml`` with its top-level ``notify`` set to ``line`` or, with None,
    without ours; every other byte kept. ValueError when it refuses."""
    try:
        current = tomllib.loads(text).get("notify")
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"it cannot be read as TOML ({exc})") from None
    lines = re.findall(r"[^\n]*\n|[^\n]+\Z", text)  # TOML breaks lines at \n only
    keys = list(_top_level_keys(lines))
    span = next(((a, b) for a, b, key in keys if key == "notify"), None)
    if line is None:
        return "".join(lines[: span[0]] + lines[span[1] :]) if span and is_ours(current) else text
    if current == tomllib.loads(line)["notify"]:
        return text
    if current is not None and not is_ours(current) and not force:
        shown = shlex.join(current) if is_program(current) else repr(current)
        raise ValueError(f"it already runs another notify program ({shown}); --force replaces it")
    newline = "\r\n" if "\r\n" in text else "\n"
    if span is not None and is_program(current):
        return "".join([*lines[: span[0]], line + newline, *lines[span[1] :]])
    if current is not None:
        raise ValueError("its notify is not a list of strings set at the top; set it by hand")
    at = keys[-1][1] if keys else 0
    before = "".join(lines[:at])
    if before and not before.endswith("\n"):
        before += newline
    return before + line + newline + "".join(lines[at:])


def _top_level_keys(lines: list[str]) -> Iterator[tuple[int, int, str]]:
    """Each key set before the first table, with the lines it spans (end excluded):
    TOML statements end with their line unless a string or an array is still open, so
    a statement is the fewest lines that parse."""
    start = 0
    while start < len(lines):
        end = start + 1
        while True:
            try:
                parsed = tomllib.loads("".join(lines[start:end]))
                break
            except tomllib.TOMLDecodeError:
                if end == len(lines):
                    raise
                end += 1
        if lines[start].lstrip().startswith("["):
            return  # the first table
        if parsed:
            yield start, end, next(iter(parsed))
        start = end


def read_text(path: Path) -> str | None:
    """A text file of the user's, None if there is none (a link is refused)."""
    data = UserFile(path).read()
    return None if data is None else data.decode()


def write_text(path: Path, text: str, new_mode: int = PRIVATE) -> None:
    """``text`` in place of the user's file all at once, its mode and owner kept."""
    path.parent.mkdir(parents=True, exist_ok=True)
    UserFile(path).write(text.encode(), new_mode=new_mode)


def codex_instructions(
    repo_root: Annotated[
        Path | None, typer.Option(help="A folder of the project (default: this one).")
    ] = None,
    file: Annotated[
        Path | None, typer.Option(help="The file (default: AGENTS.md at the repository's top).")
    ] = None,
    remove: Annotated[bool, typer.Option(help="Take the memory block out.")] = False,
    json_out: Json = False,
    url: Url = None,
) -> None:
    """The project's memory in AGENTS.md, which Codex reads.

    A marked block, replaced on each run; every other line of the file is kept."""
    top = top_level(repo_root or Path.cwd())
    path = (file or top / "AGENTS.md").expanduser()
    try:
        text = read_text(path)
    except UserFileError as exc:
        raise fail(str(exc), EXIT_REFUSED) from None
    except (OSError, ValueError) as exc:
        raise fail(f"{path}: {exc}; it was left as it is", EXIT_REFUSED) from None
    content = None
    if not remove:
        with daemon(url) as aster:
            content = aster.context(str(top)).content
    try:
        updated = with_block(text or "", content)
    except ValueError as exc:
        raise fail(f"{path}: {exc}; it was left as it is", EXIT_REFUSED) from None
    changed = updated != (text or "")
    try:
        if changed and remove and not updated:
            UserFile(path).target.unlink()  # nothing but the block was there
        elif changed:
            write_text(path, updated, SHARED)
    except (UserFileError, OSError) as exc:
        raise fail(f"{path}: {exc}; it was left as it is", EXIT_REFUSED) from None
    if json_out:  # once it is done
        emit_json({"file": str(path), "removed": remove, "changed": changed})
    if not changed:
        typer.echo(f"no change to {path}", err=True)
        return
    typer.echo(f"memory {'removed from' if remove else 'written to'} {path}", err=True)


def with_block(text: str, content: str | None) -> str:
    """An AGENTS.md with the memory block holding ``content``, in place of the one there
    or else at the end, or, with None, without it; every other byte kept. ValueError
    when its markers are not one whole block."""
    begins, ends = text.count(BEGIN), text.count(END)
    start, stop = text.find(BEGIN), text.find(END)
    if begins > 1 or begins != ends or stop < start:
        raise ValueError("its aster-persist memory markers are not one whole block")
    newline = "\r\n" if "\r\n" in text else "\n"
    if content is not None:
        safe = content.strip().replace(BEGIN, "").replace(END, "")
        block = newline.join([BEGIN, NOTE, *safe.splitlines(), END])
        if begins:
            return text[:start] + block + text[stop + len(END) :]
        gap = "" if not text else newline if text.endswith("\n") else newline * 2
        return text + gap + block + newline
    if not begins:
        return text
    before, after = text[:start], text[stop + len(END) :]
    after = after.removeprefix(newline)
    if before.endswith(newline * 2) and (not after or after.startswith(newline)):
        before = before[: -len(newline)]  # the blank line that set the block apart
    return before + after
