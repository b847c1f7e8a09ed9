"""Refusing secrets in memory: API keys, tokens, credentials, password assignments,
private keys.

Memory goes into every prompt, so a secret written there leaks everywhere. What this
package guarantees:

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

One module each:

  words.py        what a value that is not a secret looks like
  rules.py        formats with a known shape (token prefixes, keys, URLs, headers), and
                  the trigger words that call for a rule or a plugin
  assignments.py  secret-named keys given a value, and secrets told in prose
  plugins.py      detect-secrets' plugins, run from their own patterns
  scan.py         the layers over lines, texts and memory files; findings
  refuse.py       refusing, and what the journal and the context keep instead

The layers and caches imported here under their private names are for the scanner's
own tests.
"""

from __future__ import annotations

from .assignments import MAX_VALUE
from .assignments import assignment_spans as assignment_spans
from .assignments import prose_spans as prose_spans
from .plugins import PLUGINS as PLUGINS
from .plugins import plugin_spans
from .refuse import (
    flagged,
    kinds,
    lines_of,
    refuse_document,
    refuse_journaled,
    refuse_secrets,
    withheld,
    withheld_core,
)
from .rules import Check, Rule, Span
from .rules import rule_spans as rule_spans
from .scan import (
    LEFT_BY_HAND,
    MAX_REPORTED,
    Finding,
    found_in,
    line_secrets,
    scan_document,
    scan_text,
)
from .scan import scan_line as scan_line
from .scan import scan_short_line as scan_short_line
from .scan import scan_small_document as scan_small_document

__all__ = [
    "LEFT_BY_HAND",
    "MAX_REPORTED",
    "MAX_VALUE",
    "Check",
    "Finding",
    "Rule",
    "Span",
    "flagged",
    "found_in",
    "kinds",
    "line_secrets",
    "lines_of",
    "plugin_spans",
    "refuse_document",
    "refuse_journaled",
    "refuse_secrets",
    "scan_document",
    "scan_text",
    "withheld",
    "withheld_core",
]
