"""What a query of plain words gives search by meaning: its words for BM25, stop words
left out, and the words as typed, stop words kept, for the model to read."""

from __future__ import annotations

from aster_persist.index.text import parse_query


def test_a_question_is_read_by_the_model_as_typed_and_by_bm25_without_stop_words() -> None:
    query = parse_query("What did I buy for my sister's birthday?")
    assert query.words == "buy sister's birthday?"
    assert query.sentence == "What did I buy for my sister's birthday?"


def test_filters_are_not_words_and_expressions_have_none() -> None:
    query = parse_query("repo:/srv/app why did the deploy fail")
    assert query.sentence == "why did the deploy fail" and query.repo == "/srv/app"
    for typed in ('"deploy failed"', "deploy AND fail", "depl*"):
        expression = parse_query(typed)
        assert expression.words is None and expression.sentence is None
