"""English stop words: the words a search query drops when it has others, so that
"why does the tokenizer crash" ranks by "tokenizer" and "crash", not by "the".

The list is the common closed-class English words (articles, pronouns, auxiliaries,
prepositions, conjunctions) and the pieces contractions split into; words that carry
meaning in code and logs ("not", "no", "error", "null") are left out of it.
"""

from __future__ import annotations

_LISTED = """
    a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself nor of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves
    s t d ll m re ve don doesn didn isn wasn aren weren hasn haven hadn won wouldn
    shouldn couldn can't let's
    also get got please could would may might must shall
"""
STOP_WORDS = frozenset(_LISTED.split())


def is_stop_word(word: str) -> bool:
    return word.lower() in STOP_WORDS
