"""Full-text search tables in the catalog database (FTS5, ``porter`` stemming).

``docs`` maps each indexed document to its session, seq, kind, role, how many secrets
its text held (redacted before it was indexed) and where its line is in the transcript;
``doc_text`` is the FTS5 index of the text, which keeps no copy of it: a hit's snippet
is cut from its line, read again from the transcript (``texts``). Memory has the same
pair, with its text (memory files are small): ``memory_docs`` (scope, name, ETag,
dates, importance, relations) and ``memory_text``. All of it is derived from the files
and rebuilt from them when lost.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import Invalid
from ..schemas.cursors import BadCursor, ranked_cursor, read_ranked_cursor, reranked_cursor
from ..secrets.redact import redact_text
from . import ranking
from .fusion import MEMORY_RRF_K, POOL, fuse, fused_page
from .ranking import NUMBER_OF, WITH_SESSIONS, fts
from .sqlite import sqlite3
from .text import RETRACTED, Doc, Query

if TYPE_CHECKING:  # numpy and the model come with the semantic extra
    from .rerank import Reranker
    from .semantic import Vectors

SCHEMA = """
CREATE TABLE IF NOT EXISTS session_numbers (
    n INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS docs (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,
    session INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    role TEXT,
    ts TEXT NOT NULL,
    secrets INTEGER NOT NULL DEFAULT 0,
    pos INTEGER NOT NULL,
    size INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS docs_session ON docs (session, seq);
CREATE INDEX IF NOT EXISTS docs_secrets ON docs (session) WHERE secrets > 0;
CREATE VIRTUAL TABLE IF NOT EXISTS doc_text USING fts5(
    text, content = '', contentless_delete = 1, tokenize = 'porter unicode61'
);
CREATE TABLE IF NOT EXISTS memory_docs (
    rowid INTEGER PRIMARY KEY,
    scope TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    etag TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    importance REAL NOT NULL,
    description TEXT NOT NULL,
    relations TEXT NOT NULL,
    UNIQUE (scope, name)
);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_text USING fts5(
    name, description, tags, body, tokenize = 'porter unicode61'
);
"""

_MEMORY_RANK = "bm25(memory_text, 2.0, 1.5, 1.5, 1.0)"
# Private-use characters mark matches inside snippets; they become offsets, so clients
# get plain text plus where to highlight it, never markup to trust.
_OPEN, _CLOSE = "\ue000", "\ue001"


def insert_docs(db: sqlite3.Connection, session: str, docs: list[Doc]) -> None:
    """Index ``docs``; a retraction among them takes out those of the seq it names
    (after the others went in: its target may be in the same batch)."""
    db.execute("INSERT OR IGNORE INTO session_numbers (id) VALUES (?)", (session,))
    (number,) = db.execute("SELECT n FROM session_numbers WHERE id = ?", (session,)).fetchone()
    gone = [(number, d.seq) for d in docs if d.kind == RETRACTED]
    if gone:
        docs = [d for d in docs if d.kind != RETRACTED]
    _insert(db, number, docs)
    if gone:
        db.executemany(
            "DELETE FROM doc_text WHERE rowid IN "
            "(SELECT rowid FROM docs WHERE session = ? AND seq = ?)",
            gone,
        )
        db.executemany("DELETE FROM docs WHERE session = ? AND seq = ?", gone)


def _insert(db: sqlite3.Connection, session: int, docs: list[Doc]) -> None:
    if not docs:
        return
    # Never a number a removed document had: semantic vectors are kept by it.
    first = db.execute(
        "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'docs'), 0) + 1"
    ).fetchone()[0]
    rows = range(first, first + len(docs))
    db.executemany(
        "INSERT INTO docs (rowid, session, seq, kind, role, ts, secrets, pos, size) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (r, session, d.seq, d.kind, d.role, d.ts, d.secrets, d.pos, d.size)
            for r, d in zip(rows, docs, strict=True)
        ],
    )
    db.executemany(
        "INSERT INTO doc_text (rowid, text) VALUES (?, ?)",
        [(r, d.text) for r, d in zip(rows, docs, strict=True)],
    )


def drop_docs(db: sqlite3.Connection, session: str, *, forget: bool = False) -> None:
    """Take out a session's documents (and with ``forget``, its number: it is gone)."""
    number = NUMBER_OF.format("?")
    db.execute(
        f"DELETE FROM doc_text WHERE rowid IN (SELECT rowid FROM docs WHERE session = {number})",
        (session,),
    )
    db.execute(f"DELETE FROM docs WHERE session = {number}", (session,))
    if forget:
        db.execute("DELETE FROM session_numbers WHERE id = ?", (session,))


def marked(text: str) -> tuple[str, list[list[int]]]:
    """Strip the match markers from ``text``; return it and the [start, end) of each match."""
    out: list[str] = []
    spans: list[list[int]] = []
    length = 0
    start = -1
    for piece in text.replace(_CLOSE, _OPEN + _CLOSE).split(_OPEN):
        if piece.startswith(_CLOSE):
            piece = piece[1:]
            if start >= 0:
                spans.append([start, length])
                start = -1
        elif out:
            start = length
        out.append(piece)
        length += len(piece)
    return "".join(out), spans


def _decode(cursor: str | None) -> tuple[float, int] | int | None:
    if cursor is None:
        return None
    try:
        return read_ranked_cursor(cursor)
    except BadCursor as exc:
        raise Invalid(str(exc)) from None


def search_docs(
    db: sqlite3.Connection,
    query: Query,
    *,
    limit: int,
    cursor: str | None,
    texts: Texts,
    vectors: Vectors | None = None,
    reranker: Reranker | None = None,
) -> tuple[list[dict[str, Any]], str | None]:
    """Transcript hits, best first: session, seq, kind, role, snippet, score. With
    ``vectors`` (semantic search on) a query of plain words ranks by BM25 and by meaning,
    fused (index/fusion.py), and its pages go on through the rest BM25 finds; with a
    ``reranker`` too, and the query asking for it, the best of those are weighed again
    (index/rerank.py) and pages go through them in their new order, then the rest."""
    after = _decode(cursor)
    fused = vectors is not None and query.words is not None and query.match is not None

    def page(count: int, after: tuple[float, int] | None) -> list[tuple[int, float]]:
        if fused:
            assert vectors is not None
            return fused_page(db, query, vectors, count, after)
        return ranking.ranked(db, query, count, after)

    if fused and query.rerank and reranker is not None and not isinstance(after, tuple):
        assert query.sentence is not None
        ranked, next_cursor = _reranked(page, query.sentence, reranker, texts, limit, after or 0)
    else:  # (a place among reranked hits, with none reranked here: the order's n-th)
        skip = after if isinstance(after, int) else 0
        ranked = page(skip + limit + 1, None if isinstance(after, int) else after)[skip:]
        more = len(ranked) > limit
        ranked = ranked[:limit]
        next_cursor = ranked_cursor(ranked[-1][1], ranked[-1][0]) if more and ranked else None
    marks = ", ".join("?" * len(ranked))
    details = {
        row[0]: row
        for row in db.execute(
            "SELECT d.rowid, k.id, d.seq, d.kind, d.role, d.ts, s.repo_root, "
            "coalesce(s.title_event, s.header_title, s.first_user) FROM docs d "
            f"{WITH_SESSIONS} WHERE d.rowid IN ({marks})",
            [rowid for rowid, _ in ranked],
        )
    }
    rows = [(*details[rowid], rank) for rowid, rank in ranked if rowid in details]
    snippets = _snippets(db, query, texts([r[0] for r in rows]))
    hits = []
    for rowid, session, seq, kind, role, ts, repo_root, title, rank_value in rows:
        text, spans = snippets.get(rowid, ("", []))
        hits.append(
            {
                "kind": kind,
                "session_id": session,
                "seq": seq,
                "role": role,
                "ts": ts,
                "repo_root": repo_root,
                "title": redact_text(title)[0] if title else title,
                "snippet": text,  # from the indexed text, its secrets redacted
                "highlights": spans,
                # BM25's, or the fused score (0 for the rest BM25 finds after the fused)
                "score": 0.0
                if query.match is None or (fused and rank_value > 0)
                else round(-rank_value, 6),
            }
        )
    return hits, next_cursor


def _reranked(
    page: Callable[[int, tuple[float, int] | None], list[tuple[int, float]]],
    words: str,
    reranker: Reranker,
    texts: Texts,
    limit: int,
    start: int,
) -> tuple[list[tuple[int, float]], str | None]:
    """The page from the ``start``-th of the reranked hits: the first ``depth`` of the
    order weighed again, then those after them in their order; and the next cursor."""
    found = page(max(reranker.depth, start + limit + 1), None)  # one pass of the order
    window, beyond = found[: reranker.depth], found[reranker.depth :]
    found_texts = texts([rowid for rowid, _ in window])
    order = reranker.order(words, [(rowid, found_texts.get(rowid, "")) for rowid, _ in window])
    # the scores stay the window's, best first: each hit takes the score of its place
    ordered = list(zip(order, sorted(rank for _, rank in window), strict=True))
    ranked = [*ordered, *beyond][start : start + limit + 1]
    more = len(ranked) > limit
    ranked = ranked[:limit]
    if not more or not ranked:
        return ranked, None
    end = start + len(ranked)
    if end < len(ordered):
        return ranked, reranked_cursor(end)
    last = ranked[-1] if end > len(ordered) else window[-1]  # after the window, or its end
    return ranked, ranked_cursor(last[1], last[0])


def _snippets(
    db: sqlite3.Connection, query: Query, texts: dict[int, str]
) -> dict[int, tuple[str, list[list[int]]]]:
    """Each document's snippet, cut from its text around what the query matched (by the
    index's own tokenizer, over the page's texts alone), or its start when the query has
    no words or matched it by meaning."""
    found: dict[int, tuple[str, list[list[int]]]] = {}
    if query.match is not None and texts:
        db.execute(_SNIPPETS)
        try:
            db.executemany("INSERT INTO temp.snip (rowid, text) VALUES (?, ?)", texts.items())
            rows = fts(
                lambda: db.execute(
                    f"SELECT rowid, snippet(snip, 0, '{_OPEN}', '{_CLOSE}', '…', 24) "
                    "FROM temp.snip WHERE snip MATCH ?",
                    [query.match],
                ).fetchall()
            )
        finally:
            db.execute("DELETE FROM temp.snip")
        found = {r: marked(text) for r, text in rows}
    for rowid, text in texts.items():  # found by meaning, not by its words
        found.setdefault(rowid, (text[:200], []))
    return found


_SNIPPETS = (  # a page's texts, for FTS5 to cut snippets from: in memory, emptied after
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.snip USING fts5(text, tokenize = 'porter unicode61')"
)
# What search shows of documents: each one's text by its number (read back from its
# transcript; a document whose line is gone is left out).
Texts = Callable[[list[int]], dict[int, str]]


# -- memory -------------------------------------------------------------------------------


def upsert_memory(db: sqlite3.Connection, doc: dict[str, Any]) -> None:
    """Index one memory document (a block or a scope's ``ASTER.md``), replacing it."""
    drop_memory(db, doc["scope"], doc["name"])
    cur = db.execute(
        "INSERT INTO memory_docs (scope, name, kind, etag, updated_at, importance, description, "
        "relations) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            doc["scope"],
            doc["name"],
            doc["kind"],
            doc["etag"],
            doc["updated_at"],
            doc["importance"],
            doc["description"],
            orjson.dumps(doc["relations"]).decode(),
        ),
    )
    db.execute(
        "INSERT INTO memory_text (rowid, name, description, tags, body) VALUES (?, ?, ?, ?, ?)",
        (
            cur.lastrowid,
            doc["name"].replace("-", " "),
            doc["description"],
            " ".join(doc["tags"]),
            doc["body"][:MAX_MEMORY_TEXT],
        ),
    )


MAX_MEMORY_TEXT = 256 * 1024


def drop_memory(db: sqlite3.Connection, scope: str, name: str) -> None:
    row = db.execute(
        "SELECT rowid FROM memory_docs WHERE scope = ? AND name = ?", (scope, name)
    ).fetchone()
    if row is not None:
        db.execute("DELETE FROM memory_text WHERE rowid = ?", row)
        db.execute("DELETE FROM memory_docs WHERE rowid = ?", row)


def memory_etags(db: sqlite3.Connection) -> dict[tuple[str, str], str]:
    return {(s, n): e for s, n, e in db.execute("SELECT scope, name, etag FROM memory_docs")}


def recency(updated_at: str, now: datetime, half_life_days: float = 30.0) -> float:
    """1.0 for a block changed now, 0.5 after ``half_life_days``, towards 0 after."""
    try:
        moment = datetime.fromisoformat(updated_at.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if moment.tzinfo is None:  # a date, or a time written by hand without a zone: UTC
        moment = moment.replace(tzinfo=UTC)
    age = max(0.0, (now - moment).total_seconds() / 86400)
    return math.pow(0.5, age / half_life_days)


def search_sessions(
    db: sqlite3.Connection,
    query: Query,
    *,
    limit: int,
    evidence: int = 3,
    pool: int = POOL,
    texts: Texts,
    vectors: Vectors | None = None,
    reranker: Reranker | None = None,
) -> list[dict[str, Any]]:
    """Sessions ranked by their turns' hits ("which session was that"): the best ``pool``
    hits grouped by session, each session scored by the sum of its best ``evidence``
    hits' scores, with those hits as its evidence, best first."""
    hits, _next = search_docs(
        db, query, limit=pool, cursor=None, texts=texts, vectors=vectors, reranker=reranker
    )
    groups: dict[str, dict[str, Any]] = {}
    for hit in hits:  # best first, so each session's first hits are its best
        group = groups.setdefault(
            hit["session_id"],
            {
                "session_id": hit["session_id"],
                "title": hit["title"],
                "repo_root": hit["repo_root"],
                "score": 0.0,
                "matches": 0,
                "hits": [],
            },
        )
        group["matches"] += 1
        if len(group["hits"]) < evidence:
            group["hits"].append(hit)
            group["score"] = round(group["score"] + float(hit["score"]), 6)
    ranked = sorted(groups.values(), key=lambda g: (-g["score"], -g["matches"]))
    return ranked[:limit]


def search_memory(
    db: sqlite3.Connection,
    query: Query,
    *,
    scopes: list[str] | None,
    kinds: tuple[str, ...] = ("block", "core"),
    now: datetime,
    k: int,
    vectors: Vectors | None = None,
    steepness: int = MEMORY_RRF_K,
    reranker: Reranker | None = None,
) -> list[dict[str, Any]]:
    """Memory ranked by relevance, raised by recency: ``relevance * (1 + 0.5 * recency)``;
    of ``scopes``, or of every scope when None. Relevance is BM25's, or with ``vectors``
    (semantic search on) and a query of plain words, BM25's and meaning's rankings fused
    with ``steepness`` as the fusion's constant (the transcripts' for a page of both)."""
    if query.match is None or scopes == []:
        return []
    in_scopes = f"AND m.scope IN ({', '.join('?' * len(scopes))}) " if scopes is not None else ""
    times = [(">=", query.after), ("<", query.before)]  # when a block was last changed
    in_times = "".join(f"AND m.updated_at {op} ? " for op, bound in times if bound is not None)
    where = f"{in_scopes}{in_times}AND m.kind IN ({', '.join('?' * len(kinds))}) "
    where_args = [*(scopes or []), *(bound for _, bound in times if bound is not None), *kinds]
    columns = (
        "m.scope, m.name, m.kind, m.etag, m.updated_at, m.importance, m.description, m.relations"
    )
    rows = fts(
        lambda: db.execute(
            f"SELECT {columns}, -{_MEMORY_RANK}, "
            f"snippet(memory_text, 3, '{_OPEN}', '{_CLOSE}', '…', 24) "
            "FROM memory_text JOIN memory_docs m ON m.rowid = memory_text.rowid "
            f"WHERE memory_text MATCH ? {where}ORDER BY {_MEMORY_RANK} LIMIT ?",
            [query.match, *where_args, max(k * 4, 50)],
        ).fetchall()
    )
    found = {(row[0], row[1]): row for row in rows}
    relevance = {key: row[8] for key, row in found.items()}
    if vectors is not None and query.sentence is not None:
        every = db.execute(
            f"SELECT {columns}, 0, substr(t.body, 1, 200), "
            f"t.name || ' ' || t.description || ' ' || t.tags || ' ' || substr(t.body, 1, 2000) "
            "FROM memory_docs m JOIN memory_text t ON t.rowid = m.rowid "
            f"WHERE 1 {where}",
            where_args,
        ).fetchall()
        nearest = vectors.memory_order(
            query.sentence,
            [((row[0], row[1]), row[3], row[10]) for row in every],
            lambda: {(s, n) for s, n in db.execute("SELECT scope, name FROM memory_docs")},
        )[:POOL]
        for row in every:
            found.setdefault((row[0], row[1]), row[:10])
        rankings = [(1 - vectors.weight, list(relevance)), (vectors.weight, nearest)]
        relevance = dict(fuse(rankings, k=steepness))
        if reranker is not None and query.rerank:  # the best weighed again: the same
            texts = {(row[0], row[1]): row[10] for row in every}  # scores, a new order
            order = reranker.order(query.sentence, [(key, texts[key]) for key in relevance])
            relevance = dict(zip(order, relevance.values(), strict=True))
    hits = []
    for key, rel in relevance.items():
        scope, name, kind, etag, updated, importance, description, relations, _, snip = found[key]
        fresh = recency(updated, now)
        text, spans = marked(snip)
        hits.append(
            {
                "kind": kind,
                "scope": scope,
                "name": name,
                "description": description,
                "etag": etag,
                "updated_at": updated,
                "importance": importance,
                "relevance": round(rel, 6),
                "recency": round(fresh, 6),
                "score": round(rel * (1 + 0.5 * fresh), 6),
                "snippet": text,
                "highlights": spans,
                **orjson.loads(relations),
            }
        )
    hits.sort(key=lambda h: (-h["score"], h["name"]))
    return hits[:k]
