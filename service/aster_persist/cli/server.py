"""``serve``: the daemon in the foreground until interrupted, every setting listed in its
help. A SIGTERM or Ctrl-C that led to a clean shutdown exits 0; bad settings exit 2, a
home or app that cannot be opened 1, a server that did not start 3."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from ..settings import Settings
from .common import fail, load_settings, open_home


def settings_help() -> str:
    """Every setting with its default, for ``serve --help``."""
    lines = ["Settings (environment, or <home>/config.toml with the same names):", ""]
    for name, field in Settings.model_fields.items():
        default = field.get_default(call_default_factory=True)
        shown = str(default).lower() if isinstance(default, bool) else default
        shown = "-" if shown in (None, []) else shown
        lines.append(f"ASTER_{name.upper()} (default: {shown}): {field.description}")
    return "\n\n".join(lines)


def serve(
    host: Annotated[str | None, typer.Option(help="Address to bind (ASTER_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (ASTER_PORT).")] = None,
    home: Annotated[Path | None, typer.Option(help="Data home (ASTER_HOME).")] = None,
) -> None:
    """Run the daemon in the foreground until interrupted."""
    import uvicorn

    from ..api.guard import connection
    from ..app import create_app
    from ..secrets.redact import redact_logs

    settings = load_settings(host=host, port=port, home=home)
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    redact_logs()  # no secret is ever written to a log
    if settings.log_level.lower() != "debug":  # a line for every change seen is noise
        logging.getLogger("watchfiles").setLevel(logging.WARNING)
    _check_port(settings.host, settings.port)  # before anything is made on disk
    opened = open_home(settings.home, fallback=settings.fallback)
    try:
        application = create_app(settings, home=opened)
    except (OSError, ValueError) as exc:
        opened.close()
        raise fail(str(exc)) from None
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
    redact_logs("uvicorn", "uvicorn.error", "uvicorn.access")  # as the config set them up
    server = _server_class()(config)
    server.run()
    if not server.started:
        raise typer.Exit(3)


def _check_port(host: str, port: int) -> None:
    """Exit 3, having made nothing, when the address is taken (another daemon, most
    likely); any other trouble binding is left for the server to report."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        if family == socket.AF_INET6:  # as asyncio binds: IPv6 alone, beside IPv4's
            probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise fail(f"{host}:{port} is in use (a daemon running already?)", 3) from None


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
