"""detect-secrets' plugins, run directly from their own patterns.

Each plugin's compiled patterns and its own analysis of a match are taken once and
shared by every thread: detect-secrets' process-wide settings are never read or
changed, so a scan is safe on any number of threads at once, and no key is ever
"verified" over the network. Entropy and keyword plugins are left out: they refuse
ordinary notes. A match inside a longer run of letters and digits, or a placeholder,
is not a key.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from .rules import Triggers
from .words import placeholder_like

# plugin class, its module, the kind it finds, words one of which a line must hold
PLUGINS: list[tuple[str, str, str, tuple[str, ...]]] = [
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
    for name, module, kind, triggers in PLUGINS:
        plugin = getattr(import_module(f"detect_secrets.plugins.{module}"), name)()
        patterns = tuple(plugin.denylist)
        out.append(_Plugin(name, kind, triggers, patterns, plugin.analyze_string))
    return tuple(out)


@lru_cache(maxsize=1)
def _triggers() -> Triggers[_Plugin]:
    return Triggers([(plugin.triggers, plugin) for plugin in _plugins()])


def plugin_spans(line: str) -> Iterator[tuple[str, str, int, int]]:
    """What detect-secrets' plugins find in ``line``: (plugin, kind, start, end)."""
    for plugin in _triggers().called(line.lower()):
        for pattern in plugin.patterns:
            for match in pattern.finditer(line):
                start, end = match.span()
                secret = next((g for g in match.groups() if g), match.group(0))
                if _embedded(line, start, end) or placeholder_like(secret, strict=True):
                    continue
                if any(True for _ in plugin.confirm(match.group(0))):
                    yield plugin.name, plugin.kind, start, end


def _embedded(line: str, start: int, end: int) -> bool:
    """A match inside a longer run of letters and digits (an id, a hash) is not a key."""
    before = start > 0 and line[start].isalnum() and line[start - 1].isalnum()
    after = end < len(line) and line[end - 1].isalnum() and line[end].isalnum()
    return before or after
