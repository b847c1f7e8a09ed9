"""A three-node JetStream cluster for each test, and daemons joined to it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ..conftest import Daemon
from .cluster import Cluster


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    nodes = Cluster(tmp_path / "nats")
    nodes.start()
    try:
        yield nodes
    finally:
        nodes.close()


@pytest.fixture
def machines(tmp_path: Path, cluster: Cluster) -> Iterator[Callable[..., Daemon]]:
    """Start a daemon on its own home as machine ``name``, joined to the cluster."""
    started: list[Daemon] = []

    def start(name: str, projects: str | None = "/srv/shared", **env: str) -> Daemon:
        """``projects`` None: the default, every project with a git remote."""
        shared = {"ASTER_TEAM_PROJECTS": projects} if projects is not None else {}
        daemon = Daemon(
            tmp_path / f"home-{name}",
            env={"ASTER_TEAM_URL": cluster.urls, "ASTER_MACHINE": name, **shared, **env},
        )
        started.append(daemon.start())
        return daemon

    yield start
    for daemon in started:
        daemon.kill()
