"""Search by meaning at a million documents (``--only ann``): the graph (``index/ann.py``)
against the exact search it stands in for, on the same vectors, in the same run.

The vectors come from the real model (MiniLM, as ``ASTER_SEMANTIC`` runs it): every
user and assistant text of the fixtures is cut into sentences, each sentence embedded,
and a million texts are made of three sentences drawn at random, each text's vector the
normalised mean of its sentences' (embedding a million texts would take hours here), so
that near neighbours are texts sharing a sentence, as turns of one project share their
words. The queries are 200 other such texts, made the same way. Reported: the p50 of a query (the model's
embedding of it left out: both pay it alike) and how many of the exact search's 10
nearest the graph finds (recall@10) among the candidates a search asks of it (four times
the ``POOL`` that fusion takes of each ranking), with the time to build the graph and its
memory.
"""

from __future__ import annotations

import random
import re
import statistics
import time

import numpy as np
import orjson

from bench.harness import ROOT, add


def sentences() -> list[str]:
    """The sentences of every turn's text in the fixtures."""
    found: list[str] = []
    for path in sorted((ROOT / "tests" / "fixtures").rglob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            for text in _texts(record):
                found += [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if 20 < len(s) < 300]
    return sorted(set(found))


def _texts(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [
            t for k, v in value.items() if k in ("text", "content", "message") for t in _texts(v)
        ]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


def bench_ann(count: int = 1_000_000, queries: int = 200) -> None:
    from aster_persist.index import encoder
    from aster_persist.index.ann import Ann
    from aster_persist.index.fusion import POOL

    rng = random.Random(38)
    pool = sentences()
    embedder = encoder.load()
    t = time.perf_counter()
    each = np.concatenate([embedder.embed(pool[i : i + 256]) for i in range(0, len(pool), 256)])
    embedded = time.perf_counter() - t
    vectors = np.zeros((count + queries, embedder.dim), dtype=np.float32)
    for start in range(0, count + queries, 100_000):
        size = min(100_000, count + queries - start)
        drawn = np.array([rng.sample(range(len(pool)), 3) for _ in range(size)])
        sums = each[drawn].sum(axis=1)
        vectors[start : start + size] = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    matrix, asked = vectors[:count], vectors[count:]
    rowids = np.arange(1, count + 1, dtype=np.int64)
    graph = Ann(embedder.dim)
    t = time.perf_counter()
    for start in range(0, count, 50_000):
        graph.add(rowids[start : start + 50_000], matrix[start : start + 50_000])
    built = time.perf_counter() - t
    exact_times, graph_times, recall = [], [], []
    for query in asked:  # the two interleaved, query by query
        t = time.perf_counter()
        similarity = matrix @ query
        best = np.argpartition(-similarity, 10)[:10]
        exact = set(rowids[best[np.argsort(-similarity[best])]].tolist())
        exact_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        found, _similarity = graph.search(query, 4 * POOL)  # as a search asks the graph
        graph_times.append(time.perf_counter() - t)
        recall.append(len(exact & set(found[:10].tolist())) / 10)
    g, e = statistics.median(graph_times) * 1000, statistics.median(exact_times) * 1000
    add(
        f"search by meaning at {count:,} vectors ({embedder.dim} dimensions), {queries} queries",
        f"graph p50 {g:.2f} ms, recall@10 {statistics.mean(recall):.3f} of the exact search's",
        f"exact search p50 {e:.1f} ms",
        f"{e / g:.0f}x faster (target p50 < 20 ms, recall within 0.02)",
    )
    add(
        f"building the graph of {count:,} vectors (both cores)",
        f"{built:.0f} s ({count / built:,.0f} vectors/s), {graph.index.memory_usage / 1e6:.0f} MB",
        f"embedding the {len(pool):,} sentences: {embedded:.0f} s; the vectors alone: {matrix.nbytes / 1e6:.0f} MB",
        "built a step at a time on the catalog thread",
    )
