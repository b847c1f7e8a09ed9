"""The rules: secret formats with a known shape, and the span every layer reports.

Token prefixes (AWS, GitHub, GitLab, Slack, Stripe, OpenAI, Anthropic, Google…),
private keys, JSON Web Tokens, credentials in URLs and commands, authorization headers
and bearer tokens. Each rule names words one of which a line must hold (a cheap test
before its pattern runs) and may check the matched value, so a placeholder or a value
made of words is not taken for a secret. ``Triggers`` finds the rules (and plugins)
a line calls for from those words.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

from .words import placeholder_like, random_like

Span = tuple[str, int, int]  # kind, start, end (of the line)

T = TypeVar("T")


class Triggers(Generic[T]):
    """Checks, each with the words (lowercase) one of which a line must hold for it:
    which of many checks (rules, and detect-secrets' plugins) a line calls for. Testing
    each check's words in turn reads the line once per check; this tests each distinct
    word once and returns the checks they call for, in their own order."""

    def __init__(self, checks: Sequence[tuple[tuple[str, ...], T]]) -> None:
        self._checks = [check for _, check in checks]
        index: dict[str, list[int]] = {}
        for n, (words, _) in enumerate(checks):
            for word in words:
                index.setdefault(word, []).append(n)
        self._index = {word: tuple(found) for word, found in index.items()}

    def called(self, low: str) -> list[T]:
        """The checks ``low`` (a line in lowercase) holds a word of, in their order."""
        found = {n for word, checks in self._index.items() if word in low for n in checks}
        return [self._checks[n] for n in sorted(found)]


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
        lambda v: random_like(v, cases=True),
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
        lambda v: random_like(v, cases=True),
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
        lambda v: not placeholder_like(v),
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
        lambda v: not placeholder_like(v, strict=True),
    ),
    _rule(
        "credentials in a command",
        ("-u", "--user"),
        r"(?<!\S)(?:-u|--user)\s+[\"']?[^\s:\"'$]+:(?P<v>[^\s\"']+)",
        lambda v: not placeholder_like(v, strict=True),
    ),
    _rule(
        "authorization header",
        ("authorization",),
        r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?(?:basic|bearer|token|bot|apikey|digest)\s+"
        r"(?P<v>[A-Za-z0-9._~+/-]{12,}=*)",
        random_like,
    ),
    _rule(
        "bearer token", ("bearer",), r"(?i)\bbearer\s+(?P<v>[A-Za-z0-9._~+/-]{20,}=*)", random_like
    ),
]


_TRIGGERS = Triggers([(rule[1], rule) for rule in _RULES])


def rule_spans(line: str) -> Iterator[Span]:
    """The formats with a known shape found in ``line``."""
    for kind, _, pattern, check in _TRIGGERS.called(line.lower()):
        for match in pattern.finditer(line):
            value = match.group("v") if "v" in pattern.groupindex else match.group(0)
            if check is None or check(value):
                yield kind, match.start(), match.end()
