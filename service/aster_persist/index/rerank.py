"""Reranking by late interaction: the best hits of a question weighed again, each of the
question's tokens against the text's tokens (its most similar one), with the embedding
model's token vectors (ColBERT's MaxSim, Khattab and Zaharia, 2020), from its quick
8-bit session (``Encoder.tokens``). It reads what the
question says word by word where one vector for the whole text has averaged it away.
Only the question's own words count: its stop words and punctuation ("what", "did",
"I", "?"), which every text shares, are read in context but not weighed. A hit is read
from its start, sentence by sentence, each sentence in its own context: what a turn
says in passing ("by the way, I got a new bike") keeps its own token vectors instead of
being read in the light of the turn's topic.

The new order is fused with the one it reorders (reciprocal rank fusion), so a hit the
first ranking was sure of is not lost to one the reranker alone likes; only the order of
those weighed changes, never which they are.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from typing import TypeVar

import numpy as np

from .encoder import Encoder
from .stopwords import is_stop_word

Key = TypeVar("Key", bound=Hashable)
DEPTH = 30  # hits weighed again
K = 10  # the fusion's constant: steep, the top of each order counts most
# of each hit read: its first sentences, until they hold 300 characters (each at most
# that long). Its start says what it is about, and a long text's later tokens mostly find
# a near match for any question (300, 400 and 600 measured alike; 300 is the quickest)
READ_CHARS = 300
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


class Reranker:
    """Orders a few candidate texts by how closely they answer a question."""

    def __init__(self, encoder: Encoder, depth: int = DEPTH) -> None:
        self.encoder = encoder
        self.depth = depth

    def scores(self, question: str, texts: Sequence[str]) -> np.ndarray:
        """MaxSim of each text against the question: the mean, over the question's tokens,
        of each one's best similarity in the text."""
        asked = self.encoder.tokens([question], quick=True)[0]
        own = self.own_words(question)
        if len(own) == len(asked) and own.any():
            asked = asked[own]
        read = [sentences(t) for t in texts]
        vectors = iter(self.encoder.tokens([s for each in read for s in each], quick=True))
        scores = np.zeros(len(texts), dtype=np.float32)
        for n, each in enumerate(read):
            tokens = [next(vectors) for _ in each]
            if len(asked) and tokens:
                scores[n] = float((asked @ np.vstack(tokens).T).max(axis=1).mean())
        return scores

    def warm(self) -> None:
        """Make the model's quick session now (a second or two), not at the first search."""
        self.encoder.tokens(["ready"], quick=True)

    def own_words(self, question: str) -> np.ndarray:
        """Which of the question's word pieces are of its own words: not of a stop word,
        not punctuation (a piece after the first of a word goes with the word)."""
        own: list[bool] = []
        counted = False
        for piece in self.encoder.pieces(question):
            if not piece.startswith("##"):
                counted = piece.isalnum() and not is_stop_word(piece)
            own.append(counted)
        return np.array(own, dtype=bool)

    def order(self, question: str, ranked: Sequence[tuple[Key, str]]) -> list[Key]:
        """The keys of ``ranked`` (best first, with their texts), the first ``depth`` of
        them in a new order (their rank fused with the reranker's), then the rest as
        they were."""
        head, rest = list(ranked[: self.depth]), [k for k, _ in ranked[self.depth :]]
        if len(head) < 2:
            return [k for k, _ in head] + rest
        scores = self.scores(question, [text for _, text in head])
        by_score = np.argsort(-scores, kind="stable")
        fused = 1.0 / (K + 1 + np.arange(len(head)))  # the order given, and the scores'
        fused[by_score] += 1.0 / (K + 1 + np.arange(len(head)))
        order = np.argsort(-fused, kind="stable")
        return [head[i][0] for i in order] + rest


def sentences(text: str, chars: int = READ_CHARS) -> list[str]:
    """The sentences of ``text`` from its start until those taken hold ``chars``
    characters (the last may run past that), each cut at ``chars``; pieces of three
    characters or fewer are left out."""
    found: list[str] = []
    start = 0
    for sentence in _SENTENCE_END.split(text[: 2 * chars]):
        if start >= chars:
            break
        sentence = sentence.strip()
        if len(sentence) > 3:
            found.append(sentence[:chars])
            start += len(sentence) + 1
    return found
