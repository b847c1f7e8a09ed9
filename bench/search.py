"""Search, on the big store of bench/listing.py (run with ``--only listing``).

Three two-word queries (words ranked 150 to 5,000 by frequency in real transcripts), top
20 with snippets, each timed 60 times over a raw socket; the median query's p50 is printed
beside how many documents match it, counted straight from the index (target: under
20 ms). There is no baseline: the target is absolute; beside it, the same ranking asked
of SQLite alone (BM25 of every match, the best 20), the floor of a search that ranks
every match.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import orjson

from aster_persist.index.sqlite import sqlite3
from bench.harness import RawClient, Server, add, p50, vocabulary


def bench_search(d: Server, home: Path) -> None:
    words = vocabulary()
    raw = RawClient(d.port)
    rows = []
    for pair in ((300, 1200), (800, 3000), (150, 5000)):
        query = f"{words[pair[0]]} {words[pair[1]]}"
        path = f"/v1/search?q={urllib.parse.quote(query)}&limit=20"
        status, body = raw.request("GET", path)
        assert status == 200 and len(orjson.loads(body)["items"]) == 20, body[:200]
        db = sqlite3.connect(f"file:{home / 'index' / 'catalog.sqlite3'}?mode=ro", uri=True)
        matches = db.execute(
            "SELECT count(*) FROM doc_text WHERE doc_text MATCH ?",
            (" OR ".join(f'"{w}"' for w in query.split()),),
        ).fetchone()[0]
        indexed = db.execute("SELECT count(*) FROM docs").fetchone()[0]
        alone = p50(lambda q=query, db=db: _ranked_alone(db, q), 60)
        db.close()
        rows.append((p50(lambda path=path: raw.request("GET", path), 60), query, matches, alone))
    latency, query, matches, alone = sorted(rows)[1]
    add(
        f"search {indexed:,} documents, two words, top 20 with snippets",
        f"p50 {latency:.2f} ms",
        f"'{query}': {matches:,} matches",
        "target < 20 ms (median of 3 queries)",
    )
    add(
        "the same ranking in SQLite alone: BM25 of every match, the best 20 (no snippets)",
        f"p50 {alone:.2f} ms",
        f"'{query}': {matches:,} matches",
        "the floor of a search that ranks every match",
    )


def _ranked_alone(db: sqlite3.Connection, query: str) -> None:
    """The ranking a search of ``query`` asks of FTS5, straight from SQLite."""
    words = " OR ".join(f'"{w}"' for w in query.split())
    db.execute(
        "SELECT rowid, rank FROM (SELECT rowid, bm25(doc_text) AS rank FROM doc_text "
        "WHERE doc_text MATCH ?) ORDER BY rank, rowid LIMIT 20",
        (words,),
    ).fetchall()
