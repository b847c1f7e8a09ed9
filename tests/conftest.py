"""Shared fixtures: real files in tmp_path, the real app, a real daemon on loopback."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from aster_persist.app import create_app
from aster_persist.settings import Settings
from aster_persist.storage.transcripts import AppendRequest

from .model_server import ScriptedModel

REPO = "/srv/repo-a"
FIXTURES = Path(__file__).parent / "fixtures"
# a small real Claude Code session (29 lines): what following and importing tests write
CLAUDE_SMALL = (
    FIXTURES / "claude-code" / "claude-code-viewer" / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long tests first (marked ``slow``): spread over the workers from the start,
    they do not trail behind the rest at the end of a parallel run."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


class FakeClock:
    """The clock is the one boundary tests fake: time moves only when told."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def make_client(home: Path, clock: Any = None, **settings: Any) -> TestClient:
    kwargs: dict[str, Any] = {"clock": clock} if clock is not None else {}
    app = create_app(Settings(home=home, **settings), **kwargs)
    return TestClient(app, base_url="http://127.0.0.1:4627", raise_server_exceptions=False)


@pytest.fixture
def client(home: Path, clock: FakeClock) -> Iterator[TestClient]:
    with make_client(home, clock) as c:
        yield c


def stored_session(store: Any, events: list[dict[str, Any]], repo_root: str = "/srv/x") -> str:
    """A session written through a transcript store directly, synced, its writer closed
    (as an idle session is): its id."""
    header, writer = store.create(repo_root=repo_root)
    sid = str(header["id"])
    store.install(sid, writer)
    store.append(AppendRequest(sid, events))
    sync = store.begin_sync()
    store.sync_fds(sync)
    store.end_sync(sync)
    store.release(sid)
    return sid


def new_session(client: TestClient | httpx.Client, repo_root: str = REPO, **fields: Any) -> str:
    r = client.post("/v1/sessions", json={"repo_root": repo_root, **fields})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def user(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": text, **extra}


def assistant(text: str | None = None, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "message", "role": "assistant", "content": text}
    if calls:
        event["tool_calls"] = calls
    return event


def call(call_id: str, name: str = "read_file", arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool(call_id: str, content: str) -> dict[str, Any]:
    return {"type": "message", "role": "tool", "tool_call_id": call_id, "content": content}


def wait_until(check: Any, timeout: float = 20) -> Any:
    """``check()``'s first true value, asked every 50 ms; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"not within {timeout} s"
        time.sleep(0.05)
    return found


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root with its bytes (the lock and index excluded)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and rel.parts[0] not in ("index",) and rel.name != ".lock":
            out[str(rel)] = path.read_bytes()
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _log_folder() -> Path:
    """A folder for a daemon's log, removed when the test process ends."""
    folder = tempfile.mkdtemp(prefix="aster-logs-")
    atexit.register(shutil.rmtree, folder, True)
    return Path(folder)


@dataclass
class Daemon:
    """aster-persist serve in a subprocess on a loopback port."""

    home: Path
    port: int = 0  # 0: a free one, picked now (and again if another process takes it first)
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    logs: Path = field(default_factory=_log_folder)

    def __post_init__(self) -> None:
        self.picked = not self.port
        self.port = self.port or free_port()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, wait: bool = True) -> Daemon:
        for attempt in range(3):
            self._spawn()
            if not wait:
                return self
            try:
                self.wait_ready()
                return self
            except BaseException:
                self.kill()  # never left running behind a test that could not use it
                # a port picked here and taken by another process before the daemon bound it
                if self.picked and attempt < 2 and "is in use" in self.output():
                    self.port = free_port()
                    continue
                raise
        raise AssertionError("unreachable")

    def _spawn(self) -> None:
        env = {**os.environ, "ASTER_HOME": str(self.home), "ASTER_PORT": str(self.port), **self.env}
        self.log = self.logs / f"daemon-{self.port}.log"
        handle = open(self.log, "ab")  # noqa: SIM115 - kept open for the child
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "aster_persist", "serve"],
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
        handle.close()

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited {self.proc.returncode}: {self.output()}")
            token = self.home / "token"  # with ASTER_AUTH=token, readiness needs it too
            headers = (
                {"Authorization": f"Bearer {token.read_text().strip()}"} if token.exists() else {}
            )
            try:
                if httpx.get(self.url + "/readyz", headers=headers, timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"daemon not ready: {self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log and self.log.exists() else ""

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self, timeout: float = 15) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout)
        return self.proc.returncode


def serving(factory: pytest.TempPathFactory, name: str, **env: str) -> Iterator[Daemon]:
    """A daemon on a fresh home for one module's tests (a module fixture yields from
    it), killed after them."""
    daemon = Daemon(factory.mktemp(name) / "home", env=env).start()
    yield daemon
    daemon.kill()


@pytest.fixture
def daemon(home: Path) -> Iterator[Daemon]:
    d = Daemon(home)
    d.start()
    yield d
    d.kill()


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    """A scripted OpenAI-compatible model on a loopback port (tests/model_server.py)."""
    server = ScriptedModel().start()
    yield server
    server.stop()
