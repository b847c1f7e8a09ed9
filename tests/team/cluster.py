"""A real three-node JetStream cluster on loopback for the team's tests: each node its
own nats-server process (the version team.txt installs), its own store folder, synced
on every write (``sync_interval: always``), routes to the other two. Nodes can be killed
(SIGKILL) and started again on the same ports and store."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

SERVER = Path(sys.executable).with_name("nats-server")


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class Node:
    def __init__(self, name: str, folder: Path, client: int, route: int, monitor: int) -> None:
        self.name, self.folder = name, folder
        self.client, self.route, self.monitor = client, route, monitor
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.client}"

    def jsz(self) -> dict[str, object]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.monitor}/jsz", timeout=2) as r:
            found: dict[str, object] = json.loads(r.read())
            return found


class Cluster:
    """Three nodes; ``urls`` is what a daemon is given (``ASTER_TEAM_URL``)."""

    def __init__(self, root: Path, size: int = 3) -> None:
        ports = free_ports(3 * size)
        self.nodes = [
            Node(f"n{i + 1}", root / f"n{i + 1}", *ports[3 * i : 3 * i + 3]) for i in range(size)
        ]

    @property
    def urls(self) -> str:
        return ",".join(node.url for node in self.nodes)

    def _config(self, node: Node) -> Path:
        node.folder.mkdir(parents=True, exist_ok=True)
        routes = ", ".join(
            f'"nats-route://127.0.0.1:{other.route}"' for other in self.nodes if other is not node
        )
        path = node.folder / "server.conf"
        path.write_text(
            f"server_name: {node.name}\n"
            f"listen: 127.0.0.1:{node.client}\n"
            f"http: 127.0.0.1:{node.monitor}\n"
            f'jetstream {{ store_dir: "{node.folder / "store"}", sync_interval: always }}\n'
            # no_advertise: a client knows only the servers it was given, so a machine
            # given one node is cut off when that node is down
            f"cluster {{ name: aster, listen: 127.0.0.1:{node.route}, no_advertise: true, "
            f"routes: [{routes}] }}\n"
        )
        return path

    def start(self, timeout: float = 30) -> None:
        for node in self.nodes:
            self.start_node(node, wait=False)
        self.wait_ready(timeout)

    def start_node(self, node: Node, *, wait: bool = True) -> None:
        log = (node.folder / "server.log").open("ab") if node.folder.exists() else None
        config = self._config(node)
        log = log or (node.folder / "server.log").open("ab")
        node.process = subprocess.Popen(
            [str(SERVER), "-c", str(config)], stdout=log, stderr=subprocess.STDOUT
        )
        log.close()
        if wait:
            self.wait_ready()

    def kill(self, node: Node) -> None:
        """SIGKILL: no chance to sync or say goodbye."""
        assert node.process is not None
        node.process.send_signal(signal.SIGKILL)
        node.process.wait(10)
        node.process = None

    def wait_ready(self, timeout: float = 30) -> None:
        """Every running node serves JetStream and knows the meta leader."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if all(
                    (node.jsz().get("meta_cluster") or {}).get("leader")  # type: ignore[union-attr]
                    for node in self.nodes
                    if node.process is not None
                ):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("the JetStream cluster did not elect a leader")
            time.sleep(0.1)

    def close(self) -> None:
        for node in self.nodes:
            if node.process is not None:
                node.process.terminate()
        for node in self.nodes:
            if node.process is not None:
                try:
                    node.process.wait(10)
                except subprocess.TimeoutExpired:
                    node.process.kill()
                node.process = None


def clean(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root, exist_ok=True)
