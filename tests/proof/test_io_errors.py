"""EIO and ENOSPC injected at the 1st, 2nd, … nth write or sync of a transcript: never
a 2xx for a write that was lost, the file exactly as it was before the failed request,
appends working again once the disk does (after a failed write), and a session that is
read-only and says so (after a failed sync, until restart)."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..api.test_sessions import session_file
from ..conftest import FakeClock, make_client, new_session, user
from .scale import record, rounds

N = rounds(6, 40)


def injector(
    real: Callable[..., object], path: Path, n: int, code: int, seen: dict[str, Any]
) -> Callable[..., object]:
    """``real``, failing with ``code`` at its nth call on ``path``."""

    def failing(fd: int, *args: object) -> object:
        if os.readlink(f"/proc/self/fd/{fd}") == str(path) and not seen["failed"]:
            seen["ops"] += 1
            if seen["ops"] == n:
                seen["failed"] = True
                raise OSError(code, os.strerror(code))
        return real(fd, *args)

    return failing


@pytest.mark.parametrize(
    ("call", "code"),
    [("write", errno.EIO), ("write", errno.ENOSPC), ("fdatasync", errno.EIO)],
)
def test_a_failure_at_the_nth_operation_is_never_acknowledged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str, code: int
) -> None:
    faults = checked = lost = 0
    for n in range(1, N + 1):
        home = tmp_path / f"home-{n}"
        with make_client(home, FakeClock()) as client:
            sid = new_session(client)
            path = session_file(home, sid)
            real = getattr(os, call)
            seen = {"ops": 0, "failed": False}
            monkeypatch.setattr(os, call, injector(real, path, n, code, seen))
            acked: list[str] = []
            for i in range(n + 1):
                before = path.read_bytes()
                text = f"event {i} " + "z" * (i * 997 % 5000)
                r = client.post(f"/v1/sessions/{sid}/events", json=[user(text), user(text + "!")])
                checked += 1
                if r.status_code == 201:
                    acked.append(text)
                    continue
                faults += 1
                assert r.status_code in (500, 507), r.text
                assert r.headers["content-type"].startswith("application/problem+json")
                assert path.read_bytes() == before, "a failed request changed the file"
                break
            monkeypatch.setattr(os, call, real)  # the disk is fine again
            after = client.post(f"/v1/sessions/{sid}/events", json=user("after"))
            if call == "fdatasync" and seen["failed"]:
                assert after.status_code == 409 and after.json()["code"] == "session_read_only"
                assert "read-only" in after.json()["detail"]
                assert client.get(f"/v1/sessions/{sid}").json()["state"] == "read_only"
            else:
                assert after.status_code == 201, after.text
            data = path.read_bytes()
            lost += sum(1 for text in acked if data.count(f'"{text}"'.encode()) != 1)
        if call == "fdatasync":
            with make_client(home, FakeClock()) as client:  # a restart lifts read-only
                assert client.post(f"/v1/sessions/{sid}/events", json=user("x")).status_code == 201
    assert faults == N and lost == 0
    name = {errno.EIO: "EIO", errno.ENOSPC: "ENOSPC"}[code]
    record(f"{name} at the nth {call}", rounds=N, faults=faults, checked=checked, lost=lost)
