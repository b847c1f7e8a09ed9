"""Assignments and prose: a secret given as the value of a secret-named key, or told in
a sentence.

``password = …``, ``"token": "…"``, ``PGPASSWORD=…``, ``--password …`` in code, config
and commands; "the password is hunter2" in prose. The key (or the sentence) must name a
secret and the value must be one, not a placeholder, a reference, a type or an English
word ("the password is required" is no secret). A value read after a key is cut at
``MAX_VALUE`` characters, so a scan stays linear on any line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .rules import Span
from .words import (
    PLACEHOLDER_WORDS,
    PUNCT_END,
    STOP_WORDS,
    UUID,
    english_like,
    not_a_secret,
    placeholder_like,
    random_like,
    words_only,
    wordset,
)

_KEY = re.compile(
    r"(?<![\w.$-])(?<!\$\{)(?:--?)?(?:\*\*|__)?(?P<kq>\\?[\"']?)(?P<key>[A-Za-z_][\w.-]*)"
    r"(?P=kq)\]?(?:\*\*|__)?(?P<space>\s*)(?P<op>:=|=>|=(?!=)|:(?![:/]))(?:\*\*|__)?\s*"
)
_FLAG = re.compile(r"(?<!\S)--(?P<key>[A-Za-z][\w-]*)\s+")  # a command's --password …
_VALUE = re.compile(
    r"(?:[bBrRuUfF]{1,2}(?=[\"']))?(?P<esc>\\?)(?P<q>[\"'`])"  # a quoted value
    r"|(?P<bare>[^\s,;)}\]\"'`<>\\]{1,256})"
)
MAX_VALUE = 256  # a value read after a key is cut here (so a scan stays linear)
_REST_EMPTY = re.compile(r"[\s.,:;!?)\"'`*]*(?:$|#|//|--)")
_JOINED = re.compile(r"\s*\+")  # "sk-" + …: a piece of a string being put together
_PASSWORD_WORDS = wordset("password passwd passphrase passcode pwd")
_KEY_QUALIFIERS = wordset(
    "api access secret private account signing master encryption auth app shared client "
    "service admin subscription license webhook hmac consumer deploy jwt encrypt crypto "
    "aes"
)
_NOT_SECRET_KEYS = wordset(
    "sort primary partition foreign cache routing idempotency object dedup dedupe lookup "
    "hash row map dict group message public pub host file bucket s3 cursor index unique "
    "composite natural surrogate shard tenant user customer order event trace"
)
_NOT_SECRET_TOKENS = wordset(
    "page next continuation cancellation max min num total eos bos pad unk mask sep cls "
    "start end stop special sync resume pagination cursor"
)


# what every key ``_key_kind`` names a secret by holds, and every sentence ``_PROSE``
# tells one in, lowercase (a cheap test before the patterns run)
_KEY_WORDS = ("pass", "pwd", "secret", "cred", "token", "key")


def _key_kind(key: str) -> str | None:
    """The kind of assignment ``key`` makes when it names a secret (``DB_PASSWORD``,
    ``apiKey``, ``x-api-key``, ``client_secret``), else None."""
    words = [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", key)]
    while words and words[-1].isdigit():
        words.pop()
    if not words:
        return None
    last, before = words[-1], words[-2] if len(words) > 1 else ""
    if last in _PASSWORD_WORDS or last.endswith(("password", "passwd")):
        return "password assignment"
    if last == "pass" and before:
        return "password assignment"
    if last.endswith(("secret", "secrets")) or last in ("credential", "credentials", "creds"):
        return "secret assignment"
    if last.endswith("token") and before not in _NOT_SECRET_TOKENS:
        return "secret assignment"
    if last.endswith(("apikey", "secretkey", "accesskey", "privatekey", "authkey")):
        return "secret assignment"
    if last == "key" and before in _KEY_QUALIFIERS:
        return "secret assignment"
    if last == "key" and before not in _NOT_SECRET_KEYS and key.isupper():
        return "key assignment"  # STRIPE_KEY=…, OPENWEATHER_KEY=…: a secret if it looks random
    return None


def _value_at(line: str, pos: int) -> tuple[str, bool, int] | None:
    """The value that starts at ``pos``: its text, whether it was quoted, where it ends."""
    match = _VALUE.match(line, pos)
    if match is None:
        return None
    if match.group("bare") is not None:
        value = match.group("bare").rstrip(PUNCT_END)
        return value, False, match.start() + len(value)
    close = match.group("esc") + match.group("q")
    end = line.find(close, match.end(), match.end() + MAX_VALUE)
    if end < 0:
        return None
    return line[match.end() : end], True, end + len(close)


def _ends_line(line: str, end: int) -> bool:
    """Nothing but a comment or closing punctuation after ``end``: the value ends the line."""
    return _REST_EMPTY.match(line, end) is not None


def _assignment_secret(
    value: str, quoted: bool, *, password: bool, config: bool, last: bool
) -> bool:
    """Whether the value of a secret-named key is a secret (not a reference to one).
    Letters only make a password (``correcthorsebattery``), never a key or a token."""
    if len(value) < 4 or value.lower() in PLACEHOLDER_WORDS or value.endswith(("-", "_")):
        return False
    if words_only(value) and not password:
        return len(value) >= 16 and value != value.lower() and not not_a_secret(value)
    if quoted:
        words = words_only(value) and (len(value) < 6 or english_like(value))
        return not any(c.isspace() for c in value) and not placeholder_like(value) and not words
    if not_a_secret(value):
        return False
    if not words_only(value):
        return True  # digits or symbols: a password, a token
    return config and last and len(value) >= 6 and not english_like(value)


def assignment_spans(line: str) -> Iterator[Span]:
    """``key = value`` (and ``key: value``, ``"key": "value"``, ``--key value``) where the
    key names a secret and the value is one, not a placeholder, a reference or a type."""
    low = line.lower()
    if not any(word in low for word in _KEY_WORDS):
        return  # no key of a secret's name
    for match in [*_KEY.finditer(line), *_FLAG.finditer(line)]:
        key = match.group("key")
        kind = _key_kind(key)
        found = None if kind is None else _value_at(line, match.end())
        if kind is None or found is None:
            continue
        value, quoted, end = found
        if kind == "key assignment":
            if not random_like(value) or len(value) < 16 or UUID.match(value):
                continue
            kind = "secret assignment"
        if quoted and _JOINED.match(line, end):
            continue  # a piece of a string being put together, not a value
        op = match.groupdict().get("op")
        config = op in (":", None) or key.isupper() or (op == "=" and not match.group("space"))
        last = _ends_line(line, end)
        password = kind == "password assignment"
        if _assignment_secret(value, quoted, password=password, config=config, last=last):
            yield kind, match.start(), end


# -- prose: "the password is hunter2", "log in with password …" -------------------------

_PROSE = re.compile(
    r"(?i)\b(?:pass(?:word|phrase|code)|secret(?: key)?|(?:api |access |auth |bot )?token"
    r"|api key|access key|credentials?)s?"
    r"(?:\s+(?:for|of|on|to)\s+(?:the\s+|a\s+|an\s+|our\s+|my\s+|your\s+)?[\w.@/-]+"
    r"(?:\s+[\w.-]+){0,2}?)?"
    r"\s+(?:is\s+now|is\s+set\s+to|was\s+set\s+to|was\s+changed\s+to|is|was|are|were)\s+"
    r"|\b(?:with|using|login\s+\S+)\s+(?:the\s+)?(?:password|passphrase|token)\s+"
)
_CLAUSE_END = re.compile(
    r"(?i)\s*(?:$|[.,;:!?)]|(?:and|but|or|so|until|before|after|when|since|if|because|for"
    r"|on|in|at|from|then)\b)"
)


def prose_spans(line: str) -> Iterator[Span]:
    """A password told in a sentence; a value made of letters only when it is not an
    English word and ends its clause ("the password is required" is no secret)."""
    low = line.lower()
    if not any(word in low for word in _KEY_WORDS):
        return  # no word a sentence names a secret by
    for match in _PROSE.finditer(line):
        found = _value_at(line, match.end())
        if found is None:
            continue
        value, quoted, end = found
        if len(value) < 4 or not_a_secret(value) or value.lower() in STOP_WORDS:
            continue
        if words_only(value):
            words_secret = not english_like(value) and len(value) >= 6
            if not (words_secret and (quoted or _CLAUSE_END.match(line, end))):
                continue
        elif quoted and any(c.isspace() for c in value):
            continue
        yield "password in text", match.start(), end
