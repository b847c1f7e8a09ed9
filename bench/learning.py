"""Learning (``--only learning``): appends that complete a turn with extraction on and a
scripted model that takes 2 s per call, so that jobs pile up behind it, against the same
appends with learning off (target: within 1.1x). The two daemons take turns, round after
round; the p50 of every append is printed.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import orjson

from bench.harness import ROOT, RawClient, add, daemon, fsync_probe


def bench_learning(work: Path, rounds: int = 10, per_round: int = 100) -> None:
    """Appends that complete a turn, with extraction on and a model that takes 2 s per
    call (jobs pile up behind it), against the same appends with learning off; rounds
    interleaved, p50 of every append."""
    sys.path.insert(0, str(ROOT))
    from tests.model_server import Reply, ScriptedModel

    model = ScriptedModel().start()
    model.responders["memory_items"] = lambda request: Reply({"items": []}, delay=2.0)
    model.responders["session_title"] = lambda request: Reply({"title": "t"}, delay=2.0)
    on = daemon(
        work / "learning-on",
        ASTER_LLM_BASE_URL=model.url,
        ASTER_LLM_MODEL="bench",
        ASTER_LLM_DRAIN_SECONDS="0",
    )
    off = daemon(work / "learning-off")
    times: dict[str, list[float]] = {"on": [], "off": []}
    body = orjson.dumps(
        [
            {"type": "message", "role": "user", "content": "how do I run the tests here?"},
            {"type": "message", "role": "assistant", "content": "Run make test from the root."},
        ]
    )
    try:
        clients = {name: RawClient(d.port) for name, d in (("on", on), ("off", off))}
        paths = {}
        for name, raw in clients.items():
            sid = orjson.loads(raw.request("POST", "/v1/sessions", b'{"repo_root": "/srv/b"}')[1])
            paths[name] = f"/v1/sessions/{sid['id']}/events"
        for round_ in range(rounds):
            for name in ("on", "off") if round_ % 2 == 0 else ("off", "on"):  # no first-mover bias
                raw = clients[name]
                for _ in range(per_round):
                    t = time.perf_counter()
                    raw.request("POST", paths[name], body)
                    times[name].append(time.perf_counter() - t)
        queued = orjson.loads(clients["on"].request("GET", "/v1/extraction")[1])["queued"]
    finally:
        on.stop()
        off.stop()
        model.stop()
    o, b = statistics.median(times["on"]) * 1000, statistics.median(times["off"]) * 1000
    add(
        f"append a completed turn, extraction on, 2 s model (fsync {fsync_probe(work):.2f} ms)",
        f"p50 {o:.2f} ms ({queued} jobs waiting)",
        f"p50 {b:.2f} ms learning off",
        f"{o / b:.2f}x (target within 1.1x)",
    )
