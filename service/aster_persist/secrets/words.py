"""Words: what a value that is not a secret looks like.

A value after a secret-named key, or told in a sentence, is often no secret: a
placeholder (``$VAR``, ``<your-token>``, ``****``, ``changeme``), a reference (a
variable, a path, a URI, a call), a type name, or an English word. These tests say so,
and say when letters and digits are mixed as in a generated token. They hold no state.
"""

from __future__ import annotations

import re


def wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


PLACEHOLDER_WORDS = wordset(
    "none null nil true false undefined empty blank required optional unset notset "
    "changeme change_me change-me example sample dummy fake placeholder redacted hidden "
    "masked omitted todo tbd xxx env default value secret secrets password passwd token "
    "tokens key apikey credential credentials str string int integer bool boolean bytes "
    "buffer char number object array list dict map hash any unknown never void text "
    "varchar blob uuid secretstr secretbytes nullable stdin prompt"
)
STOP_WORDS = wordset(
    "a an the this that these those it its is are was were be been being has have had do "
    "does did will would can could should may might must shall not no yes also only just "
    "still already now then here there where when what which who how why all any each "
    "some same other another different in on at to of for from by with without into onto "
    "over under about after before between through per via as and or but so if than too "
    "very really actually probably maybe likely unlikely always never sometimes usually "
    "often ok okay fine enough good bad wrong right correct incorrect valid invalid "
    "expired revoked stale fresh new old long short weak strong random unique opaque "
    "static dynamic temporary permanent shared global local public private sensitive "
    "confidential secret safe unsafe missing present absent known unknown available "
    "unavailable mandatory disabled enabled active inactive configurable managed provided "
    "supplied injected mounted stored kept saved cached hashed salted encrypted encoded "
    "decoded signed rotated generated issued needed changed reset required optional set "
    "unset gone visible readable writable broken fixed on off auto manual below above "
    "elsewhere somewhere nowhere inside outside separate separately mine yours ours theirs "
    "his hers their our your my we you they he she them us me one two three"
)
_ENGLISH_ENDINGS = re.compile(
    r"(?i)(?:ed|ing|ly|tion|sion|ment|ness|able|ible|ive|ous|ful|less|ical|ity|ise|ize)$"
)
_TYPE_OR_CODE = re.compile(
    r"^(?:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"  # an environment variable's name
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"  # an attribute path: settings.password
    r"|[a-z_][a-z0-9]*(?:_[a-z0-9]+)+"  # snake_case
    r"|[a-z]+(?:[A-Z][a-z]+)+"  # camelCase (made of words: a token mixes in digits)
    r"|[A-Z][a-z]+(?:[A-Z][a-z]+)+)$"  # PascalCase
)
UUID = re.compile(r"^[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}$", re.IGNORECASE)
_PASSPHRASE = re.compile(r"^[a-z]+(?:-[a-z]+){3,}$")  # correct-horse-battery-staple
_PATH = re.compile(
    r"^(?:[/~]|\.{1,2}/|[\w.-]+(?:/[\w.-]+)+\.(?:pem|key|crt|cer|der|p12|pfx|jks|json|ya?ml"
    r"|toml|ini|cfg|conf|env|txt|gpg|asc|age)$|[a-z0-9._-]+(?:/[a-z0-9._-]+)+/?$)"
)
_REFERENCE = re.compile(r"^[A-Za-z][\w+.-]*:(?://)?[\w/.-]")  # arn:…, vault:…, op://…
_MASK = re.compile(r"(?i)x{4,}|\*{3,}|•{3,}|\.{3}|…|^(.)\1{3,}$")
_FILLER = re.compile(
    r"(?i)^(?:your|my|some|insert|enter|replace|put|paste|example|sample|dummy|fake|test"
    r"|placeholder|redacted)[_-]"
)
PUNCT_END = ".,:;!?)"


def placeholder_like(value: str, *, strict: bool = False) -> bool:
    """A value standing for a secret rather than being one: ``$VAR``, ``${…}``,
    ``<your-token>``, ``{{ … }}``, ``****``, ``xxxx``; unless ``strict``, also words
    such as ``none`` or ``changeme`` and names like ``YOUR_TOKEN``."""
    if not value or value[0] in "$<{*" or "${" in value or "{{" in value or "$(" in value:
        return True
    if _MASK.search(value) or value in ("%s", "%(password)s"):
        return True
    if strict:
        return False
    low = value.lower()
    return value[0] in "%[(@&#!" or low in PLACEHOLDER_WORDS or bool(_FILLER.match(value))


def not_a_secret(value: str) -> bool:
    """A placeholder, a reference (a variable, a path, a URI, a call) or a type name."""
    return (
        placeholder_like(value)
        or "(" in value
        or "[" in value
        or bool(_TYPE_OR_CODE.match(value))
        or bool(_PATH.match(value))
        or bool(_REFERENCE.match(value))
    )


def words_only(value: str) -> bool:
    """Letters, perhaps joined by ``-``: a word or words rather than a password."""
    return bool(re.fullmatch(r"[A-Za-z]+(?:-[A-Za-z]+)*", value))


def english_like(value: str) -> bool:
    """An English word (or words joined by ``-``), not a password made of letters; four
    or more lowercase words joined by ``-`` are a passphrase."""
    low = value.lower()
    if _PASSPHRASE.match(value):
        return False
    return low in STOP_WORDS or bool(_ENGLISH_ENDINGS.search(low)) or "-" in value


def random_like(value: str, *, cases: bool = False) -> bool:
    """Letters and digits mixed, as in a generated token (both cases too with ``cases``)."""
    digit = any(c.isdigit() for c in value)
    if cases:
        return digit and any(c.isupper() for c in value) and any(c.islower() for c in value)
    return digit and any(c.isalpha() for c in value)
