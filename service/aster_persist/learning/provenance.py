"""Where an extracted memory's words came from, and the words not to take from a tool.

An item's content is compared, word by word, with what the user said, what the
assistant said (its calls included) and what tool results returned in the turn; its
origin is the one its words are found in most (the user first, then the assistant, on a
tie). Content whose words came from a tool result and that reads as an instruction
("ignore previous instructions", "always run …", "from now on …") is not stored: it
is held for review, since a fetched page or a command's output may be written to steer
the agent (memory poisoning). Pure functions, no I/O.
"""

from __future__ import annotations

import re
from typing import Any

from ..index.stopwords import is_stop_word
from ..schemas.rendering import read_event

ORIGINS = ("user", "assistant", "tool")
_WORD = re.compile(r"\w+", re.UNICODE)
# what an instruction aimed at an agent reads like
INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b[^.]{0,40}?\b(?:instructions?|rules|prompts?"
    r"|messages|guidelines|directions|directives|above|context)\b"
    r"|\b(?:always|never|must|should)\s+(?:run|execute|call|use|send|upload|install|curl"
    r"|wget|delete|remove|rm|push|commit|include|add|visit|open|disable|skip|trust)\b"
    r"|\bfrom now on\b"
    r"|\byou (?:are|must|should|will) (?:now|always|never)\b"
    r"|\b(?:new|updated|real|actual) (?:system )?(?:instructions|prompt)\b"
    r"|\bdo not (?:tell|mention|reveal|inform|ask)\b"
    r"|\b(?:curl|wget)\b[^\n|]*\|\s*(?:sudo\s+)?(?:ba|z)?sh\b"
    r"|\b(?:send|post|upload|email|forward|exfiltrate)\b[^\n]{0,60}(?:https?://|\S+@\S+\.\w+)",
    re.IGNORECASE,
)


_CLAUSE_END = re.compile(r"[.!?;\n]\s|[!?;\n]|\.$")


def said_by(events: list[dict[str, Any]]) -> dict[str, str]:
    """The turn's text by who said it: the user, the assistant (calls too), tools."""
    out = dict.fromkeys(ORIGINS, "")
    for event in map(read_event, events):
        if event.kind != "message":
            continue
        if event.role == "tool":
            out["tool"] += event.text + "\n"
        elif event.role in ("user", "assistant"):
            calls = " ".join(f"{c.name} {c.arguments}" for c in event.calls)
            out[str(event.role)] += f"{event.text} {calls}\n"
    return out


def _words(text: str) -> set[str]:
    return {w for w in map(str.lower, _WORD.findall(text)) if len(w) > 2 and not is_stop_word(w)}


def origin_of(content: str, said: dict[str, str]) -> str:
    """Whose words the content is made of, most: user, assistant or tool."""
    words = _words(content)
    if not words:
        return "assistant"
    share = {who: len(words & _words(said[who])) / len(words) for who in ORIGINS}
    best = max(share.values())
    if best == 0:
        return "assistant"  # the model's own words
    return next(who for who in ORIGINS if share[who] == best)


def held_because(item: dict[str, Any], said: dict[str, str]) -> str | None:
    """Why an item must be held for review, or None: an instruction whose words came
    from a tool result and that the user did not say (whoever relayed it: a page the
    assistant quotes is still the page's)."""
    tool, user = _words(said["tool"]), _words(said["user"])
    for key in ("content", "title"):
        text = str(item.get(key) or "")
        for found in INSTRUCTION.finditer(text):
            # the instruction with what it orders: to the end of its clause
            end = _CLAUSE_END.search(text, found.end())
            clause = text[found.start() : end.start() if end else len(text)]
            words = _words(clause) or {found.group(0).lower()}
            if words <= tool and not words <= user:
                return (
                    f"instruction-like words from a tool result ({found.group(0)[:60]!r}): "
                    "held for review, never stored on a tool's word"
                )
    return None
