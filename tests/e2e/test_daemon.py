"""The daemon as a process: the lock, refusals at start, the fallback, clean shutdown."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from ..conftest import Daemon, free_port


def serve(env: dict[str, str], *args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aster_persist", "serve", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_second_daemon_on_the_same_home_exits_naming_home_and_pid(daemon: Daemon) -> None:
    done = serve({"ASTER_HOME": str(daemon.home), "ASTER_PORT": str(free_port())})
    assert done.returncode != 0
    assert str(daemon.home) in done.stderr and f"pid {daemon.proc.pid}" in done.stderr
    assert httpx.get(daemon.url + "/healthz").status_code == 200


def test_public_bind_without_auth_is_refused(tmp_path: Path) -> None:
    done = serve({"ASTER_HOME": str(tmp_path / "h"), "ASTER_AUTH": "off"}, "--host", "0.0.0.0")
    assert done.returncode == 2 and "without a token" in done.stderr


def test_bad_setting_is_named(tmp_path: Path) -> None:
    done = serve({"ASTER_HOME": str(tmp_path / "h"), "ASTER_DURABILITY": "sometimes"})
    assert done.returncode == 2 and "ASTER_DURABILITY='sometimes'" in done.stderr


def test_unwritable_home_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    done = serve({"ASTER_HOME": str(tmp_path / "file" / "h")})
    assert done.returncode == 1 and "is not usable" in done.stderr


def test_memory_fallback_is_loud(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    d = Daemon(tmp_path / "file" / "h", env={"ASTER_FALLBACK": "memory"})
    d.start(wait=False)
    try:
        for _ in range(200):
            try:
                r = httpx.get(d.url + "/readyz")
                break
            except httpx.HTTPError:
                import time

                time.sleep(0.05)
        assert r.status_code == 503 and r.json()["status"] == "degraded"
        assert "temporary in-memory store" in r.headers["warning"]
        info = httpx.get(d.url + "/v1/info").json()
        assert info["degraded"] and info["home"] != str(tmp_path / "file" / "h")
        created = httpx.post(d.url + "/v1/sessions", json={"repo_root": "/srv/x"})
        assert created.status_code == 201 and "warning" in created.headers
        assert "DEGRADED" in d.output()
    finally:
        assert d.stop() == 0


def test_sigterm_finishes_cleanly_and_releases_the_lock(daemon: Daemon) -> None:
    sid = httpx.post(daemon.url + "/v1/sessions", json={"repo_root": "/srv/x"}).json()["id"]
    httpx.post(
        daemon.url + f"/v1/sessions/{sid}/events",
        json={"type": "message", "role": "user", "content": "hi"},
    )
    assert daemon.stop() == 0
    assert "Application shutdown complete" in daemon.output()
    daemon.start()
    assert httpx.get(daemon.url + "/v1/sessions").json()["items"][0]["events"] == 1


def test_token_file_is_named_in_the_log_never_its_value(tmp_path: Path) -> None:
    d = Daemon(tmp_path / "home", env={"ASTER_AUTH": "token"})
    d.start(wait=False)
    try:
        token = ""
        for _ in range(200):
            token_file = tmp_path / "home" / "token"
            if token_file.exists() and token_file.read_text().strip():
                token = token_file.read_text().strip()
                break
            import time

            time.sleep(0.05)
        headers = {"Authorization": f"Bearer {token}"}
        for _ in range(100):
            try:
                if httpx.get(d.url + "/readyz", headers=headers).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
        assert httpx.get(d.url + "/v1/sessions").status_code == 401
        assert httpx.get(d.url + "/v1/sessions", headers=headers).status_code == 200
    finally:
        assert d.stop() == 0
    assert str(tmp_path / "home" / "token") in d.output()
    assert token and token not in d.output()
