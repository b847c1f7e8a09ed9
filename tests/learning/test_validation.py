"""The validation of the model's answers, by plain calls: a well-formed item is kept in
its normalised form; each kind of malformed item is refused with its reason; and no
secret of the model's reaches a reason or a rejected item."""

from __future__ import annotations

from typing import Any

import pytest

from aster_persist.learning.validation import (
    item_meta,
    item_problem,
    normal_item,
    redact,
    validate_items,
    validate_proposal,
)

AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLQ"  # split, so no scanner flags this file
TOKEN = "ghp_" + "AIxNKu8iS2G8NPRVdD53X83RZJzzzzgEOzdm"

GOOD: dict[str, Any] = {
    "type": "procedural",
    "title": "Test command",
    "content": "Run the tests with make test.",
    "importance": 0.8,
    "confidence": 0.9,
    "scope": "project",
    "tags": ["testing"],
    "reason": "The agent will run the tests again.",
}


def check(item: Any, shown: set[str] | None = None) -> str | None:
    return item_problem(item, shown or set())


def test_a_valid_item_is_accepted_as_it_is() -> None:
    accepted, rejected = validate_items({"items": [GOOD]}, max_items=5, shown=set())
    assert rejected == []
    assert accepted == [GOOD]


def test_an_accepted_item_is_normalised() -> None:
    item = {
        **GOOD,
        "tags": [" make ", "", "  ", "tests"],
        "supersedes": ["old-command", "old-command"],
        "conflicts_with": [],
        "extra": "dropped",
    }
    accepted, rejected = validate_items({"items": [item]}, max_items=5, shown={"old-command"})
    assert rejected == []
    assert accepted == [
        {
            **{k: GOOD[k] for k in ("type", "title", "content", "importance", "confidence")},
            "reason": GOOD["reason"],
            "scope": "project",
            "tags": ["make", "tests"],
            "supersedes": ["old-command"],  # an empty conflicts_with is left out
        }
    ]


def test_at_most_twenty_tags_are_kept() -> None:
    assert normal_item({**GOOD, "tags": [f"t{i}" for i in range(30)]})["tags"] == [
        f"t{i}" for i in range(20)
    ]


def test_limits_and_edges_that_are_accepted() -> None:
    assert check({**GOOD, "importance": 0, "confidence": 1}) is None
    assert check({**GOOD, "scope": "global"}) is None
    assert check({**GOOD, "title": "t" * 200, "content": "c" * 4000}) is None
    assert check({key: value for key, value in GOOD.items() if key != "tags"}) is None
    assert check({**GOOD, "supersedes": ["shown"], "conflicts_with": ["shown"]}, {"shown"}) is None


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        ("a string", "an item is not an object"),
        (["a", "list"], "an item is not an object"),
        ({**GOOD, "type": "episodic"}, "type must be semantic or procedural, not 'episodic'"),
        ({**GOOD, "type": None}, "type must be semantic or procedural, not 'None'"),
        ({**GOOD, "scope": "team"}, "scope must be project or global, not 'team'"),
        ({**GOOD, "scope": None}, "scope must be project or global, not 'None'"),
        (
            {k: v for k, v in GOOD.items() if k != "scope"},
            "scope is missing: project, or global for what holds across projects",
        ),
        ({**GOOD, "title": None}, "title is missing"),
        ({**GOOD, "title": "   "}, "title is missing"),
        ({**GOOD, "content": ""}, "content is missing"),
        ({**GOOD, "content": 42}, "content is missing"),
        ({**GOOD, "title": "t" * 201}, "title is longer than 200 characters"),
        ({**GOOD, "content": "c" * 4001}, "content is longer than 4000 characters"),
        ({**GOOD, "reason": " "}, "reason is missing: an item must say why it will matter later"),
        ({**GOOD, "reason": None}, "reason is missing: an item must say why it will matter later"),
    ],
)
def test_a_malformed_item_is_refused_with_its_reason(item: Any, reason: str) -> None:
    assert check(item) == reason


def test_a_missing_field_is_refused() -> None:
    for key, reason in [
        ("type", "type must be semantic or procedural, not 'None'"),
        ("title", "title is missing"),
        ("content", "content is missing"),
        ("reason", "reason is missing: an item must say why it will matter later"),
        ("importance", "importance must be a number from 0 to 1, not None"),
        ("confidence", "confidence must be a number from 0 to 1, not None"),
    ]:
        item = {k: v for k, v in GOOD.items() if k != key}
        assert check(item) == reason, key


@pytest.mark.parametrize("key", ["importance", "confidence"])
@pytest.mark.parametrize(
    ("value", "shown"),
    [(1.7, "1.7"), (-0.1, "-0.1"), (2, "2"), ("0.5", "0.5"), (True, "True"), (None, "None")],
)
def test_a_bad_number_is_refused(key: str, value: Any, shown: str) -> None:
    assert check({**GOOD, key: value}) == f"{key} must be a number from 0 to 1, not {shown}"


@pytest.mark.parametrize("tags", ["testing", [1, 2], ["ok", None]])
def test_tags_that_are_not_a_list_of_strings_are_refused(tags: Any) -> None:
    assert check({**GOOD, "tags": tags}) == "tags must be a list of strings"


@pytest.mark.parametrize("key", ["supersedes", "conflicts_with"])
def test_relations_must_name_memories_the_model_was_shown(key: str) -> None:
    shown = {"database-port"}
    assert check({**GOOD, key: ["database-port"]}, shown) is None
    assert check({**GOOD, key: "database-port"}, shown) == f"{key} must be a list of names"
    assert check({**GOOD, key: [3]}, shown) == f"{key} must be a list of names"
    assert (
        check({**GOOD, key: ["database-port", "made-up", "other"]}, shown)
        == f"{key} names memories it was not shown: made-up, other"
    )


def test_the_list_of_unknown_names_is_cut_short() -> None:
    problem = check({**GOOD, "supersedes": [f"name-{i:03}" for i in range(100)]})
    prefix = "supersedes names memories it was not shown: "
    assert problem is not None and problem.startswith(prefix)
    assert len(problem) == len(prefix) + 200


@pytest.mark.parametrize("title", ["!!!", "---"])
def test_a_title_that_gives_no_name_is_refused(title: str) -> None:
    assert check({**GOOD, "title": title}) == "the title gives no usable name"


def test_a_title_in_another_script_is_named_by_its_hash() -> None:
    from aster_persist.storage.memory import slugify

    assert check({**GOOD, "title": "日本"}) is None
    assert slugify("日本") == slugify("日本") != slugify("中国")
    assert slugify("日本").startswith("block-")


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        ({**GOOD, "content": f"key {AWS_KEY} here"}, "AWS access key ID in content"),
        ({**GOOD, "reason": f"it is {TOKEN}"}, "GitHub token in reason"),
        ({**GOOD, "tags": ["ok", TOKEN]}, "GitHub token in tags"),
    ],
)
def test_an_item_with_a_secret_is_refused(item: dict[str, Any], reason: str) -> None:
    assert check(item) == f"secret detected ({reason})"


def test_a_title_with_a_secret_is_refused_as_no_usable_name() -> None:
    """The name is made from the title before the scan, and refuses a secret itself."""
    item = {**GOOD, "title": f"token {TOKEN}"}
    assert check(item) == "the title gives no usable name"
    _accepted, rejected = validate_items({"items": [item]}, max_items=5, shown=set())
    assert rejected[0]["item"]["title"] == "[redacted: GitHub token]"


def test_every_secret_is_named() -> None:
    item = {**GOOD, "content": f"{AWS_KEY} and {TOKEN}", "reason": TOKEN}
    assert check(item) == (
        "secret detected (AWS access key ID in content, GitHub token in content, "
        "GitHub token in reason)"
    )


def test_a_rejection_never_holds_a_secret() -> None:
    items = [
        {**GOOD, "content": f"key {AWS_KEY} here"},
        {**GOOD, "type": TOKEN},
        {**GOOD, "importance": TOKEN},
        {**GOOD, "supersedes": [TOKEN]},
    ]
    accepted, rejected = validate_items({"items": items}, max_items=5, shown=set())
    assert accepted == []
    assert [r["reason"] for r in rejected] == [
        "secret detected (AWS access key ID in content)",
        "type must be semantic or procedural, not [redacted: GitHub token]",
        "importance must be a number from 0 to 1, not [redacted: GitHub token]",
        "supersedes names memories it was not shown: [redacted: GitHub token]",
    ]
    assert rejected[0]["item"]["content"] == "[redacted: AWS access key ID]"
    assert rejected[1]["item"]["type"] == "[redacted: GitHub token]"
    assert rejected[3]["item"]["supersedes"] == ["[redacted: GitHub token]"]
    assert AWS_KEY not in repr(rejected) and TOKEN not in repr(rejected)


def test_items_past_the_limit_are_refused() -> None:
    accepted, rejected = validate_items({"items": [GOOD] * 4}, max_items=2, shown=set())
    assert accepted == [GOOD, GOOD]
    assert rejected == [{"item": GOOD, "reason": "more than 2 items"}] * 2


def test_a_malformed_item_does_not_stop_the_others() -> None:
    answer = {"items": [{**GOOD, "scope": "team"}, GOOD, "junk"]}
    accepted, rejected = validate_items(answer, max_items=5, shown=set())
    assert accepted == [GOOD]
    assert [r["reason"] for r in rejected] == [
        "scope must be project or global, not 'team'",
        "an item is not an object",
    ]


@pytest.mark.parametrize("answer", [{}, {"items": None}, {"items": {"0": GOOD}}])
def test_an_answer_without_an_items_list_is_refused(answer: dict[str, Any]) -> None:
    assert validate_items(answer, max_items=5, shown=set()) == (
        [],
        [{"item": answer, "reason": "the answer has no items list"}],
    )


def test_an_answer_without_items_is_redacted() -> None:
    _accepted, rejected = validate_items({"memory": TOKEN}, max_items=5, shown=set())
    assert rejected == [
        {"item": {"memory": "[redacted: GitHub token]"}, "reason": "the answer has no items list"}
    ]


def test_redact_walks_nested_values() -> None:
    value = {"a": [TOKEN, {"b": f"x {AWS_KEY}"}], "n": 1, "ok": "plain", "none": None}
    assert redact(value) == {
        "a": ["[redacted: GitHub token]", {"b": "[redacted: AWS access key ID]"}],
        "n": 1,
        "ok": "plain",
        "none": None,
    }


def test_item_meta_is_the_frontmatter_of_a_valid_item() -> None:
    assert item_meta(normal_item(GOOD)) == {
        "type": "procedural",
        "description": "Test command",
        "tags": ["testing"],
        "importance": 0.8,
        "confidence": 0.9,
        "reason": "The agent will run the tests again.",
    }


# -- consolidation proposals ----------------------------------------------------------

NAMES = {"tabs-a", "tabs-b", "tabs-c", "stale"}


def merge(into: str, *sources: str, **extra: Any) -> dict[str, Any]:
    return {"into": into, "from": list(sources), "content": "Use tabs.", "reason": "same", **extra}


def test_a_well_formed_proposal_is_kept() -> None:
    proposal = {
        "merges": [merge("tabs-a", "tabs-a", "tabs-b", "tabs-b")],
        "archives": [{"name": "stale", "reason": "contradicted"}],
        "new": [GOOD],
    }
    assert validate_proposal(proposal, NAMES, max_items=5) == {
        "merges": [merge("tabs-a", "tabs-b")],  # deduplicated, the target left out
        "archives": [{"name": "stale", "reason": "contradicted"}],
        "new": [GOOD],
        "rejected": [],
    }


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("not a merge", "a merge is not an object"),
        (merge("made-up", "tabs-b"), "merge into an unknown block 'made-up'"),
        (merge("tabs-a", "tabs-b", "made-up"), "merge from blocks that are not all known"),
        (merge("tabs-a"), "merge from blocks that are not all known"),
        (merge("tabs-a", "tabs-b", content=" "), "merge without content"),
        (merge("tabs-a", "tabs-b", reason=""), "merge without a reason"),
        (merge("tabs-a", "tabs-b", content=f"key {AWS_KEY}"), "secret detected in a merge"),
    ],
)
def test_a_malformed_merge_is_refused(bad: Any, reason: str) -> None:
    plan = validate_proposal({"merges": [bad]}, NAMES, max_items=5)
    assert plan["merges"] == []
    assert [r["reason"] for r in plan["rejected"]] == [reason]
    assert AWS_KEY not in repr(plan)


def test_a_block_is_taken_in_by_one_merge_only() -> None:
    plan = validate_proposal(
        {"merges": [merge("tabs-a", "tabs-b"), merge("tabs-c", "tabs-b")]}, NAMES, max_items=5
    )
    assert plan["merges"] == [merge("tabs-a", "tabs-b")]
    assert plan["rejected"] == [
        {
            "merge": merge("tabs-c", "tabs-b"),
            "reason": "merge names a block an earlier merge already takes in",
        }
    ]


def test_a_malformed_archive_is_refused() -> None:
    plan = validate_proposal(
        {"archives": [{"name": "made-up", "reason": "old"}, {"name": "stale"}, "stale"]},
        NAMES,
        max_items=5,
    )
    assert plan["archives"] == []
    assert [r["reason"] for r in plan["rejected"]] == [
        "unknown block",
        "archive without a reason",
        "unknown block",
    ]


def test_a_part_that_is_not_a_list_is_refused() -> None:
    plan = validate_proposal({"merges": {"into": "tabs-a"}, "new": TOKEN}, NAMES, max_items=5)
    assert plan["rejected"] == [
        {"merges": {"into": "tabs-a"}, "reason": "merges is not a list"},
        {"new": "[redacted: GitHub token]", "reason": "new is not a list"},
    ]
    assert plan["merges"] == plan["new"] == []


def test_new_blocks_are_validated_as_items() -> None:
    plan = validate_proposal(
        {"new": [{**GOOD, "supersedes": ["tabs-a"]}, {**GOOD, "supersedes": ["made-up"]}]},
        NAMES,
        max_items=5,
    )
    assert plan["new"] == [{**GOOD, "supersedes": ["tabs-a"]}]
    assert [r["reason"] for r in plan["rejected"]] == [
        "supersedes names memories it was not shown: made-up"
    ]
