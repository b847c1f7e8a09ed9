"""Search by meaning fused with BM25 (semantic search on): weighted reciprocal rank
fusion of each ranking's best documents, then the rest of BM25's, so that pages go on
through everything the words find.

One order, one cursor: a fused document's rank is its fused score negated (between
-1/11 and 0); a document after them, found by its words alone, ranks by ``-1 / bm25``
(above 0, BM25's order kept, computed alike in SQL and here), so a ``<rank>~<row>``
cursor is a place in the whole order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .ranking import (
    WITH_SESSIONS,
    candidates,
    conditions,
    fts,
    ranked,
    session_args,
    session_clause,
)
from .sqlite import sqlite3
from .text import Query

if TYPE_CHECKING:  # numpy and the model come with the semantic extra
    from .semantic import Vectors

# reciprocal rank fusion's constant: 60 in Cormack et al., 2009; steeper here (the first
# of each ranking counts more), measured better at every depth on LongMemEval (bench/)
RRF_K = 10
# Recall by similarity raises relevance by recency (x1 to x1.5): a steeper fusion keeps
# relevance first there (rank 1 scores 2.5 times rank 10, not 1.15 times).
MEMORY_RRF_K = 5
POOL = 300  # best documents of each ranking that are fused
CHECK = 500  # candidates checked against a search's filters at once


def fuse(
    rankings: Sequence[tuple[float, Sequence[Any]]], k: int = RRF_K
) -> list[tuple[Any, float]]:
    """Weighted reciprocal rank fusion: each key scores ``sum(weight / (k + rank))`` over
    the rankings (``(weight, keys best first)``) it is in; best first, ties by key."""
    scores: dict[Any, float] = {}
    for weight, keys in rankings:
        if weight <= 0:
            continue  # a ranking without weight adds nothing, not even its keys
        for rank, key in enumerate(keys, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def fused_page(
    db: sqlite3.Connection,
    query: Query,
    vectors: Vectors,
    limit: int,
    after: tuple[float, int] | None,
) -> list[tuple[int, float]]:
    """Up to ``limit`` documents (number, rank) after ``after`` in the fused order."""
    assert query.words is not None
    words = vectors.weight < 1  # BM25's ranking has weight in the fusion
    lexical = ranked(db, query, POOL, None) if words else []
    semantic = nearest(db, query, vectors) if vectors.weight > 0 else []
    fused = fuse([(1 - vectors.weight, [r for r, _ in lexical]), (vectors.weight, semantic)])
    page: list[tuple[int, float]] = []
    if after is None or after[0] < 0:
        page = [(r, -score) for r, score in fused if after is None or (-score, r) > after]
    if len(page) >= limit or (words and len(lexical) < POOL):
        return page[:limit]  # every document the words find is among the fused
    beyond = lexical[-1] if lexical else None  # BM25's documents after its pool...
    pooled = {r for r, _ in lexical}
    shown = [r for r in semantic if r not in pooled]  # ...and not fused already
    rest = _rest(db, query, beyond, shown, limit - len(page), after)
    return page + rest


def nearest(db: sqlite3.Connection, query: Query, vectors: Vectors) -> list[int]:
    """The documents nearest the query in meaning that pass its filters, best first."""
    assert query.words is not None
    where, args = conditions(query)
    where, args = where[1:], args[1:]  # the filters, without the full-text match

    def keep(batch: list[int]) -> set[int]:  # those that exist and pass the filters
        sql = (
            f"SELECT d.rowid FROM docs d {WITH_SESSIONS} "
            f"WHERE d.rowid IN ({', '.join('?' * len(batch))})"
        )
        return {r for (r,) in db.execute(" AND ".join([sql, *where]), [*batch, *args])}

    only = None
    if query.session is not None:  # a session's few documents: compare only with them
        found = db.execute(
            f"SELECT rowid FROM docs WHERE {session_clause(query, 'session', 'seq')}",
            session_args(query),
        )
        only = {r for (r,) in found}
    assert query.sentence is not None
    return vectors.nearest(query.sentence, keep, only=only, pool=POOL, batch=CHECK)


def _rest(
    db: sqlite3.Connection,
    query: Query,
    beyond: tuple[int, float] | None,
    shown: list[int],
    limit: int,
    after: tuple[float, int] | None,
) -> list[tuple[int, float]]:
    """BM25's documents after ``beyond`` (its pool's last) and not ``shown``, ranked by
    ``-1 / bm25``, after ``after`` when that is in this part of the order."""
    inner, args = candidates(query)
    sql = f"SELECT rowid, -1.0 / rank AS far FROM ({inner}) WHERE 1"
    if beyond is not None:
        sql += " AND (rank > ? OR (rank = ? AND rowid > ?))"
        args += [beyond[1], beyond[1], beyond[0]]
    if shown:
        sql += f" AND rowid NOT IN ({', '.join('?' * len(shown))})"
        args += shown
    if after is not None and after[0] >= 0:
        sql = f"SELECT rowid, far FROM ({sql}) WHERE far > ? OR (far = ? AND rowid > ?)"
        args += [after[0], after[0], after[1]]
    sql += " ORDER BY far, rowid LIMIT ?"
    args.append(limit)
    return [(int(r), float(k)) for r, k in fts(lambda: db.execute(sql, args).fetchall())]
