"""Power loss, simulated: everything not synced may be gone.

The daemon runs in-process while every write, sync and truncate of a transcript is
recorded from before the first session is made, with every creation of a transcript or
folder and every folder sync (a new file survives a power loss only once its folder, and
a new folder's parent, is synced). Then, at every point of the run where the power could
have failed, the file states a crash could leave are rebuilt (only what was synced;
everything written; the unsynced part torn in half; the unsynced part zero-filled, as
some filesystems leave it), read back the way the daemon reads them, and every event acknowledged before that
point must be there, once. With ``ASTER_DURABILITY=none`` the same check must find
losses: that is how we know it can.
"""

from __future__ import annotations

import os
import random
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest

from aster_persist.storage.jsonl import parse
from aster_persist.storage.transcripts import incomplete_batch

from ..conftest import FakeClock, make_client, new_session, user
from .scale import record, rounds

APPENDS = rounds(60, 150)  # per writer thread
WRITERS = 2


def named(path: Any, dir_fd: int | None) -> Any:
    """The whole path of a name given relative to a folder's descriptor (``*at`` calls)."""
    name = os.fspath(path)
    if dir_fd is None or not isinstance(name, str) or os.path.isabs(name):
        return name
    folder = os.readlink(f"/proc/self/fd/{dir_fd}")
    return folder if name == "." else os.path.join(folder, name)


class Recorder:
    """Wraps the os calls the transcript store makes, recording those on transcripts."""

    def __init__(self, root: Path) -> None:
        self.root = str(root / "sessions")
        self.ops: list[tuple[Any, ...]] = []
        self.fds: dict[int, str] = {}
        self.dirs: dict[int, str] = {}  # open folders under sessions/
        self.sizes: dict[str, int] = {}  # each file's length as written so far
        self.lock = threading.Lock()
        calls = (
            *("open", "dup", "write", "fdatasync", "fsync", "ftruncate", "close", "mkdir"),
            *("link", "unlink"),
        )
        self.real = {name: getattr(os, name) for name in calls}

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real = self.real

        def open_(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
            fd = real["open"](path, flags, mode, dir_fd=dir_fd)
            name = named(path, dir_fd)
            if isinstance(name, str) and self.transcript(name):
                with self.lock:
                    self.fds[fd] = name
                    if flags & os.O_CREAT and name not in self.sizes:
                        self.ops.append(("create", name))
                    self.sizes.setdefault(name, os.fstat(fd).st_size)
            elif isinstance(name, str) and name.startswith(self.root) and flags & os.O_DIRECTORY:
                with self.lock:
                    self.dirs[fd] = name.rstrip("/")
            return int(fd)

        def dup(fd: int) -> int:  # the syncer syncs duplicates of the writers' fds
            with self.lock:
                new = int(real["dup"](fd))
                if fd in self.fds:
                    self.fds[new] = self.fds[fd]
            return new

        def write(fd: int, data: Any) -> int:
            with self.lock:
                n = int(real["write"](fd, data))
                if fd in self.fds:
                    self.ops.append(("write", self.fds[fd], bytes(data[:n])))
                    self.sizes[self.fds[fd]] += n
            return n

        def sync(kind: str) -> Any:
            def call(fd: int) -> None:
                with self.lock:  # what a sync makes durable is what was written before it began
                    name = self.fds.get(fd)
                    size = self.sizes.get(name, 0) if name else 0
                    folder = self.dirs.get(fd)
                    mark = len(self.ops)
                real[kind](fd)
                with self.lock:
                    if name is not None:
                        self.ops.append(("sync", name, size))
                    if folder is not None:  # the entries created before it began
                        self.ops.append(("dirsync", folder, mark))

            return call

        def ftruncate(fd: int, size: int) -> None:
            with self.lock:
                real["ftruncate"](fd, size)
                if fd in self.fds:
                    self.ops.append(("truncate", self.fds[fd], size))
                    self.sizes[self.fds[fd]] = size

        def close(fd: int) -> None:
            with self.lock:
                self.fds.pop(fd, None)
                self.dirs.pop(fd, None)
                real["close"](fd)

        def mkdir(path: Any, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
            real["mkdir"](path, mode, dir_fd=dir_fd)
            name = named(path, dir_fd)
            if isinstance(name, str) and name.startswith(self.root):
                with self.lock:
                    self.ops.append(("mkdir", name.rstrip("/")))

        def link(src: Any, dst: Any, **kwargs: Any) -> None:
            real["link"](src, dst, **kwargs)
            name = named(src, kwargs.get("src_dir_fd"))
            target = named(dst, kwargs.get("dst_dir_fd"))
            if isinstance(target, str) and self.transcript(target):
                with self.lock:  # a second name for the same bytes
                    self.ops.append(("link", name, target))
                    self.sizes[target] = self.sizes.get(name, 0)

        def unlink(path: Any, **kwargs: Any) -> None:
            real["unlink"](path, **kwargs)
            name = named(path, kwargs.get("dir_fd"))
            if isinstance(name, str) and self.transcript(name):
                with self.lock:
                    self.ops.append(("unlink", name))

        monkeypatch.setattr(os, "link", link)
        monkeypatch.setattr(os, "unlink", unlink)
        monkeypatch.setattr(os, "mkdir", mkdir)
        monkeypatch.setattr(os, "open", open_)
        monkeypatch.setattr(os, "dup", dup)
        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "fdatasync", sync("fdatasync"))
        monkeypatch.setattr(os, "fsync", sync("fsync"))
        monkeypatch.setattr(os, "ftruncate", ftruncate)
        monkeypatch.setattr(os, "close", close)

    def transcript(self, name: str) -> bool:
        """A transcript, or a temporary file that becomes one."""
        return name.startswith(self.root) and ".jsonl" in os.path.basename(name)

    def mark(self) -> int:
        with self.lock:
            return len(self.ops)


def crash_states(ops: list[tuple[Any, ...]], point: int) -> list[dict[str, bytes]]:
    """The file contents a power failure just before op ``point`` could leave (the first:
    only what was synced, and only files whose folders were synced since they were made)."""
    current: dict[str, bytes] = {}
    durable: dict[str, bytes] = {}
    created: dict[str, int] = {}  # file or folder -> op index of its creation
    folder_synced: dict[str, int] = {}  # folder -> the op index its latest sync covers
    for index, op in enumerate(ops[:point]):
        if op[0] in ("create", "mkdir"):
            created[op[1]] = index
        elif op[0] == "write":
            current[op[1]] = current.get(op[1], b"") + op[2]
        elif op[0] == "truncate":
            current[op[1]] = current.get(op[1], b"")[: op[2]]
        elif op[0] == "sync":
            durable[op[1]] = current.get(op[1], b"")[: op[2]]
        elif op[0] == "dirsync":
            folder_synced[op[1]] = op[2]
        elif op[0] == "link":  # the new name survives once its folder is synced
            current[op[2]] = current.get(op[1], b"")
            if op[1] in durable:
                durable[op[2]] = durable[op[1]]
            created[op[2]] = index
        elif op[0] == "unlink":
            current.pop(op[1], None)
            durable.pop(op[1], None)

    def entry_durable(name: str) -> bool:
        """Its creation, and that of every new folder above it, is covered by a sync of
        the folder holding it."""
        while name in created:
            folder = os.path.dirname(name)
            if created[name] >= folder_synced.get(folder, -1):
                return False
            name = folder
        return True

    synced = dict(durable)  # the bytes each file's syncs made durable, should it survive
    for name in list(durable):
        if not entry_durable(name):
            del durable[name]
    variants: list[dict[str, bytes]] = [dict(durable), dict(current), {}, {}]
    for name, now in current.items():
        kept = synced.get(name, b"")
        pending = now[len(kept) :] if now.startswith(kept) else b""
        variants[2][name] = kept + pending[: len(pending) // 2]
        variants[3][name] = kept + b"\0" * len(pending)
    return variants


def readable(data: bytes) -> list[dict[str, Any]]:
    """The events a restarted daemon keeps from these bytes (as `load_writer` reads)."""
    parsed = parse(data)
    cut = incomplete_batch(parsed)
    if cut is not None:
        parsed = parse(data[:cut])
    return parsed.lines


def run(
    home: Path, durability: str, monkeypatch: pytest.MonkeyPatch, seed: int
) -> tuple[int, int, int]:
    """Append under recording, then check every crash point: (points, checked, lost)."""
    clock = FakeClock()
    recorder = Recorder(home)
    acked: list[tuple[str, int, int]] = []  # (file, x_n, op index when acknowledged)
    with make_client(home, clock, durability=durability) as client:
        recorder.install(monkeypatch)  # from the sessions' creation on
        sids = [new_session(client, f"/srv/lost{i}") for i in range(WRITERS)]
        files = {sid: str(next((home / "sessions").glob(f"*/{sid}.jsonl"))) for sid in sids}

        def writer(w: int) -> None:
            rng = random.Random(seed + w)
            sid = sids[w]
            for n in range(APPENDS):
                size = rng.choice([1, 1, 2, 5])
                events = [
                    user("y" * int(64 * 2 ** rng.uniform(0, 8)), x_n=n * 10 + i)
                    for i in range(size)
                ]
                r = client.post(
                    f"/v1/sessions/{sid}/events", json=events if size > 1 else events[0]
                )
                assert r.status_code == 201, r.text
                mark = recorder.mark()
                acked.extend((files[sid], e["x_n"], mark) for e in events)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        monkeypatch.undo()
    ops = recorder.ops
    by_file: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for name, n, mark in acked:
        by_file[name].append((n, mark))
    checked = lost = 0
    for point in range(len(ops) + 1):
        for state in crash_states(ops, point):
            for name, expected in by_file.items():
                present: dict[int, int] = defaultdict(int)
                lines = readable(state.get(name, b""))
                assert [line["seq"] for line in lines] == list(range(len(lines))), "seq gap"
                for line in lines[1:]:
                    present[line["x_n"]] += 1
                for n, mark in expected:
                    if mark <= point:
                        checked += 1
                        if present.get(n) != 1:
                            lost += 1
    return len(ops) + 1, checked, lost


def test_power_loss_at_any_point_loses_nothing_acknowledged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    points, checked, lost = run(tmp_path / "home", "fsync", monkeypatch, seed=11)
    record("power loss at every write/sync point (fsync)", rounds=points, faults=points * 4,
           checked=checked, lost=lost)  # fmt: skip
    assert checked > 1000 and lost == 0


def test_the_same_check_finds_losses_without_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _points, checked, lost = run(tmp_path / "home", "none", monkeypatch, seed=11)
    assert checked > 1000 and lost > 0  # the check can fail: acknowledged, not synced


TAU = Path(__file__).parents[1] / "fixtures" / "openai-chat" / "tau-bench" / "gpt-4o-airline.json"
CONVERSATIONS = 20


def run_import(
    home: Path, durability: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, int, int, int]:
    """Import conversations under recording (each session is written under a temporary
    name and synced, then all are linked into place and their folder synced before the
    reply), then check every crash point after the reply."""
    data = orjson.dumps(orjson.loads(TAU.read_bytes())[:CONVERSATIONS])
    recorder = Recorder(home)
    with make_client(home, FakeClock(), durability=durability) as client:
        recorder.install(monkeypatch)
        r = client.post("/v1/sessions/import", content=data, params={"repo_root": "/srv/lost"})
        mark = recorder.mark()
        monkeypatch.undo()
    assert r.status_code == 201, r.text
    expected = {
        str(next((home / "sessions").glob(f"*/{s['id']}.jsonl"))): s["events"]
        for s in r.json()["sessions"]
    }
    assert len(expected) == CONVERSATIONS
    ops = recorder.ops
    assert {op[2] for op in ops if op[0] == "link"} == set(expected)
    checked = lost = partial = 0
    for point in range(len(ops) + 1):
        for state in crash_states(ops, point):
            for name, events in expected.items():
                lines = readable(state.get(name, b""))
                whole = [line["seq"] for line in lines] == list(range(events + 1))
                if point >= mark:  # acknowledged: every session must be there, whole
                    checked += 1
                    lost += not whole
                elif name in state and not whole:  # before: absent, or whole
                    partial += 1
    return len(ops) + 1, checked, lost, partial


def test_power_loss_after_an_import_loses_no_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    points, checked, lost, partial = run_import(tmp_path / "home", "fsync", monkeypatch)
    record("power loss after an import (fsync)", rounds=points, faults=points * 4,
           checked=checked, lost=lost)  # fmt: skip
    assert checked >= CONVERSATIONS * 4 and lost == 0
    # and at any point before the reply, an imported session is absent or whole: never
    # a header without its events, nor half of them
    assert partial == 0


def test_the_import_check_finds_losses_without_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _points, checked, lost, _partial = run_import(tmp_path / "home", "none", monkeypatch)
    assert checked >= CONVERSATIONS * 4 and lost > 0
