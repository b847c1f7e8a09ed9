"""Refusing secrets in memory: API keys, tokens, credentials, password assignments,
private keys.

Memory goes into every prompt, so a secret written there leaks everywhere. What this
module guarantees:

- ``scan_text`` finds every secret-looking thing in a text, line by line, and says what
  kind it is and where (field, line, column). A finding never holds the secret, so
  reporting one cannot leak it.
- Two layers run on every line. Rules for the formats agents meet: token prefixes,
  credentials in URLs and commands, password, secret and token assignments in code,
  config and prose. And detect-secrets' precise plugins, whose own patterns are run
  here directly: detect-secrets' process-wide settings are never read or changed, so a
  scan is safe on any number of threads at once, and no key is ever "verified" over
  the network. Entropy and keyword plugins are left out: they refuse ordinary notes.
- ``scan_document`` scans a memory file as it is written or found on disk: every line,
  named by the frontmatter key it belongs to (or ``content`` for the body), and, when
  the frontmatter holds an escape (``\n`` can glue a token to a letter), every value as
  YAML reads it.
- ``refuse_secrets`` and ``refuse_document`` raise SecretDetected (422) naming the kind
  and the place; ``withheld`` is what the journal keeps instead of content that holds
  a secret, and ``refuse_journaled`` refuses to write such a state back.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..errors import Invalid, SecretDetected
from . import frontmatter

Span = tuple[str, int, int]  # kind, start, end (of the line)


@dataclass(frozen=True)
class Finding:
    kind: str
    field: str
    line: int
    column: int

    def public(self) -> dict[str, Any]:
        return {
            "loc": self.field,
            "kind": self.kind,
            "line": self.line,
            "column": self.column,
            "msg": f"looks like a {self.kind}",
        }


# -- words: what a value that is not a secret looks like ------------------------------


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_PLACEHOLDER_WORDS = _wordset(
    "none null nil true false undefined empty blank required optional unset notset "
    "changeme change_me change-me example sample dummy fake placeholder redacted hidden "
    "masked omitted todo tbd xxx env default value secret secrets password passwd token "
    "tokens key apikey credential credentials str string int integer bool boolean bytes "
    "buffer char number object array list dict map hash any unknown never void text "
    "varchar blob uuid secretstr secretbytes nullable stdin prompt"
)
_STOP_WORDS = _wordset(
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
_UUID = re.compile(r"^[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}$", re.IGNORECASE)
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
_PUNCT_END = ".,:;!?)"


def _placeholder(value: str, *, strict: bool = False) -> bool:
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
    return value[0] in "%[(@&#!" or low in _PLACEHOLDER_WORDS or bool(_FILLER.match(value))


def _not_a_secret(value: str) -> bool:
    """A placeholder, a reference (a variable, a path, a URI, a call) or a type name."""
    return (
        _placeholder(value)
        or "(" in value
        or "[" in value
        or bool(_TYPE_OR_CODE.match(value))
        or bool(_PATH.match(value))
        or bool(_REFERENCE.match(value))
    )


def _words_only(value: str) -> bool:
    """Letters, perhaps joined by ``-``: a word or words rather than a password."""
    return bool(re.fullmatch(r"[A-Za-z]+(?:-[A-Za-z]+)*", value))


def _english(value: str) -> bool:
    """An English word (or words joined by ``-``), not a password made of letters; four
    or more lowercase words joined by ``-`` are a passphrase."""
    low = value.lower()
    if _PASSPHRASE.match(value):
        return False
    return low in _STOP_WORDS or bool(_ENGLISH_ENDINGS.search(low)) or "-" in value


def _random(value: str, *, cases: bool = False) -> bool:
    """Letters and digits mixed, as in a generated token (both cases too with ``cases``)."""
    digit = any(c.isdigit() for c in value)
    if cases:
        return digit and any(c.isupper() for c in value) and any(c.islower() for c in value)
    return digit and any(c.isalpha() for c in value)


# -- the rules: formats with a known shape ---------------------------------------------

Check = Callable[[str], bool]


Rule = tuple[str, tuple[str, ...], re.Pattern[str], Check | None]


def _rule(kind: str, triggers: tuple[str, ...], pattern: str, check: Check | None = None) -> Rule:
    """A format: its kind, words one of which a line must hold (lowercase, a cheap test
    before the pattern runs), the pattern, and a check of the matched value."""
    return kind, triggers, re.compile(pattern), check


_RULES = [
    _rule(
        "AWS access key ID",
        ("akia", "asia", "abia", "acca", "a3t"),
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
    ),
    _rule(
        "AWS secret access key",
        ("secret",),
        r"(?i)(?:aws[\w.-]{0,20}?secret|secret_?access_?key)[\w\"'.-]{0,20}?\s*[=:]\s*"
        r"[\"']?(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        lambda v: _random(v, cases=True),
    ),
    _rule(
        "GitHub token",
        ("gh", "github_pat_"),
        r"\bgh[pousr]_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{40,}",
    ),
    _rule(
        "GitLab token",
        ("gl", "gr1348941"),
        r"\b(?:glpat|gldt|glft|glsoat|glrt|glcbt|glptt|gloas|glimt|glagent)-[A-Za-z0-9_-]{20,}"
        r"|\bGR1348941[A-Za-z0-9_-]{20,}",
    ),
    _rule(
        "Slack token",
        ("xox", "xapp-"),
        r"\bxox[abposre]-[A-Za-z0-9-]{10,}|\bxapp-\d-[A-Za-z0-9-]{20,}",
    ),
    _rule(
        "Slack webhook URL",
        ("hooks.slack.com",),
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,}",
    ),
    _rule(
        "Discord webhook URL",
        ("discord",),
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{20,}",
    ),
    _rule(
        "Stripe key",
        ("k_live_", "k_test_", "whsec_"),
        r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|\bwhsec_[A-Za-z0-9]{24,}",
    ),
    _rule("Anthropic API key", ("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    _rule(
        "OpenAI API key",
        ("sk-",),
        r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?(?P<v>[A-Za-z0-9_-]{32,})",
        lambda v: _random(v, cases=True),
    ),
    _rule("Google API key", ("aiza",), r"\bAIza[0-9A-Za-z_-]{35}"),
    _rule(
        "Google OAuth credential",
        ("gocspx-", "ya29."),
        r"\bGOCSPX-[A-Za-z0-9_-]{20,}|\bya29\.[A-Za-z0-9_-]{20,}",
    ),
    _rule("SendGrid API key", ("sg.",), r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
    _rule("Twilio key", ("ac", "sk"), r"\b(?:AC|SK)[0-9a-f]{32}\b"),
    _rule("npm token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b"),
    _rule(
        "npm token",
        ("_authtoken",),
        r":_authToken\s*=\s*(?P<v>\S{8,})",
        lambda v: not _placeholder(v),
    ),
    _rule(
        "Azure storage key",
        ("accountkey=", "sharedaccesskey="),
        r"\b(?:AccountKey|SharedAccessKey)=[A-Za-z0-9+/]{20,}={0,2}",
    ),
    _rule(
        "signed URL",
        ("sig=", "x-amz-signature="),
        r"[?&](?:sig|X-Amz-Signature)=[A-Za-z0-9%+/]{20,}",
    ),
    _rule("Hugging Face token", ("hf_",), r"\bhf_[A-Za-z0-9]{30,}"),
    _rule("PyPI token", ("pypi-",), r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    _rule("Vault token", ("hvs.", "hvb.", "hvr."), r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}"),
    _rule("DigitalOcean token", ("_v1_",), r"\bdo[opr]_v1_[a-f0-9]{64}\b"),
    _rule("Shopify token", ("shp",), r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b"),
    _rule("Databricks token", ("dapi",), r"\bdapi[a-f0-9]{32}\b"),
    _rule(
        "JSON Web Token",
        ("eyj",),
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
    _rule(
        "private key",
        ("private key", "putty", "age-secret-key"),
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d"
        r"|\bAGE-SECRET-KEY-1[0-9A-Z]{50,}",
    ),
    _rule(
        "credentials in a URL",
        ("@",),
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/@?#\[\]\"'`]{0,256}"
        r":(?P<v>[^\s/@?#\[\]\"'`]{1,256})@",
        lambda v: not _placeholder(v, strict=True),
    ),
    _rule(
        "credentials in a command",
        ("-u", "--user"),
        r"(?<!\S)(?:-u|--user)\s+[\"']?[^\s:\"'$]+:(?P<v>[^\s\"']+)",
        lambda v: not _placeholder(v, strict=True),
    ),
    _rule(
        "authorization header",
        ("authorization",),
        r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?(?:basic|bearer|token|bot|apikey|digest)\s+"
        r"(?P<v>[A-Za-z0-9._~+/-]{12,}=*)",
        _random,
    ),
    _rule("bearer token", ("bearer",), r"(?i)\bbearer\s+(?P<v>[A-Za-z0-9._~+/-]{20,}=*)", _random),
]


def _rule_spans(line: str) -> Iterator[Span]:
    """The formats with a known shape found in ``line``."""
    low = line.lower()
    for kind, triggers, pattern, check in _RULES:
        if not any(trigger in low for trigger in triggers):
            continue
        for match in pattern.finditer(line):
            value = match.group("v") if "v" in pattern.groupindex else match.group(0)
            if check is None or check(value):
                yield kind, match.start(), match.end()


# -- assignments: password = …, "token": "…", PGPASSWORD=…, --password … ----------------

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
_PASSWORD_WORDS = _wordset("password passwd passphrase passcode pwd")
_KEY_QUALIFIERS = _wordset(
    "api access secret private account signing master encryption auth app shared client "
    "service admin subscription license webhook hmac consumer deploy jwt encrypt crypto "
    "aes"
)
_NOT_SECRET_KEYS = _wordset(
    "sort primary partition foreign cache routing idempotency object dedup dedupe lookup "
    "hash row map dict group message public pub host file bucket s3 cursor index unique "
    "composite natural surrogate shard tenant user customer order event trace"
)
_NOT_SECRET_TOKENS = _wordset(
    "page next continuation cancellation max min num total eos bos pad unk mask sep cls "
    "start end stop special sync resume pagination cursor"
)


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
        value = match.group("bare").rstrip(_PUNCT_END)
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
    if len(value) < 4 or value.lower() in _PLACEHOLDER_WORDS or value.endswith(("-", "_")):
        return False
    if _words_only(value) and not password:
        return len(value) >= 16 and value != value.lower() and not _not_a_secret(value)
    if quoted:
        words = _words_only(value) and (len(value) < 6 or _english(value))
        return not any(c.isspace() for c in value) and not _placeholder(value) and not words
    if _not_a_secret(value):
        return False
    if not _words_only(value):
        return True  # digits or symbols: a password, a token
    return config and last and len(value) >= 6 and not _english(value)


def _assignment_spans(line: str) -> Iterator[Span]:
    """``key = value`` (and ``key: value``, ``"key": "value"``, ``--key value``) where the
    key names a secret and the value is one, not a placeholder, a reference or a type."""
    for match in [*_KEY.finditer(line), *_FLAG.finditer(line)]:
        key = match.group("key")
        kind = _key_kind(key)
        found = None if kind is None else _value_at(line, match.end())
        if kind is None or found is None:
            continue
        value, quoted, end = found
        if kind == "key assignment":
            if not _random(value) or len(value) < 16 or _UUID.match(value):
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


def _prose_spans(line: str) -> Iterator[Span]:
    """A password told in a sentence; a value made of letters only when it is not an
    English word and ends its clause ("the password is required" is no secret)."""
    for match in _PROSE.finditer(line):
        found = _value_at(line, match.end())
        if found is None:
            continue
        value, quoted, end = found
        if len(value) < 4 or _not_a_secret(value) or value.lower() in _STOP_WORDS:
            continue
        if _words_only(value):
            words_secret = not _english(value) and len(value) >= 6
            if not (words_secret and (quoted or _CLAUSE_END.match(line, end))):
                continue
        elif quoted and any(c.isspace() for c in value):
            continue
        yield "password in text", match.start(), end


# -- detect-secrets' plugins, run directly ---------------------------------------------

# plugin class, its module, the kind it finds, words one of which a line must hold
_PLUGINS: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("AWSKeyDetector", "aws", "AWS access key ID", ("a3t", "akia", "asia", "abia", "acca", "aws")),
    ("ArtifactoryDetector", "artifactory", "Artifactory token", ("akc", "ap")),
    ("AzureStorageKeyDetector", "azure_storage_key", "Azure storage key", ("accountkey=",)),
    ("BasicAuthDetector", "basic_auth", "credentials in a URL", ("://",)),
    ("CloudantDetector", "cloudant", "Cloudant credentials", ("cl",)),
    ("DiscordBotTokenDetector", "discord", "Discord bot token", (".",)),
    ("GitHubTokenDetector", "github_token", "GitHub token", ("gh",)),
    ("GitLabTokenDetector", "gitlab_token", "GitLab token", ("gl", "gr1348941")),
    ("IbmCloudIamDetector", "ibm_cloud_iam", "IBM Cloud IAM key", ("ibm", "iam")),
    ("IbmCosHmacDetector", "ibm_cos_hmac", "IBM COS HMAC key", ("key",)),
    ("JwtTokenDetector", "jwt", "JSON Web Token", ("eyj",)),
    ("MailchimpDetector", "mailchimp", "Mailchimp API key", ("-us",)),
    ("NpmDetector", "npm", "npm token", ("_authtoken",)),
    ("OpenAIDetector", "openai", "OpenAI API key", ("t3blbkfj",)),
    ("PrivateKeyDetector", "private_key", "private key", ("private key", "putty")),
    ("PypiTokenDetector", "pypi_token", "PyPI token", ("pypi-",)),
    ("SendGridDetector", "sendgrid", "SendGrid API key", ("sg.",)),
    ("SlackDetector", "slack", "Slack token", ("xox", "hooks.slack.com")),
    ("SoftlayerDetector", "softlayer", "SoftLayer key", ("sl", "softlayer")),
    ("SquareOAuthDetector", "square_oauth", "Square OAuth secret", ("sq0csp-",)),
    ("StripeDetector", "stripe", "Stripe key", ("k_live_",)),
    ("TelegramBotTokenDetector", "telegram_token", "Telegram bot token", (":",)),
    ("TwilioKeyDetector", "twilio", "Twilio key", ("ac", "sk")),
]


@dataclass(frozen=True)
class _Plugin:
    name: str
    kind: str
    triggers: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]
    confirm: Callable[[str], Iterator[str]]  # the plugin's own analysis of a match


@lru_cache(maxsize=1)
def _plugins() -> tuple[_Plugin, ...]:
    """detect-secrets' plugins, each with its compiled patterns (built once; they hold
    no state, so every thread shares them)."""
    from importlib import import_module

    out = []
    for name, module, kind, triggers in _PLUGINS:
        plugin = getattr(import_module(f"detect_secrets.plugins.{module}"), name)()
        patterns = tuple(plugin.denylist)
        out.append(_Plugin(name, kind, triggers, patterns, plugin.analyze_string))
    return tuple(out)


def plugin_spans(line: str) -> Iterator[tuple[str, str, int, int]]:
    """What detect-secrets' plugins find in ``line``: (plugin, kind, start, end)."""
    low = line.lower()
    for plugin in _plugins():
        if not any(trigger in low for trigger in plugin.triggers):
            continue
        for pattern in plugin.patterns:
            for match in pattern.finditer(line):
                start, end = match.span()
                secret = next((g for g in match.groups() if g), match.group(0))
                if _embedded(line, start, end) or _placeholder(secret, strict=True):
                    continue
                if any(True for _ in plugin.confirm(match.group(0))):
                    yield plugin.name, plugin.kind, start, end


def _embedded(line: str, start: int, end: int) -> bool:
    """A match inside a longer run of letters and digits (an id, a hash) is not a key."""
    before = start > 0 and line[start].isalnum() and line[start - 1].isalnum()
    after = end < len(line) and line[end - 1].isalnum() and line[end].isalnum()
    return before or after


# -- scanning ------------------------------------------------------------------------


def _scan_line(line: str) -> tuple[Span, ...]:
    """The spans of every layer, in order; a span that overlaps one found before it (by
    this or an earlier layer) is the same secret and left out."""
    starts: list[int] = []
    found: list[Span] = []
    layers: list[Iterator[Span]] = [
        _rule_spans(line),
        _assignment_spans(line),
        _prose_spans(line),
        ((kind, start, end) for _, kind, start, end in plugin_spans(line)),
    ]
    for layer in layers:
        for kind, start, end in layer:
            at = bisect.bisect_left(starts, start)
            if (at > 0 and found[at - 1][2] > start) or (at < len(found) and found[at][1] < end):
                continue
            starts.insert(at, start)
            found.insert(at, (kind, start, end))
    return tuple(found)


_scan_short_line = lru_cache(maxsize=8192)(_scan_line)


def line_secrets(line: str) -> tuple[Span, ...]:
    """Every secret in one line, as (kind, start, end), in order; short lines cached (the
    frontmatter lines every block shares are scanned once)."""
    return _scan_short_line(line) if len(line) <= 500 else _scan_line(line)


def scan_text(text: str, field: str = "content") -> list[Finding]:
    """Every secret-looking thing in ``text``, by kind and place."""
    return [
        Finding(kind, field, number, start + 1)
        for number, line in enumerate(text.splitlines(), 1)
        for kind, start, _ in line_secrets(line)
    ]


def _scan_document(text: str) -> tuple[Finding, ...]:
    """``scan_document``, uncached."""
    lines = text.splitlines()
    fields = _line_fields(lines)
    found = [
        Finding(kind, fields[number - 1], number, start + 1)
        for number, line in enumerate(lines, 1)
        for kind, start, _ in line_secrets(line)
    ]
    meta: dict[str, Any] = {}
    if "\\" in text.partition("\n---")[0]:  # an escape: a value may read unlike its line
        try:
            meta = frontmatter.parse(text).meta
        except Invalid:  # not valid YAML: its lines were scanned as they are
            meta = {}
    for key, value in meta.items():
        first = fields.index(key) + 1 if key in fields else 1
        for finding in (f for s in _strings(value) for f in scan_text(s, key)):
            if not any(f.field == key and f.kind == finding.kind for f in found):
                found.append(Finding(finding.kind, key, first, 1))
    return tuple(found)


_scan_small_document = lru_cache(maxsize=512)(_scan_document)


def scan_document(text: str) -> list[Finding]:
    """Every secret in a memory file, each named by its frontmatter key (``content`` in
    the body) with its line and column in the file. Files up to 64 KB are cached by
    content: a write, its index entry and its journal state scan the bytes once."""
    if len(text) <= 65536:
        return list(_scan_small_document(text))
    return list(_scan_document(text))


def _line_fields(lines: list[str]) -> list[str]:
    """For each line of a file, the frontmatter key it belongs to, or ``content``."""
    if not lines or lines[0].rstrip("\r") != "---":
        return ["content"] * len(lines)
    out, current = ["frontmatter"], "frontmatter"
    for index, line in enumerate(lines[1:], 1):
        if line.rstrip("\r") == "---":
            return out + ["frontmatter"] + ["content"] * (len(lines) - index - 1)
        key = re.match(r"([A-Za-z_][\w-]*)\s*:", line)
        if key is not None:
            current = key.group(1)
        out.append(current)
    return out


LEFT_BY_HAND = "left there by hand"
MAX_REPORTED = 20  # findings a reply, a listing or a journal entry names at most


def found_in(data: bytes | str) -> list[dict[str, Any]]:
    """The public findings of a memory file's bytes (empty when it holds no secret), the
    first ``MAX_REPORTED`` of them."""
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    return [f.public() for f in scan_document(text)[:MAX_REPORTED]]


# -- refusing ----------------------------------------------------------------------


def refuse_secrets(fields: dict[str, Any]) -> None:
    """Raise SecretDetected (422) when any field holds a secret; says where, never what."""
    findings: list[Finding] = []
    for name, value in fields.items():
        for text in _strings(value):
            findings.extend(scan_text(text, name))
    _refuse(findings)


def refuse_document(data: bytes, what: str, *, before: bytes | None = None) -> None:
    """Raise SecretDetected when the file ``what`` would hold a secret with ``data``.
    When the content it replaces (``before``) held one too, the reply says so: a
    secret left there by hand must be removed by a person first."""
    text = data.decode("utf-8", "replace")
    findings = scan_document(text)
    if findings and before is not None and found_in(before):
        found = ", ".join(sorted({f.kind for f in findings}))
        raise SecretDetected(
            f"{what} already holds a secret ({found}, line {findings[0].line}), "
            f"{LEFT_BY_HAND}; it is withheld from prompts until a person removes it, and "
            "nothing is written to it until then",
            errors=[f.public() for f in findings[:MAX_REPORTED]],
        )
    _refuse(findings, what)


def _refuse(findings: list[Finding], what: str = "") -> None:
    if not findings:
        return
    first = findings[0]
    more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
    where = f"{what} {first.field}" if what else first.field
    raise SecretDetected(
        f"{where} line {first.line} looks like a {first.kind}{more}; secrets are never "
        "written to memory, which goes into every prompt",
        errors=[f.public() for f in findings[:MAX_REPORTED]],
    )


def withheld(path: str, data: bytes) -> dict[str, Any] | None:
    """What the journal keeps of a file whose content holds a secret: its path, size,
    hash and the findings, never the content. None when the content is clean."""
    found = found_in(data)
    if not found:
        return None
    return {
        "path": path,
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "withheld": "the content held a secret, so the journal does not keep it",
        "secrets": found,
    }


def refuse_journaled(state: dict[str, Any]) -> None:
    """Refuse to write back a journaled state that was withheld or holds a secret."""
    if "withheld" in state:
        kinds = ", ".join(sorted({str(f.get("kind")) for f in state.get("secrets", [])}))
        raise SecretDetected(
            f"the content this would put back held a secret ({kinds}); the journal never "
            "kept it, and it is not written to memory again",
            errors=list(state.get("secrets", [])),
        )
    if isinstance(state.get("content"), str):
        refuse_document(state["content"].encode("utf-8"), str(state.get("path", "the file")))


def kinds(findings: list[dict[str, Any]]) -> str:
    """The kinds of some public findings, for a sentence."""
    return ", ".join(sorted({str(f["kind"]) for f in findings}))


def lines_of(findings: list[dict[str, Any]]) -> str:
    """Where some public findings are, for a sentence: "line 3", "lines 3, 7"."""
    numbers = list(dict.fromkeys(str(f["line"]) for f in findings))
    return ("line " if len(numbers) == 1 else "lines ") + ", ".join(numbers)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)] + [str(k) for k in value]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


# -- what is kept and shown instead ------------------------------------------------


def flagged(data: bytes | None) -> dict[str, Any]:
    """``{"secrets": […]}`` for a journal entry's detail when ``data`` holds a secret."""
    found = found_in(data) if data is not None else []
    return {"secrets": found} if found else {}


def withheld_core(text: str, scope: str) -> str:
    """``ASTER.md`` as the prompt context shows it: in full, or, when a hand edit left a
    secret in it, a notice in its place (the kinds and lines, never the secret)."""
    found = found_in(text)
    if not found:
        return text
    return (
        f"(The core memory of {scope} is withheld: it holds what looks like a secret "
        f"({kinds(found)}) on {lines_of(found)}, {LEFT_BY_HAND}. It comes back once a "
        "person removes it.)"
    )
