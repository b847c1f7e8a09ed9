"""What search sees: the text of transcript lines, and queries people type, made FTS5's.

Each event gives at most two documents: its text (a user, assistant or system message,
a tool result, a summary, a title) and, for an assistant turn that calls tools, the tool
names with their arguments.

Query syntax, for people and agents alike:

- plain words match any of them; BM25 ranks turns holding more of the words, and rarer
  ones, first (so a natural-language question works as typed);
- ``"a phrase"``, ``prefix*``, and the operators ``AND``, ``OR``, ``NOT`` (upper case)
  and parentheses narrow it; words are stemmed (``porter``), so "tests" finds "testing";
- a date typed with the words (``2026-01-05`` or ``2026-01``) keeps the turns of that day
  or month; several dates keep any of them;
- filters: ``repo:<path>``, ``session:<id>``, ``kind:<kind>``, ``role:<role>``,
  ``after:<date>`` and ``before:<date>`` (dates as ``YYYY-MM-DD``).

Everything a person types becomes quoted FTS5 strings, so no input reaches FTS5's own
syntax unchecked; what cannot be understood is refused with a message saying why.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, NamedTuple, get_args

import orjson

from ..errors import Invalid
from ..schemas.events import ROLES
from ..schemas.rendering import content_text
from ..schemas.search import DocKind
from ..secrets.redact import redact_text, redactions
from .speaker import Asker, sought
from .stopwords import is_stop_word

MAX_TEXT = 64 * 1024  # characters of one document that are indexed
KINDS = get_args(DocKind)  # what a search document can be
RETRACTED = "retraction"  # not a document: the seq whose documents a retraction takes out
_WORD = re.compile(r"\w+", re.UNICODE)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_MONTH = re.compile(r"^\d{4}-\d{2}$")


class Doc(NamedTuple):
    seq: int
    kind: str
    role: str | None
    ts: str
    text: str  # as it is searched and shown: each secret in it redacted
    secrets: int = 0  # how many were
    pos: int = 0  # where its line is in the transcript (the index keeps no copy of the
    size: int = 0  # text: a hit's snippet is cut from the line, read again from there)


Redact = Callable[[str], tuple[str, int]]


def _doc(
    seq: int,
    kind: str,
    role: str | None,
    ts: str,
    text: str,
    pos: int = 0,
    size: int = 0,
    redact: Redact = redact_text,
) -> Doc:
    """A document of ``text``, its secrets redacted (the index never holds one: a search
    neither finds nor shows it, and the vectors are made without it), then cut."""
    shown, secrets = redact(text[: MAX_TEXT + 1024])  # a secret across the cut too
    return Doc(seq, kind, role, ts, shown[:MAX_TEXT], secrets, pos, size)


def redacted_ahead(events: Iterable[dict[str, Any]]) -> dict[bytes, tuple[str | None, int, int]]:
    """The redactions the index will ask of the documents of ``events`` (an import's,
    before they are numbered), worked out here: for ``PRESCANNED`` on the process that
    indexes them."""
    texts: list[str] = []

    def asked(text: str) -> tuple[str, int]:  # what ``_doc`` asks ``redact_text``
        texts.append(text)
        return text, 0

    for event in events:
        docs_of({**event, "seq": 1}, redact=asked)  # numbered as stored: no text holds it
    return redactions(texts)


def _period(text: str) -> tuple[str, str] | None:
    """``2026-01-05`` or ``2026-01`` as a [start, end) range of timestamps; None otherwise."""
    try:
        if _DATE.match(text):
            day = date.fromisoformat(text)
            return text, (day + timedelta(days=1)).isoformat()
        if _MONTH.match(text):
            first = date.fromisoformat(text + "-01")
            after = date(first.year + first.month // 12, first.month % 12 + 1, 1)
            return first.isoformat(), after.isoformat()
    except ValueError:
        return None
    return None


def docs_of(
    line: dict[str, Any],
    header_ts: str = "",
    pos: int = 0,
    size: int = 0,
    redact: Redact = redact_text,
) -> list[Doc]:
    """The documents of one stored line (the header gives its title, if any), the line
    being ``size`` bytes at ``pos`` in its transcript."""
    seq = line.get("seq")
    if not isinstance(seq, int):
        return []
    kind = line.get("type")
    ts = line.get("ts")
    ts = ts if isinstance(ts, str) else header_ts
    out: list[Doc] = []
    if kind == "message":
        role = line.get("role")
        role = role if isinstance(role, str) else None
        content = line.get("content")
        text = content if isinstance(content, str) else content_text(content)
        if text and not text.isspace():
            named = "tool_result" if role == "tool" else "message"
            out.append(_doc(seq, named, role, ts, text, pos, size, redact))
        calls = line.get("tool_calls")
        if isinstance(calls, list) and calls:
            parts = []
            for call in calls:
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict):
                    parts.append(f"{function.get('name', '')} {function.get('arguments', '')}")
            text = "\n".join(parts)
            if text.strip():
                out.append(_doc(seq, "tool_call", role, ts, text, pos, size, redact))
    elif kind == "retraction" and isinstance(line.get("target_seq"), int):
        out.append(Doc(line["target_seq"], RETRACTED, None, ts, ""))  # takes its docs out
    elif kind in ("summary", "title", "session"):
        value = line.get("title") if kind != "summary" else content_text(line.get("content"))
        if kind == "session":
            created = line.get("created_at")
            seq, ts = 0, created if isinstance(created, str) else ts
        if isinstance(value, str) and value.strip():
            named = "summary" if kind == "summary" else "title"
            out.append(_doc(seq, named, None, ts, value, pos, size, redact))
    return out


def docs_at(
    lines: list[dict[str, Any]], starts: list[int], sizes: list[int], header_ts: str = ""
) -> list[Doc]:
    """The documents of stored lines, each with where its line is (``starts``, ``sizes``:
    the byte offset and length of each line in its transcript)."""
    return [
        doc
        for line, start, size in zip(lines, starts, sizes, strict=True)
        for doc in docs_of(line, header_ts, start, size)
    ]


def text_of(data: bytes, seq: int, kind: str) -> str | None:
    """The text of the document ``kind`` of ``seq`` in the stored line ``data`` (read back
    from where the index says it is); None when that line is not there any more."""
    try:
        line = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(line, dict):
        return None
    for doc in docs_of(line):
        if doc.seq == seq and doc.kind == kind:
            return doc.text
    return None


# -- queries ----------------------------------------------------------------------------

_TOKEN = re.compile(
    r'\s*(?:(?P<quote>"(?P<phrase>[^"]*)(?P<closed>"?))'
    r"|(?P<paren>[()])"
    r"|(?P<filter>(?P<key>repo|session|kind|role|after|before):(?P<value>\"[^\"]*\"|\S+))"
    r"|(?P<word>[^\s()\"]+))"
)
_OPERATORS = ("AND", "OR", "NOT")


@dataclass
class Query:
    """A user query made safe for FTS5, with the filters it carried."""

    match: str | None  # the FTS5 MATCH expression; None when only filters were given
    repo: str | None = None
    session: str | None = None
    kinds: list[str] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)
    after: str | None = None
    before: str | None = None
    periods: list[tuple[str, str]] = field(default_factory=list)  # [start, end) of days
    # the words of a query of plain words only (no phrase, prefix or operator), stop words
    # left out as in ``match``: what semantic search compares meaning with
    words: str | None = None
    # ... and those words as typed, stop words kept: what a model of sentences reads
    sentence: str | None = None
    # with ``session``: the sessions whose leading events it refers to, each up to a seq
    # (a copy's shared start is indexed once, under the session that holds it)
    shared: list[tuple[str, int]] = field(default_factory=list)
    # weigh the best hits again with the reranker, when there is one (ASTER_RERANK)
    rerank: bool = True
    # the role whose turns the question asks for (index/speaker.py), weighed first
    speaker: str | None = None
    # with ``repo``: its project's key, so a team's copies made at other paths match too
    project_key: str | None = None


def _quote(words: list[str]) -> str:
    return '"' + " ".join(words) + '"'


def _term(text: str, prefix: bool) -> str | None:
    """One typed word as an FTS5 string: its word pieces as a phrase, maybe a prefix."""
    words = _WORD.findall(text)
    if not words:
        return None
    return _quote(words) + ("*" if prefix else "")


def parse_query(text: str, asker: Asker = "user") -> Query:
    """Turn what a person (or, as ``asker``, an agent) typed into a ``Query``; raise
    Invalid saying what is wrong.

    Plain words are ORed and ranked by BM25; stop words among them ("the", "does") are
    dropped when the query has other words and no operator or parenthesis (a query of
    stop words alone, a phrase, a prefix and an explicit expression are kept as typed)."""
    query = Query(match=None)
    parts: list[str] = []  # terms, operators and parentheses, in order
    stops: set[int] = set()  # the places in parts of plain words that are stop words
    plain_words: dict[int, str] = {}  # the places in parts of plain words, and the words
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
        if m.group("quote"):
            if not m.group("closed"):
                raise Invalid('a quoted phrase is missing its closing quote (")')
            words = _WORD.findall(m.group("phrase"))
            if words:
                parts.append(_quote(words))
        elif m.group("paren"):
            parts.append(m.group("paren"))
        elif m.group("filter"):
            _apply_filter(query, m.group("key"), m.group("value").strip('"'))
        else:
            word = m.group("word")
            if word in _OPERATORS:
                parts.append(word)
                continue
            period = _period(word)
            if period is not None:
                query.periods.append(period)
                continue
            prefix = word.endswith("*")
            term = _term(word.rstrip("*"), prefix)
            if term is not None:
                if not prefix:
                    plain_words[len(parts)] = word
                    if all(is_stop_word(w) for w in _WORD.findall(word)):
                        stops.add(len(parts))
                parts.append(term)
    plain = not any(part in _OPERATORS or part in "()" for part in parts)
    typed = " ".join(plain_words.values())  # with its stop words, for the model to read
    if plain and stops and len(stops) < len(parts):
        parts = [part for n, part in enumerate(parts) if n not in stops]
        plain_words = {n: word for n, word in plain_words.items() if n not in stops}
    if parts and len(plain_words) == len(parts):
        query.words = " ".join(plain_words.values())
        query.sentence = typed
        query.speaker = sought(typed, asker)
    query.match = _combine(parts)
    return query


def _apply_filter(query: Query, key: str, value: str) -> None:
    if key == "repo":
        query.repo = value
    elif key == "session":
        query.session = value
    elif key == "kind":
        if value not in KINDS:
            raise Invalid(f"kind:{value} is not a kind; use one of {', '.join(KINDS)}")
        query.kinds.append(value)
    elif key == "role":
        if value not in ROLES:
            raise Invalid(f"role:{value} is not a role; use one of {', '.join(ROLES)}")
        query.roles.append(value)
    else:
        if not _DATE.match(value):
            raise Invalid(f"{key}:{value} is not a date; write it as YYYY-MM-DD")
        setattr(query, key, value)


def _combine(parts: list[str]) -> str | None:
    """Join terms with OR where no operator stands between them; check the structure."""
    out: list[str] = []
    depth = 0
    expect_term = True
    for part in parts:
        if part in _OPERATORS:
            if expect_term:
                where = "at the start" if not out or out[-1] == "(" else f"after {out[-1]}"
                raise Invalid(
                    f"{part} needs a term on each side (it stands {where}); "
                    "for example: build NOT docker"
                )
            out.append(part)
            expect_term = True
        elif part == "(":
            if not expect_term:
                out.append("OR")
            out.append("(")
            depth += 1
            expect_term = True
        elif part == ")":
            if depth == 0:
                raise Invalid("a closing parenthesis has no opening one")
            if expect_term:
                raise Invalid("a parenthesis or operator is followed by nothing")
            out.append(")")
            depth -= 1
        else:
            if not expect_term:
                out.append("OR")
            out.append(part)
            expect_term = False
    if depth:
        raise Invalid("a parenthesis is not closed")
    if out and expect_term:
        raise Invalid(f"{out[-1]} at the end needs a term after it")
    return " ".join(out) or None
