"""BM25 rankings of transcript documents: the conditions a query puts on them, and the
best documents after a place in that order. Shared by search and by fusion with the
ranking by meaning."""

from __future__ import annotations

from typing import Any

from ..errors import Invalid
from .sqlite import sqlite3
from .text import Query

# A document names its session by a number of the catalog's own (``session_numbers``),
# a few bytes where the id takes 26, in every row and in the index over them.
NUMBER_OF = "(SELECT n FROM session_numbers WHERE id = {})"
WITH_SESSIONS = "JOIN session_numbers k ON k.n = d.session JOIN sessions s ON s.id = k.id"
DOC_RANK = "bm25(doc_text)"  # negative, lower is better (FTS5 floors each word's IDF above 0)
# A turn of another speaker than the one a question asks for (index/speaker.py) counts
# for this share of its BM25 score: kept, and below the asked-for speaker's as good.
# Chosen on LongMemEval's even and odd questions alike (bench/, docs/BENCHMARKS.md).
OTHER_SPEAKER = 0.35


def fts(call: Any) -> Any:
    """Run an FTS5 query; its complaints about the query are the caller's 422."""
    try:
        return call()
    except sqlite3.OperationalError as exc:
        message = str(exc)
        if "fts5" in message or "syntax" in message or "no such column" in message:
            raise Invalid(f"the search query could not be understood: {message}") from None
        raise


def session_clause(query: Query, column: str = "d.session", seq: str = "d.seq") -> str:
    """The documents of ``query.session``, and of the start of each session it refers to."""
    number = NUMBER_OF.format("?")
    shared = [f"({column} = {number} AND {seq} <= ?)" for _ in query.shared]
    return "(" + " OR ".join([f"{column} = {number}", *shared]) + ")"


def session_args(query: Query) -> list[Any]:
    return [query.session, *(value for pair in query.shared for value in pair)]


def conditions(query: Query) -> tuple[list[str], list[Any]]:
    """The WHERE clauses of a query (the full-text match first) and their arguments."""
    where: list[str] = []
    args: list[Any] = []

    def add(clause: str, *values: Any) -> None:
        where.append(clause)
        args.extend(values)

    if query.match is not None:
        add("doc_text MATCH ?", query.match)
    if query.session is not None:
        add(session_clause(query), *session_args(query))
    if query.repo is not None:  # its path, or its project at other paths (a team's copies)
        add("(s.repo_root = ? OR s.project_key = ?)", query.repo, query.project_key)
    for column, values in (("d.kind", query.kinds), ("d.role", query.roles)):
        if values:
            add(f"{column} IN ({', '.join('?' * len(values))})", *values)
    if query.after is not None:
        add("d.ts >= ?", query.after)
    if query.before is not None:
        add("d.ts < ?", query.before)
    if query.periods:
        add(
            "(" + " OR ".join("(d.ts >= ? AND d.ts < ?)" for _ in query.periods) + ")",
            *(bound for period in query.periods for bound in period),
        )
    return where, args


def candidates(query: Query) -> tuple[str, list[Any]]:
    """SQL of the documents a query finds, as ``rowid, rank``: by BM25 for words, newest
    first for filters alone."""
    where, args = conditions(query)
    if query.match is not None and not where[1:] and query.speaker is None:
        # Words alone: rank in the full-text table, then look up only the page's rows.
        sql = f"SELECT rowid, {DOC_RANK} AS rank FROM doc_text WHERE doc_text MATCH ?"
    elif query.match is not None:
        rank = DOC_RANK
        if query.speaker is not None:  # BM25 weighed by the speaker of each match
            rank += f" * (CASE WHEN d.role = ? THEN 1.0 ELSE {OTHER_SPEAKER} END)"
            args.insert(0, query.speaker)
        sessions = WITH_SESSIONS if where[1:] else ""  # what the filters read
        sql = (
            f"SELECT d.rowid AS rowid, {rank} AS rank FROM doc_text "
            f"JOIN docs d ON d.rowid = doc_text.rowid {sessions} "
            "WHERE " + " AND ".join(where)
        )
    else:  # filters alone: newest first, and no full-text scan
        sql = "SELECT d.rowid AS rowid, -d.rowid AS rank FROM docs d"
        sql += f" {WITH_SESSIONS}"
        if where:
            sql += " WHERE " + " AND ".join(where)
    return sql, args


def ranked(
    db: sqlite3.Connection, query: Query, limit: int, after: tuple[float, int] | None
) -> list[tuple[int, float]]:
    """The ``limit`` best documents (number, rank: lower is better) after ``after``."""
    inner, args = candidates(query)
    sql = f"SELECT rowid, rank FROM ({inner})"
    if after is not None:
        sql += " WHERE (rank > ? OR (rank = ? AND rowid > ?))"
        args.extend([after[0], after[0], after[1]])
    sql += " ORDER BY rank, rowid LIMIT ?"
    args.append(limit)
    return [(int(r), float(k)) for r, k in fts(lambda: db.execute(sql, args).fetchall())]
