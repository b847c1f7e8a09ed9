"""Redacting: a text as it may be handed on, each secret in it replaced by its kind.

Transcripts keep what was said exactly; what leaves the store for another party (search
results, MCP, exports, the learner's prompt, logs) goes through ``redact_text`` or
``redacted``, which find secrets with the same scan as memory (``line_secrets``) and put
``[redacted: <kind>]`` in place of each (``[redacted: aws-secret-access-key]``).

Transcripts are large and rarely hold a secret, so the scan reads only the places one
could be: around each word a layer needs (``pass``, ``token``, ``key``…, and the few
formats not made of one long run), each run of 20 or more letters, digits, ``_`` or ``-``
(every prefixed format: ``ghp_…``, ``AKIA…``, ``xoxb-…``) and each credential in a URL,
80 characters before and 320 after, widened to whole words within the line. On every
line of the secret corpus and the ordinary notes, and on them inside longer text, this
finds exactly what scanning each whole line finds (a test holds it to that).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from .scan import line_secrets

# What a finding of any layer needs, lowercase: the assignments' and prose's
# secret-naming words (``pw`` covers ``pwd``; ``key`` covers private keys and PuTTY's),
# and the words of the formats whose secret is not one long run of token characters (a
# webhook URL cut by ``/``, a signed URL, credentials in a command). Every format that
# begins with a prefix (``ghp_``, ``AKIA``, ``xoxb-``, ``sk_live_``, ``eyJ``…) goes on with
# at least ``_RUN`` letters, digits, ``_`` or ``-`` in a row, which is looked for instead.
_PREFILTER_WORDS = (
    "pass", "pw", "secret", "cred", "token", "key", "auth", "bearer",
    "hooks.slack", "discord", "sig=", "signature=", "-u",
)  # fmt: skip
_RUN = 20  # the shortest such run: an AWS access key ID (AKIA and 16 more)
_TOKEN_CHARS = str.maketrans(
    {c: "a" for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"}
)
_RUN_END = re.compile(r"a+")
_URL_CREDENTIALS = re.compile(r"://\S*@")
_ARTIFACTORY = re.compile(r"AKC[a-zA-Z0-9]{10}|AP[\dA-F][a-zA-Z0-9]{8}")
# Around each place a finding could start, the scan reads this much of the line (then
# on to the nearest space, up to ``_WIDEN`` further): a key's value is read up to 256
# characters after it. Of a run longer than that, its two ends are read: a secret is
# never in the middle of a longer run of token characters.
_BEFORE, _AFTER, _WIDEN = 80, 320, 64


def _places(line: str) -> list[tuple[int, int]] | None:
    """Where in ``line`` (a text) a finding could be: each word of a layer, each long run
    of token characters, each credential in a URL and Artifactory key, as (start, end)."""
    low = line.lower()
    if len(low) != len(line):  # a letter whose lower case is longer: every line whole
        return None
    found = []
    for word in _PREFILTER_WORDS:
        if word not in low:  # most texts hold none: one test each
            continue
        at = low.find(word)
        while at >= 0:
            found.append((at, at + len(word)))
            at = low.find(word, at + 1)
    runs = line.translate(_TOKEN_CHARS)
    at = runs.find("a" * _RUN)
    while at >= 0:
        end = _RUN_END.match(runs, at).end()  # type: ignore[union-attr]
        if end - at > _AFTER:
            found += [(at, at + _RUN), (end - _RUN, end)]
        else:
            found.append((at, end))
        at = runs.find("a" * _RUN, end)
    if "://" in line:
        found += [m.span() for m in _URL_CREDENTIALS.finditer(line)]
    if "AKC" in line or "AP" in line:
        found += [m.span() for m in _ARTIFACTORY.finditer(line)]
    return found


def might_hold(line: str) -> bool:
    """Whether ``line`` holds anything a secret found in it would need (else no layer of
    the scan can find one in it)."""
    return _places(line) != []


def _windows(text: str, places: list[tuple[int, int]]) -> list[tuple[int, int, bool, bool]]:
    """The parts of ``text`` to scan: around each place, widened to the nearest space
    (so no word is cut, unless a word runs on past ``_WIDEN``) within its line, overlapping
    ones joined; with whether each begins and ends in the middle of a word (cut)."""
    spans: list[list[Any]] = []
    for start, end in sorted(places):
        reach = max(0, start - _BEFORE - _WIDEN)
        floor = text.rfind("\n", reach, start) + 1 or reach
        space = text.rfind(" ", floor, max(floor, start - _BEFORE) + 1)
        left = space + 1 if space >= 0 else floor
        reach = min(len(text), end + _AFTER + _WIDEN)
        ceiling = text.find("\n", end, reach)
        ceiling = reach if ceiling < 0 else ceiling
        space = text.find(" ", min(ceiling, end + _AFTER), ceiling)
        right = space if space >= 0 else ceiling
        if spans and left <= spans[-1][1] and "\n" not in text[spans[-1][1] : left]:
            spans[-1][1] = max(spans[-1][1], right)
        else:
            spans.append([left, right])
    return [
        (left, right, left > 0 and not text[left - 1].isspace(),
         right < len(text) and not text[right].isspace())
        for left, right in spans
    ]  # fmt: skip


def findings(text: str) -> list[tuple[str, int, int]]:
    """The secrets of ``text`` as the scan finds them line by line, as (kind, start, end)
    in ``text``, reading only the windows around the places one could be (a window cut in
    the middle of a long word that finds something at that edge is read again out to the
    whole word)."""
    places = _places(text)
    if places is None:  # read every line whole
        windows = [(m.start(), m.end(), False, False) for m in re.finditer(r"[^\n]+", text)]
    else:
        windows = _windows(text, places)
    out: set[tuple[str, int, int]] = set()
    for left, right, cut_left, cut_right in windows:
        spans = line_secrets(text[left:right])
        if any((cut_left and s == 0) or (cut_right and e == right - left) for _, s, e in spans):
            # found against a window's cut edge: read again out to the whole words there
            left = _word_edge(text, left, -1) if cut_left else left
            right = _word_edge(text, right, 1) if cut_right else right
            spans = line_secrets(text[left:right])
        out.update((kind, left + s, left + e) for kind, s, e in spans)
    return sorted(out, key=lambda found: (found[1], found[2]))


def _word_edge(text: str, at: int, way: int) -> int:
    """Where the word (what is not white space) holding ``at`` begins (``way`` -1) or
    ends (1)."""
    if way < 0:
        return max(text.rfind(c, 0, at) for c in " \t\n") + 1
    ends = [i for i in (text.find(c, at) for c in " \t\n") if i >= 0]
    return min(ends) if ends else len(text)


def prepare() -> None:
    """Build what the scan needs (detect-secrets' plugins, a fifth of a second) now,
    so the first text redacted does not wait for it."""
    redact_text("password = prepared")


def kind_name(kind: str) -> str:
    """A finding's kind as a redaction names it: ``AWS secret access key`` →
    ``aws-secret-access-key``."""
    return re.sub(r"[^a-z0-9]+", "-", kind.lower()).strip("-")


class Prescanned:
    """Redactions worked out ahead, on another process, of texts this one will redact
    soon (an import's reading process redacts what the index will make of each event it
    read, where the index's thread would hold this process's interpreter for it): each is
    kept, by the text's digest, until it has been asked as often as it was added (a text
    many files hold is added by each), the oldest going past ``most``."""

    def __init__(self, most: int = 100_000) -> None:
        self._most = most
        self._found: OrderedDict[bytes, tuple[str | None, int, int]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, found: dict[bytes, tuple[str | None, int, int]]) -> None:
        """Take in ``redactions``' answer: by digest, the text redacted (None: as it
        is), how many secrets, and how many times it will be asked."""
        with self._lock:
            for digest, (shown, count, times) in found.items():
                before = self._found.pop(digest, None)
                self._found[digest] = (shown, count, times + (before[2] if before else 0))
            while len(self._found) > self._most:
                self._found.popitem(last=False)

    def take(self, text: str) -> tuple[str, int] | None:
        """``redact_text(text)`` if it was worked out ahead, else None."""
        if not self._found:  # nothing ahead: no digest taken
            return None
        digest = _digest(text)
        with self._lock:
            got = self._found.get(digest)
            if got is None:
                return None
            shown, count, left = got
            if left > 1:
                self._found[digest] = (shown, count, left - 1)
            else:
                del self._found[digest]
        return (text if shown is None else shown), count

    def __len__(self) -> int:
        return len(self._found)


PRESCANNED = Prescanned()


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def redactions(texts: Iterable[str]) -> dict[bytes, tuple[str | None, int, int]]:
    """What ``redact_text`` makes of each text, by digest, for ``PRESCANNED.add`` on the
    process that will redact them: the text redacted (None: unchanged), how many secrets,
    and how many of ``texts`` it is (each redacted once)."""
    out: dict[bytes, tuple[str | None, int, int]] = {}
    for text in texts:
        digest = _digest(text)
        known = out.get(digest)
        if known is not None:
            out[digest] = (known[0], known[1], known[2] + 1)
            continue
        shown, count = _redact(text)
        out[digest] = (shown if count else None, count, 1)
    return out


def redact_text(text: str) -> tuple[str, int]:
    """``text`` with each secret replaced by ``[redacted: <kind>]``, and how many."""
    known = PRESCANNED.take(text)
    return known if known is not None else _redact(text)


def _redact(text: str) -> tuple[str, int]:
    found = findings(text)
    if not found:
        return text, 0
    parts, pos = [], 0
    for kind, start, end in found:
        parts += [text[pos:start], f"[redacted: {kind_name(kind)}]"]
        pos = end
    return "".join([*parts, text[pos:]]), len(found)


def redacted(value: Any) -> Any:
    """A JSON value with every string in it redacted (keys too); the same object when
    nothing in it is a secret."""
    out, _ = _walk(value)
    return out


def count_secrets(value: Any) -> int:
    """How many secrets the strings of a JSON value hold."""
    return _walk(value)[1]


def _walk(value: Any) -> tuple[Any, int]:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        total, changed, out = 0, False, {}
        for key, item in value.items():
            new_key, k = redact_text(key) if isinstance(key, str) else (key, 0)
            new_item, n = _walk(item)
            total += k + n
            changed = changed or k > 0 or n > 0
            out[new_key] = new_item
        return (out if changed else value), total
    if isinstance(value, list):
        pairs = [_walk(item) for item in value]
        total = sum(n for _, n in pairs)
        return ([item for item, _ in pairs] if total else value), total
    return value, 0


class Redacting(logging.Filter):
    """A log handler's filter: each secret in a record's message, or in the traceback it
    carries, is written as ``[redacted: <kind>]`` (a request's body may be quoted in an
    error)."""

    def filter(self, record: logging.LogRecord) -> bool:
        shown, found = redact_text(record.getMessage())
        if found:
            record.msg, record.args = shown, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))[0]
        return True


def redact_logs(*names: str) -> None:
    """Put ``Redacting`` on every handler of the root logger and of the loggers named."""
    for name in ("", *names):
        for handler in logging.getLogger(name or None).handlers:
            if not any(isinstance(f, Redacting) for f in handler.filters):
                handler.addFilter(Redacting())
