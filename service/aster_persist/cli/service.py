"""``service``: keep the daemon running for a user, as a systemd user unit (Linux) or a
launchd agent (macOS). ``install`` writes the file (``--print`` only shows it) and
says the one command that starts it; ``uninstall`` takes our file away again. The
unit runs this interpreter's ``-m aster_persist serve``, so it keeps working whatever
``PATH`` the service manager gives it."""

from __future__ import annotations

import os
import plistlib
import shlex
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from .common import Json, emit_json, fail
from .userfiles import SHARED, UserFile, UserFileError

service_app = typer.Typer(help="Keep the daemon running: a systemd user unit or a launchd agent.")

NAME = "aster-persist"
LABEL = "dev.aster-persist.daemon"
MARK = "written by aster-persist service install"


class Kind(StrEnum):
    systemd = "systemd"
    launchd = "launchd"


def default_kind() -> Kind:
    return Kind.launchd if sys.platform == "darwin" else Kind.systemd


def command() -> list[str]:
    return [sys.executable, "-m", "aster_persist", "serve"]


def place(kind: Kind) -> Path:
    """Where the service manager looks for a user's unit or agent."""
    if kind is Kind.launchd:
        return Path.home() / "Library" / "LaunchAgents" / f"{LABEL}.plist"
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "systemd" / "user" / f"{NAME}.service"


def unit_value(text: str) -> str:
    """``text`` as systemd reads it back: ``%`` specifiers and ``$`` variables not
    expanded."""
    return text.replace("%", "%%").replace("$", "$$")


def systemd_unit(home: Path | None) -> str:
    quoted = str(home).replace("\\", "\\\\").replace('"', '\\"') if home is not None else ""
    env = f'Environment="ASTER_HOME={unit_value(quoted)}"\n' if home is not None else ""
    return (
        f"# {MARK}\n"
        "[Unit]\n"
        "Description=aster-persist: durable store for AI coding agents\n"
        "After=network.target\n\n"
        "[Service]\n"
        f"ExecStart={unit_value(shlex.join(command()))}\n"
        f"{env}"
        "Restart=on-failure\n"
        "RestartSec=2\n\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def launchd_agent(home: Path | None) -> str:
    agent = {
        "Label": LABEL,
        "ProgramArguments": command(),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "Comment": MARK,
    }
    if home is not None:
        agent["EnvironmentVariables"] = {"ASTER_HOME": str(home)}
    return plistlib.dumps(agent).decode()


def starts_with(kind: Kind, path: Path) -> str:
    if kind is Kind.launchd:
        return f"launchctl bootstrap gui/{os.getuid()} {shlex.quote(str(path))}"
    return f"systemctl --user daemon-reload && systemctl --user enable --now {NAME}"


KindOption = Annotated[
    Kind | None, typer.Option("--kind", help="systemd or launchd (default: this system's).")
]


@service_app.command("install")
def service_install(
    kind: KindOption = None,
    home: Annotated[
        Path | None,
        typer.Option(
            help="The data home it serves (default: ASTER_HOME, if set).", envvar="ASTER_HOME"
        ),
    ] = None,
    print_only: Annotated[
        bool, typer.Option("--print", help="Show the unit or agent; write nothing.")
    ] = False,
    json_out: Json = False,
) -> None:
    """Write a systemd user unit or a launchd agent that runs the daemon, and say how
    to start it."""
    kind = kind or default_kind()
    home = home.expanduser().absolute() if home is not None else None
    text = systemd_unit(home) if kind is Kind.systemd else launchd_agent(home)
    if print_only:
        sys.stdout.write(text)
        return
    path = place(kind)
    unit = UserFile(path)
    try:
        there = unit.read()
        if there is not None and MARK.encode() not in there:
            raise fail(f"{path} is not ours; move it away first", 1)
        path.parent.mkdir(parents=True, exist_ok=True)
        unit.write(text.encode(), new_mode=SHARED)  # its mode kept, a link refused
    except UserFileError as exc:
        raise fail(str(exc), 1) from None
    if json_out:
        return emit_json({"kind": kind.value, "path": str(path), "start": starts_with(kind, path)})
    typer.echo(f"wrote {path}")
    typer.echo(f"start it with: {starts_with(kind, path)}", err=True)


@service_app.command("uninstall")
def service_uninstall(kind: KindOption = None, json_out: Json = False) -> None:
    """Take the unit or agent away (stop it first: `systemctl --user disable --now
    aster-persist`, or `launchctl bootout`)."""
    kind = kind or default_kind()
    path = place(kind)
    try:
        there = UserFile(path).read()
    except UserFileError as exc:
        raise fail(str(exc), 1) from None
    if there is None:
        raise fail(f"no unit of ours at {path}", 4)
    if MARK.encode() not in there:
        raise fail(f"{path} is not ours; left as it is", 1)
    path.unlink()  # the unit where the service manager looks (a link: the link)
    if json_out:
        return emit_json({"kind": kind.value, "removed": str(path)})
    typer.echo(f"removed {path}")
