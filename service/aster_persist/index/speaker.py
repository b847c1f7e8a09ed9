"""Whose words a question asks for, read from how it is put.

A question about a conversation usually says whose turns hold the answer: "what did I
say about the lease", "my sister's name" ask for the asker's own turns; "the hotel you
recommended", "your list of apps" ask for the other side's. Search weighs the turns of
the speaker asked for above the others (``ranking.OTHER_SPEAKER``); it never drops any.

Who asks depends on the route: a person at ``/v1/search``, the dashboard or the CLI is
the ``user`` of their sessions; an agent calling the ``search_sessions`` tool is the
``assistant``, so its "I" is the assistant's turns and its "you" the user's. English
only: a question in another language, or with no such words, weighs every speaker alike.
"""

from __future__ import annotations

import re
from typing import Literal

Asker = Literal["user", "assistant"]
OTHER: dict[Asker, Asker] = {"user": "assistant", "assistant": "user"}

# "you said", "you had recommended", "you just told me": the other side's past words
_SAID = re.compile(
    r"\byou\s+(?:had\s+|have\s+|just\s+|also\s+|once\s+)?"
    r"(?:\w+ed|said|told|gave|made|wrote|came|put|did|sent|showed|found|brought|chose|"
    r"picked|drew|built|thought|taught|laid|spoke|meant)\b",
    re.IGNORECASE,
)
# "your suggestion", "your list": a thing the other side gave
_THEIRS = re.compile(
    r"\byour\s+(?:suggestion|recommendation|list|answer|advice|response|reply|"
    r"explanation|example|idea|plan|summary|code|fix)s?\b",
    re.IGNORECASE,
)
# the asker speaking of themself ("I" in capitals only: a lower-case "i" is as often a
# loop variable in a search of code as a person)
_MINE = re.compile(r"\bI\b|\b(?i:me|my|mine|myself|i've|i'm|i'd|i'll)\b")


# "what did you say", "had you mentioned": a question about the other side's past words
_ASKED = re.compile(r"\b(?:did|had)\s+you\b", re.IGNORECASE)


def sought(question: str, asker: Asker = "user") -> Asker | None:
    """The role whose turns ``question`` asks for, or None when it does not say."""
    if _SAID.search(question) or _THEIRS.search(question) or _ASKED.search(question):
        return OTHER[asker]
    if _MINE.search(question):
        return asker
    return None
