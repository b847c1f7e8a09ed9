"""Refusing secrets in memory: API keys, tokens, password assignments, private keys.

Memory goes into every prompt, so a secret written there leaks everywhere. Two layers:
rules for the token formats agents meet most (several that detect-secrets does not
know), and detect-secrets' precise plugins run in-process. Entropy and keyword plugins
are left out: they refuse ordinary notes and code. A finding names its kind and where
it is (field, line, column), never the secret itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..errors import SecretDetected


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


_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("OpenAI API key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("Stripe key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{20,}")),
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    (
        "JSON Web Token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ),
    ("bearer token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{20,}=*")),
    ("private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
]
_ASSIGNMENT = re.compile(
    r"(?i)(?<![a-z0-9])(?:[a-z0-9]+_)*(?:password|passwd|pwd|passphrase|secret|api[_-]?key"
    r"|access[_-]?token|auth[_-]?token|client[_-]?secret|private[_-]?key)(?![a-z0-9_])"
    r"[\"']?\s*[:=]\s*(?P<quote>[\"']?)(?P<value>[^\s\"',;)]{6,})"
)
_PLACEHOLDER = re.compile(
    r"(?i)^(?:\$|<|\{|\[|%|\*{3,}|x{4,}|\.\.\.|changeme|example|redacted|none|null|true|false"
    r"|process\.env|os\.environ|env\b|getenv|secrets?\.|settings\.|config\.)"
)
_LONG_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=.]{16,}")
_PLUGINS = [
    "AWSKeyDetector",
    "ArtifactoryDetector",
    "AzureStorageKeyDetector",
    "BasicAuthDetector",
    "CloudantDetector",
    "DiscordBotTokenDetector",
    "GitHubTokenDetector",
    "GitLabTokenDetector",
    "IbmCloudIamDetector",
    "IbmCosHmacDetector",
    "JwtTokenDetector",
    "MailchimpDetector",
    "NpmDetector",
    "OpenAIDetector",
    "PrivateKeyDetector",
    "PypiTokenDetector",
    "SendGridDetector",
    "SlackDetector",
    "SoftlayerDetector",
    "SquareOAuthDetector",
    "StripeDetector",
    "TelegramBotTokenDetector",
    "TwilioKeyDetector",
]


def _password_value(match: re.Match[str]) -> bool:
    value = match.group("value")
    if _PLACEHOLDER.match(value) or "(" in value or value.startswith("."):
        return False
    # unquoted words without digits are usually variable names in code, not passwords
    return bool(match.group("quote")) or any(c.isdigit() for c in value)


@lru_cache(maxsize=1)
def _detect_secrets() -> Any:
    """detect-secrets' scanner, configured once for this process with the precise plugins."""
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import transient_settings

    # The settings are process-wide in detect-secrets; this process uses only these.
    transient_settings({"plugins_used": [{"name": n} for n in _PLUGINS]}).__enter__()
    return scan_line


def scan_text(text: str, field: str = "content") -> list[Finding]:
    """Every secret-looking thing in ``text``, by kind and place."""
    findings: list[Finding] = []
    for number, line in enumerate(text.splitlines(), 1):
        seen_here = False
        for kind, pattern in _RULES:
            for match in pattern.finditer(line):
                findings.append(Finding(kind, field, number, match.start() + 1))
                seen_here = True
        for match in _ASSIGNMENT.finditer(line):
            if _password_value(match):
                findings.append(Finding("password assignment", field, number, match.start() + 1))
                seen_here = True
        if not seen_here and _LONG_TOKEN.search(line):
            for secret in _detect_secrets()(line):
                findings.append(Finding(str(secret.type), field, number, 1))
    return findings


def refuse_secrets(fields: dict[str, Any]) -> None:
    """Raise SecretDetected (422) when any field holds a secret; says where, never what."""
    findings: list[Finding] = []
    for name, value in fields.items():
        for text in _strings(value):
            findings.extend(scan_text(text, name))
    if findings:
        first = findings[0]
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        raise SecretDetected(
            f"{first.field} line {first.line} looks like a {first.kind}{more}; secrets are never "
            "written to memory, which goes into every prompt",
            errors=[f.public() for f in findings],
        )


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)] + [str(k) for k in value]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []
