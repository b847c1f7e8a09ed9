"""Search that finds what a person means: stop words dropped from a query that has other
words (a query of stop words alone still matches), sessions ranked by their turns' hits
("which session was that"), and recall by recency and by tags that takes in global
memory beside a project's, with tags matched all or any."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from ..conftest import REPO, assistant, new_session, user


def said(client: TestClient, *turns: dict[str, Any], title: str | None = None) -> str:
    sid = new_session(client, title=title) if title else new_session(client)
    assert client.post(f"/v1/sessions/{sid}/events", json=list(turns)).status_code == 201
    return sid


def snippets(client: TestClient, q: str) -> list[str]:
    r = client.get("/v1/search", params={"q": q})
    assert r.status_code == 200, r.text
    return [h["snippet"].replace("[", "").replace("]", "") for h in r.json()["items"]]


def test_stop_words_are_dropped_when_the_query_has_other_words(client: TestClient) -> None:
    said(client, user("It is the entrypoint."), assistant("The tokenizer crashes on empty input."))
    found = snippets(client, "why does the tokenizer crash")
    assert len(found) == 1 and "tokenizer" in found[0]  # "the" no longer matches alone
    assert len(snippets(client, "it is the")) >= 1  # stop words alone still match
    assert snippets(client, '"it is the"')  # and a phrase is kept as typed
    both = client.get("/v1/search", params={"q": "tokenizer OR the"}).json()["items"]
    assert len(both) == 2  # an explicit expression is kept as typed


def test_sessions_are_ranked_by_their_turns_hits(client: TestClient) -> None:
    flaky = said(
        client,
        user("the websocket test flakes again"),
        assistant("The websocket heartbeat races the deadline."),
        user("raise the websocket deadline"),
        title="Websocket flake",
    )
    once = said(client, user("a websocket mention"), title="Other")
    said(client, user("nothing related"))
    r = client.get("/v1/search", params={"q": "websocket deadline", "group": "session"})
    assert r.status_code == 200, r.text
    items = r.json()["items"]
    assert [g["session_id"] for g in items] == [flaky, once]
    best = items[0]
    assert best["title"] == "Websocket flake" and best["repo_root"] == REPO
    assert best["matches"] == 4 and len(best["hits"]) == 3  # three turns and its title
    assert best["score"] == pytest.approx(sum(h["score"] for h in best["hits"]), abs=1e-4)
    assert all(h["session_id"] == flaky for h in best["hits"])
    slashed = {"q": "websocket deadline", "group": "session", "repo_root": REPO + "/"}
    assert [g["session_id"] for g in client.get("/v1/search", params=slashed).json()["items"]] == [
        flaky,
        once,
    ]
    assert client.get("/v1/search", params={"q": "x", "group": "turn"}).status_code == 422
    memory = client.get("/v1/search", params={"q": "x", "group": "session", "kind": "memory"})
    assert memory.status_code == 422 and "group" in memory.json()["detail"]


def block(client: TestClient, name: str, tags: list[str], repo_root: str | None = None) -> None:
    params = {"repo_root": repo_root} if repo_root else {}
    r = client.post(
        "/v1/memory/blocks",
        params=params,
        json={"name": name, "content": f"About {name}.", "tags": tags},
    )
    assert r.status_code == 201, r.text


def names(client: TestClient, path: str, **params: Any) -> list[str]:
    r = client.get(path, params=params)
    assert r.status_code == 200, r.text
    return sorted(b["name"] for b in r.json()["items"])


def test_recent_and_tags_take_in_global_memory_with_a_project(client: TestClient) -> None:
    block(client, "style", ["python", "style"])  # global
    block(client, "editor", ["editor"])  # global
    block(client, "build", ["python", "ci"], REPO)
    block(client, "style", ["python"], REPO)  # shadows the global one
    assert names(client, "/v1/memory/recent", repo_root=REPO) == ["build", "editor", "style"]
    shadow = client.get("/v1/memory/recent", params={"repo_root": REPO}).json()["items"]
    assert [b["scope"] != "global" for b in shadow if b["name"] == "style"] == [True]
    assert names(client, "/v1/memory/recent") == ["editor", "style"]  # global alone
    tagged = names(client, "/v1/memory/blocks", repo_root=REPO, tag="python")
    assert tagged == ["build", "style"]
    assert names(client, "/v1/memory/blocks", repo_root=REPO, tag=["python", "ci"]) == ["build"]
    assert names(
        client, "/v1/memory/blocks", repo_root=REPO, tag=["ci", "editor"], match="any"
    ) == ["build", "editor"]
    assert names(client, "/v1/memory/blocks", repo_root=REPO) == ["build", "style"]  # a listing
    # the project's style (no "style" tag) hides the global one (which has it)
    assert names(client, "/v1/memory/blocks", repo_root=REPO, tag="style") == []


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"tag": ""}, "tag"),
        ({"tag": "a,b"}, "tag"),
        ({"tag": "x" * 101}, "tag"),
        ({"tag": "ci", "match": "some"}, "match"),
    ],
)
def test_a_bad_tag_filter_is_a_422_naming_it(
    client: TestClient, params: dict[str, str], named: str
) -> None:
    r = client.get("/v1/memory/blocks", params=params)
    assert r.status_code == 422 and named in r.json()["detail"], r.text


def test_the_search_memory_tool_says_each_blocks_relations(client: TestClient) -> None:
    client.post(
        "/v1/memory/blocks", json={"name": "friday-deploys", "content": "Deploy on Fridays."}
    )
    client.post(
        "/v1/memory/blocks",
        json={
            "name": "no-friday",
            "content": "Never deploy on Fridays.",
            "conflicts_with": ["friday-deploys"],
        },
    )
    r = client.post(
        "/v1/memory/tools/call",
        json={"name": "search_memory", "arguments": {"query": "deploy on fridays"}},
    )
    text = r.json()["content"]
    assert "- no-friday (global): Never deploy on Fridays. (conflicts with friday-deploys)" in text
    assert "- friday-deploys (global): Deploy on Fridays. (conflicts with no-friday)" in text
