"""Memory (``--only memory``), on a home holding ``--blocks`` memory blocks.

- The memory context, p50 over a raw socket (target: under 10 ms; no baseline).
- A remember -> recall round trip (write a block, read it back) against a single
  durable append to a session (target: within 2x of it), and beside it the floor: two
  no-op requests plus the bare disk work a remember must do (``MemoryDiskWork``).

The three are timed in turn, three rounds; the medians are printed.
"""

from __future__ import annotations

import itertools
import os
import shutil
import statistics
from pathlib import Path

import orjson

from bench.harness import EVENT, RawClient, add, daemon, fsync_probe, noop, p50


def bench_memory(work: Path, blocks: int) -> None:
    home = work / "memory-home"
    make_blocks(home, blocks)
    d = daemon(home)
    base = noop()
    try:
        raw = RawClient(d.port)
        ctx = p50(lambda: raw.request("GET", "/v1/memory/context"))
        text = orjson.loads(raw.request("GET", "/v1/memory/context")[1])
        assert text["counts"]["blocks"] == blocks and text["counts"]["shown"] == 60
        sid = orjson.loads(raw.request("POST", "/v1/sessions", b'{"repo_root": "/srv/bench"}')[1])[
            "id"
        ]
        counter = iter(range(10**9))
        event = orjson.dumps(EVENT)

        def round_trip() -> None:
            i = next(counter)
            body = orjson.dumps({"name": f"rt-{i}", "content": f"note {i} " * 5})
            raw.request("POST", "/v1/memory/blocks", body)
            raw.request("GET", f"/v1/memory/blocks/rt-{i}")

        def append() -> None:
            raw.request("POST", f"/v1/sessions/{sid}/events", event)

        no_op = RawClient(base.port)
        disk = MemoryDiskWork(work)

        def floor() -> None:
            no_op.request("POST", "/noop", event)
            disk()
            no_op.request("POST", "/noop", event)

        rts, apps, floors = [], [], []
        for _ in range(3):
            rts.append(p50(round_trip, 100))
            apps.append(p50(append, 100))
            floors.append(p50(floor, 100))
        disk.close()
        rt, ap, fl = statistics.median(rts), statistics.median(apps), statistics.median(floors)
        add(
            f"memory context with {blocks:,} blocks on disk",
            f"p50 {ctx:.2f} ms",
            "-",
            "target < 10 ms",
        )
        add(
            f"remember -> recall round trip (fsync {fsync_probe(work):.2f} ms)",
            f"p50 {rt:.2f} ms",
            f"p50 {ap:.2f} ms single append",
            f"{rt / ap:.2f}x (target within 2x)",
        )
        add(
            "two no-op requests and a remember's disk work alone",
            f"p50 {fl:.2f} ms",
            f"p50 {ap:.2f} ms single append",
            f"{fl / ap:.2f}x (the floor of a round trip)",
        )
    finally:
        d.stop()
        base.stop()


def make_blocks(home: Path, n: int) -> None:
    folder = home / "memory"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    for i in range(n):
        (folder / f"block-{i:05d}.md").write_text(
            f"---\nname: block-{i:05d}\ndescription: fact number {i} about the build\n"
            f"tags: [bench]\nimportance: 0.5\nupdated_at: '2026-01-01T00:{i // 600 % 60:02d}:{i // 10 % 60:02d}.000Z'\n"
            f"---\nThe build needs step {i} before step {i + 1}.\n"
        )


class MemoryDiskWork:
    """What a remember must do on disk, bare: a block written to a temporary file, synced,
    renamed over its name and its folder synced (SPEC §4.1), then a journal line appended
    and synced (§5)."""

    def __init__(self, work: Path) -> None:
        self.folder = work / "bare-memory"
        self.folder.mkdir(exist_ok=True)
        self.journal_path = work / "bare-journal.jsonl"
        self.journal = os.open(self.journal_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.block = b"---\nname: rt\ndescription: note\n---\n" + b"note 1 " * 5 + b"\n"
        self.entry = b"x" * 400 + b"\n"
        self.count = itertools.count()

    def __call__(self) -> None:
        tmp = self.folder / f".tmp-{next(self.count)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, self.block)
        os.fsync(fd)
        os.close(fd)
        os.replace(tmp, self.folder / f"rt-{next(self.count)}.md")
        folder = os.open(self.folder, os.O_RDONLY)
        os.fsync(folder)
        os.close(folder)
        os.write(self.journal, self.entry)
        os.fdatasync(self.journal)

    def close(self) -> None:
        os.close(self.journal)
        self.journal_path.unlink()
        shutil.rmtree(self.folder)
