"""A question that says whose words it looks for ranks that speaker's turns first: "what
did I say" the user's, "what did you recommend" the assistant's. Nothing is dropped, the
other speaker's turns keep their place among themselves, pages run through the weighed
order, and search by meaning fused with the words weighs alike."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from aster_persist.index.ranking import OTHER_SPEAKER

from ..conftest import FakeClock, assistant, make_client, new_session, user

SAID = "The staging deploy script fails with a timeout."  # said by both, so BM25 ties


@pytest.fixture(params=["words", "meaning"])
def client(request: pytest.FixtureRequest, home: Path, clock: FakeClock) -> Iterator[TestClient]:
    with make_client(home, clock, semantic=request.param == "meaning") as c:
        yield c


def seed(client: TestClient) -> dict[str, list[tuple[str, int]]]:
    """Two sessions where each speaker says the same words, in both orders."""
    a = new_session(client)
    client.post(
        f"/v1/sessions/{a}/events", json=[user("Hello there."), assistant(SAID), user(SAID)]
    ).raise_for_status()
    b = new_session(client)
    client.post(
        f"/v1/sessions/{b}/events", json=[user(SAID), assistant(SAID), user("Thanks!")]
    ).raise_for_status()
    c = new_session(client)  # words the others do not share, so that theirs weigh
    client.post(
        f"/v1/sessions/{c}/events", json=[user(f"Lunch is at noon on day {n}.") for n in range(20)]
    ).raise_for_status()
    return {"user": [(a, 3), (b, 1)], "assistant": [(a, 2), (b, 2)]}


def search(client: TestClient, q: str, **params: Any) -> dict[str, Any]:
    r = client.get("/v1/search", params={"q": q, "kinds": "message", **params})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def turns(hits: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(h["session_id"], h["seq"]) for h in hits]


def test_the_speaker_asked_for_comes_first_and_nothing_is_dropped(client: TestClient) -> None:
    said = seed(client)
    every = set(said["user"] + said["assistant"])
    for question, role in [
        ("what did I say about the staging deploy timeout", "user"),
        ("what did you say about the staging deploy timeout", "assistant"),
        ("the staging deploy timeout you mentioned", "assistant"),
    ]:
        hits = search(client, question)["items"]
        assert set(turns(hits)) == every, question
        assert hits[0]["role"] == role and turns(hits)[0] in said[role], question


def test_words_alone_weigh_the_other_speaker_by_a_share_and_keep_every_order(
    home: Path, clock: FakeClock
) -> None:
    with make_client(home, clock) as client:
        said = seed(client)
        plain = search(client, "staging deploy timeout")["items"]
        assert len({h["score"] for h in plain}) == 1  # no pronoun: every speaker alike
        hits = search(client, "what did I say about the staging deploy timeout")["items"]
        assert turns(hits[:2]) == sorted(said["user"], key=lambda t: t[1] != 3)  # by rowid
        assert turns(hits[2:]) == said["assistant"]
        mine, theirs = hits[0]["score"], hits[2]["score"]
        assert theirs == pytest.approx(mine * OTHER_SPEAKER, rel=1e-4)
        # filtered and paged: the same order, each hit once
        whole = search(client, "repo:/srv/repo-a what did you say about the staging deploy")
        order, cursor = [], None
        while True:
            page = search(
                client,
                "repo:/srv/repo-a what did you say about the staging deploy",
                limit=1,
                **({"cursor": cursor} if cursor else {}),
            )
            order += turns(page["items"])
            if not (cursor := page["next_cursor"]):
                break
        assert order == turns(whole["items"]) and len(order) == 4
        assert set(order[:2]) == set(said["assistant"])
