"""Failed writes and syncs: the file is left as it was, and nothing lost is reported as kept."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import FakeClock, make_client, new_session, user
from .test_sessions import session_file


@contextlib.contextmanager
def small_filesystem(where: Path, size: str = "4m") -> Iterator[bool]:
    """A size-limited tmpfs when this process may mount one; False when it may not."""
    where.mkdir()
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
        ).returncode
        == 0
    )
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder: Path) -> Path:
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f:
        for size in (65536, 4096, 512, 1):  # top off the last pages too
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    return filler


def test_disk_full_is_507_and_file_unchanged(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    with small_filesystem(tmp_path / "fs") as mounted:
        home = tmp_path / "fs" / "home"
        with make_client(home, clock) as client:
            sid = new_session(client)
            client.post(f"/v1/sessions/{sid}/events", json=user("before"))
            path = session_file(home, sid)
            before = path.read_bytes()
            if mounted:
                filler = fill(tmp_path / "fs")
            else:  # no mount allowed: the OS boundary reports ENOSPC after a partial write
                real_write = os.write
                state = {"full": True}

                def write(fd: int, data: bytes) -> int:
                    if state["full"] and os.readlink(f"/proc/self/fd/{fd}") == str(path):
                        if len(data) > 10:
                            return real_write(fd, bytes(data)[:10])
                        raise OSError(errno.ENOSPC, "No space left on device")
                    return real_write(fd, data)

                monkeypatch.setattr(os, "write", write)
            r = client.post(f"/v1/sessions/{sid}/events", json=user("x" * 20000))
            assert r.status_code == 507 and r.json()["code"] == "insufficient_storage"
            assert path.read_bytes() == before
            if mounted:
                filler.unlink()
            else:
                state["full"] = False
            r = client.post(f"/v1/sessions/{sid}/events", json=user("after"))
            assert r.status_code == 201 and r.json()["first_seq"] == 2
            assert path.read_bytes().startswith(before)


def test_fsync_error_rolls_back_and_makes_the_session_read_only(
    home: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    with make_client(home, clock) as client:
        sid = new_session(client)
        other = new_session(client, "/srv/other")
        client.post(f"/v1/sessions/{sid}/events", json=user("kept"))
        path = session_file(home, sid)
        before = path.read_bytes()
        real = os.fdatasync

        def failing(fd: int) -> None:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                raise OSError(errno.EIO, "Input/output error")
            real(fd)

        monkeypatch.setattr(os, "fdatasync", failing)
        r = client.post(
            f"/v1/sessions/{sid}/events", json=user("lost"), headers={"Idempotency-Key": "k"}
        )
        assert r.status_code == 500 and r.json()["code"] == "storage_failed"
        assert "read-only" in r.json()["detail"]
        assert path.read_bytes() == before
        monkeypatch.setattr(os, "fdatasync", real)  # the disk recovers; the service must not retry
        r = client.post(
            f"/v1/sessions/{sid}/events", json=user("again"), headers={"Idempotency-Key": "k"}
        )
        assert r.status_code == 409 and r.json()["code"] == "session_read_only"
        assert client.get(f"/v1/sessions/{sid}").json()["state"] == "read_only"
        assert [
            i["id"]
            for i in client.get("/v1/sessions", params={"state": "read_only"}).json()["items"]
        ] == [sid]
        assert client.post(f"/v1/sessions/{other}/events", json=user("fine")).status_code == 201
        assert path.read_bytes() == before
    with make_client(home, clock) as client:
        assert client.get(f"/v1/sessions/{sid}").json()["state"] == "ok"
        r = client.post(
            f"/v1/sessions/{sid}/events", json=user("again"), headers={"Idempotency-Key": "k"}
        )
        assert r.status_code == 201 and r.json()["first_seq"] == 2


def test_torn_tail_is_dropped_then_quarantined_before_append(home: Path, clock: FakeClock) -> None:
    with make_client(home, clock) as client:
        sid = new_session(client)
        client.post(f"/v1/sessions/{sid}/events", json=[user("a"), user("b")])
    path = session_file(home, sid)
    whole = path.read_bytes()
    with path.open("ab") as f:
        f.write(b'{"type":"message","seq":3,"role":"us')
    with make_client(home, clock) as client:
        events = client.get(f"/v1/sessions/{sid}/events").json()["events"]
        assert [e["seq"] for e in events] == [1, 2]
        assert path.read_bytes().endswith(b'"role":"us')  # reading never changes the file
        assert client.post(f"/v1/sessions/{sid}/events", json=user("c")).json()["first_seq"] == 3
        assert path.read_bytes().startswith(whole)
        aside = list(path.parent.glob(f"{sid}.jsonl.torn-*"))
        assert len(aside) == 1 and aside[0].read_bytes() == b'{"type":"message","seq":3,"role":"us'
        assert [e["seq"] for e in client.get(f"/v1/sessions/{sid}/events").json()["events"]] == [
            1,
            2,
            3,
        ]


def test_bad_middle_line_marks_damaged_and_refuses_appends(home: Path, clock: FakeClock) -> None:
    with make_client(home, clock) as client:
        sid = new_session(client)
        client.post(f"/v1/sessions/{sid}/events", json=[user("a"), user("b")])
    path = session_file(home, sid)
    data = path.read_bytes().split(b"\n")
    data[1] = b"{broken"
    path.write_bytes(b"\n".join(data))
    damaged = path.read_bytes()
    with make_client(home, clock) as client:
        got = client.get(f"/v1/sessions/{sid}").json()
        assert got["state"] == "damaged" and got["bad_lines"] == [2]
        assert [i["state"] for i in client.get("/v1/sessions").json()["items"]] == ["damaged"]
        assert [e["seq"] for e in client.get(f"/v1/sessions/{sid}/events").json()["events"]] == [2]
        r = client.post(f"/v1/sessions/{sid}/events", json=user("c"))
        assert r.status_code == 409 and r.json()["code"] == "session_damaged"
        assert path.read_bytes() == damaged


def test_regression_batch_cut_short_by_power_loss_is_not_replayed_as_complete(
    home: Path, clock: FakeClock
) -> None:
    """A power loss left 2 of a keyed 3-event batch; a retry replayed it as applied (count 2)."""
    with make_client(home, clock) as client:
        sid = new_session(client)
        batch = [user("a"), user("b"), user("c")]
        assert (
            client.post(
                f"/v1/sessions/{sid}/events", json=batch, headers={"Idempotency-Key": "K"}
            ).json()["count"]
            == 3
        )
    path = session_file(home, sid)
    data = path.read_bytes()
    path.write_bytes(
        data[: data.rstrip(b"\n").rfind(b"\n") + 1]
    )  # the last line never reached the disk
    with make_client(home, clock) as client:
        assert client.get(f"/v1/sessions/{sid}").json()["events"] == 0  # all or nothing
        r = client.post(f"/v1/sessions/{sid}/events", json=batch, headers={"Idempotency-Key": "K"})
        assert r.status_code == 201 and r.json() == {
            "first_seq": 1,
            "last_seq": 3,
            "count": 3,
            "replayed": False,
        }
        assert [
            e["content"] for e in client.get(f"/v1/sessions/{sid}/events").json()["events"]
        ] == ["a", "b", "c"]
    aside = list(path.parent.glob(f"{sid}.jsonl.torn-*"))
    assert len(aside) == 1 and aside[0].read_bytes().count(b"\n") == 2


def test_regression_client_fields_cannot_fake_seq_or_keys(client, home: Path) -> None:  # type: ignore[no-untyped-def]
    """`"seq": null` replaced the server's seq; an `idempotency_key` in the header or an event faked a replay."""
    for event in (
        {**user("x"), "seq": None},
        {**user("x"), "idempotency_key": "K"},
        {**user("x"), "batch_size": 2},
    ):
        sid = new_session(client)
        r = client.post(f"/v1/sessions/{sid}/events", json=[event])
        assert r.status_code == 422, event
    r = client.post("/v1/sessions", json={"repo_root": "/srv/x", "idempotency_key": "K"})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == "header.idempotency_key"
