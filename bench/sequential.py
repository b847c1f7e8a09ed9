"""One durable append after another, as an agent writes its turns: the daemon's latency
for a single event over a keep-alive connection, beside the OpenAI Agents SDK's
``SQLiteSession`` adding one item to a file database in the same process (its own
durability: SQLite's default journal). Each round times both, one after the other, so
a slow spell of this machine's fsync falls on both; an fsync probe is printed beside.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path

import orjson

from bench.harness import RawClient, add, daemon, fsync_probe

EVENT = {"type": "message", "role": "user", "content": "one turn of an agent, said once"}
N = 400


def _ours(client: RawClient, path: str, body: bytes) -> list[float]:
    times = []
    for _ in range(N):
        started = time.perf_counter()
        client.request("POST", path, body)
        times.append(time.perf_counter() - started)
    return times


def _sdk(folder: Path, round_: int) -> list[float]:
    from agents.memory import SQLiteSession

    session = SQLiteSession(f"bench-{round_}", str(folder / f"sdk-{round_}.db"))
    item = {"role": "user", "content": EVENT["content"]}

    async def run() -> list[float]:
        times = []
        for _ in range(N):
            started = time.perf_counter()
            await session.add_items([item])  # type: ignore[list-item]
            times.append(time.perf_counter() - started)
        return times

    try:
        return asyncio.run(run())
    finally:
        session.close()


def bench_sequential(work: Path, reps: int) -> None:
    d = daemon(work / "sequential-home")
    try:
        client = RawClient(d.port)
        _, created = client.request("POST", "/v1/sessions", orjson.dumps({"repo_root": "/srv/seq"}))
        path = f"/v1/sessions/{orjson.loads(created)['id']}/events"
        body = orjson.dumps(EVENT)
        _ours(client, path, body)  # warm: first-use imports and caches
        ours, sdk = [], []
        for round_ in range(reps):
            ours.append(statistics.median(_ours(client, path, body)) * 1000)
            sdk.append(statistics.median(_sdk(work, round_)) * 1000)
        add(
            f"sequential single append p50 (fsync {fsync_probe(work):.2f} ms)",
            f"{statistics.median(ours):.2f} ms ({', '.join(f'{v:.2f}' for v in ours)})",
            f"{statistics.median(sdk):.2f} ms SQLiteSession ({', '.join(f'{v:.2f}' for v in sdk)})",
            f"{statistics.median(ours) / statistics.median(sdk):.2f}x of the SDK's time",
        )
    finally:
        d.stop()
