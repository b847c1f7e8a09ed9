"""Whose words a question asks for: the asker's own for "I" and "my", the other side's
for "you said" and "your list", nobody's in particular otherwise; an agent asking
turns it round."""

from __future__ import annotations

import pytest

from aster_persist.index.speaker import sought
from aster_persist.index.text import parse_query


@pytest.mark.parametrize(
    ("question", "role"),
    [
        ("What did I say about the lease?", "user"),
        ("my sister's birthday present", "user"),
        ("i'm sure we talked about the flaky test", "user"),
        ("Can you remind me of the hotel you recommended in Rome?", "assistant"),
        ("what did you say about the migration", "assistant"),
        ("the 7th job in your list", "assistant"),
        ("You had suggested a sealant for the table", "assistant"),
        ("tokenizer crash on emoji", None),
        ("for i in range off by one", None),  # a loop variable, not a person
        ("Was soll ich morgen kochen?", None),
    ],
)
def test_whose_turns_a_question_asks_for(question: str, role: str | None) -> None:
    assert sought(question) == role


def test_an_agent_asking_turns_the_roles_round() -> None:
    assert sought("what did I change in the build", asker="assistant") == "assistant"
    assert sought("the path you gave me", asker="assistant") == "user"
    assert sought("tokenizer crash", asker="assistant") is None


def test_a_query_of_plain_words_carries_the_speaker_an_expression_none() -> None:
    assert parse_query("what did I decide about the cache").speaker == "user"
    assert parse_query("what did I decide", asker="assistant").speaker == "assistant"
    assert parse_query("repo:/srv/app what did you recommend").speaker == "assistant"
    assert parse_query('"what did I" OR cache').speaker is None  # not plain words
