"""Search over HTTP: query syntax, filters, snippets, cursors, memory, and a disposable index."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..conftest import REPO, FakeClock, assistant, call, make_client, new_session, tool, user

FIXTURES = Path(__file__).parents[1] / "fixtures"


def search(client: TestClient, q: str, **params: Any) -> list[dict[str, Any]]:
    r = client.get("/v1/search", params={"q": q, **params})
    assert r.status_code == 200, r.text
    return list(r.json()["items"])


def seed(client: TestClient) -> dict[str, str]:
    """Three sessions in two projects, with every kind of document."""
    a = new_session(client, title="Fixing the tokenizer")
    client.post(
        f"/v1/sessions/{a}/events",
        json=[
            user("Why does the tokenizer crash on emoji input?"),
            assistant(calls=[call("c1", "read_file", '{"path": "src/lexer.rs"}')]),
            tool("c1", 'fn lex(input: &str) { panic!("boom") }'),
            assistant("The lexer panics on multi-byte characters; slicing by bytes is wrong."),
            {"type": "summary", "content": "Found the emoji crash in the lexer.", "through_seq": 4},
        ],
    ).raise_for_status()
    b = new_session(client)
    client.post(
        f"/v1/sessions/{b}/events",
        json=[
            user("Set up the docker build for the release pipeline"),
            assistant("The docker image now builds in two stages."),
            {"type": "title", "title": "Release pipeline"},
        ],
    ).raise_for_status()
    c = new_session(client, repo_root="/srv/other")
    client.post(
        f"/v1/sessions/{c}/events", json=[user("The tokenizer is fine here; the docs are not.")]
    ).raise_for_status()
    return {"a": a, "b": b, "c": c}


def test_appends_are_searchable_as_soon_as_they_return(client: TestClient) -> None:
    ids = seed(client)
    hits = search(client, "emoji tokenizer crash")
    top = hits[0]
    assert (top["session_id"], top["seq"], top["kind"], top["role"]) == (
        ids["a"],
        1,
        "message",
        "user",
    )
    assert top["repo_root"] == REPO and top["title"] == "Fixing the tokenizer"
    words = {top["snippet"][s:e].lower() for s, e in top["highlights"]}
    assert words == {"tokenizer", "crash", "emoji"}
    assert top["score"] > 0 and [h["score"] for h in hits] == sorted(
        (h["score"] for h in hits), reverse=True
    )
    sid = new_session(client)
    client.post(f"/v1/sessions/{sid}/events", json=user("zebrafish telemetry")).raise_for_status()
    assert [h["session_id"] for h in search(client, "zebrafish")] == [sid]


def test_plain_words_match_any_of_them_and_rank_by_how_many(client: TestClient) -> None:
    ids = seed(client)
    hits = search(client, "how do I fix the docker release build")
    assert hits[0]["session_id"] == ids["b"] and hits[0]["seq"] == 1
    assert {h["session_id"] for h in hits} >= {ids["a"], ids["b"]}  # "fix" finds session a too


def test_query_syntax(client: TestClient) -> None:
    ids = seed(client)
    assert [h["seq"] for h in search(client, '"multi-byte characters"')] == [4]
    assert search(client, '"characters multi-byte"') == []
    assert {h["kind"] for h in search(client, "pani*")} == {"tool_result", "message"}
    assert [h["session_id"] for h in search(client, "tokenizer AND docs")] == [ids["c"]]
    both = search(client, "tokenizer OR docker")
    assert {h["session_id"] for h in both} == {ids["a"], ids["b"], ids["c"]}
    no_docs = search(client, "tokenizer NOT docs")
    assert ids["c"] not in {h["session_id"] for h in no_docs} and no_docs
    grouped = search(client, "(docker OR emoji) AND stages")
    assert [(h["session_id"], h["seq"]) for h in grouped] == [(ids["b"], 2)]
    # English stemming: "crashes" and "slice" find "crash" and "slicing".
    assert {h["seq"] for h in search(client, "crashes")} == {1, 5}
    assert [h["seq"] for h in search(client, "slice")] == [4]
    # Tool names and arguments, titles and summaries are searchable.
    assert search(client, "lexer.rs")[0]["kind"] == "tool_call"
    assert search(client, "Release pipeline", kinds="title")[0]["session_id"] == ids["b"]
    assert search(client, "emoji", kinds="summary")[0]["seq"] == 5


def test_filters_in_the_query_and_as_parameters(client: TestClient, clock: FakeClock) -> None:
    ids = seed(client)
    clock.advance(days=40)
    late = new_session(client)
    client.post(f"/v1/sessions/{late}/events", json=user("tokenizer again")).raise_for_status()
    assert {h["session_id"] for h in search(client, "tokenizer repo:/srv/other")} == {ids["c"]}
    assert {h["session_id"] for h in search(client, "tokenizer", repo_root="/srv/other")} == {
        ids["c"]
    }
    assert {h["session_id"] for h in search(client, f"tokenizer session:{ids['a']}")} == {ids["a"]}
    assert {h["kind"] for h in search(client, "kind:tool_result lex OR panic")} == {"tool_result"}
    assert {h["role"] for h in search(client, "tokenizer role:user")} == {"user"}
    assert {h["role"] for h in search(client, "tokenizer", role="assistant")} <= {"assistant"}
    # Dates: the fake clock starts on 2026-01-02; the late session is in February.
    day = search(client, "tokenizer 2026-01-02")
    assert {h["ts"][:10] for h in day} == {"2026-01-02"} and len(day) == 3
    assert {h["session_id"] for h in search(client, "tokenizer 2026-02")} == {late}
    assert len(search(client, "tokenizer 2026-01 2026-02")) == 4
    assert search(client, "2026-03") == []
    assert {h["session_id"] for h in search(client, "tokenizer after:2026-02-01")} == {late}
    assert late not in {h["session_id"] for h in search(client, "tokenizer before:2026-02-01")}
    assert {h["session_id"] for h in search(client, "kind:message after:2026-02-01")} == {late}
    newest = search(client, f"session:{ids['a']}")  # filters alone: newest first
    assert [h["seq"] for h in newest] == [5, 4, 3, 2, 1, 0] and newest[0]["score"] == 0


def test_cursor_pages_cover_every_hit_once(client: TestClient) -> None:
    sid = new_session(client)
    client.post(
        f"/v1/sessions/{sid}/events",
        json=[user(f"walrus number {n} " + "walrus " * (n % 5)) for n in range(23)],
    ).raise_for_status()
    seen: list[tuple[str, int]] = []
    scores: list[float] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"q": "walrus", "limit": 5}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/v1/search", params=params).json()
        seen += [(h["session_id"], h["seq"]) for h in page["items"]]
        scores += [h["score"] for h in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == 23
    assert scores == sorted(scores, reverse=True)


def test_bad_queries_are_422_with_a_reason(client: TestClient, home: Path) -> None:
    seed(client)
    for q, says in [
        ('"unterminated phrase', "closing quote"),
        ("NOT docker", "NOT needs a term"),
        ("docker AND", "needs a term after it"),
        ("(docker OR emoji", "not closed"),
        ("docker)", "no opening"),
        ("kind:banana x", "not a kind"),
        ("role:robot x", "not a role"),
        ("after:yesterday x", "YYYY-MM-DD"),
    ]:
        r = client.get("/v1/search", params={"q": q})
        assert r.status_code == 422, q
        assert r.headers["content-type"] == "application/problem+json"
        assert says in r.json()["detail"], (q, r.json()["detail"])
    r = client.get("/v1/search", params={"q": "x", "cursor": "not-a-cursor"})
    assert r.status_code == 422
    assert client.get("/v1/search", params={"q": "x", "kinds": "banana"}).status_code == 422


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    q=st.text(max_size=60)
    | st.lists(
        st.sampled_from(
            ['"', "(", ")", "*", "AND", "OR", "NOT", "kind:", "x", "-", ":", "^", "NEAR"]
        ),
        max_size=8,
    ).map(" ".join)
)
def test_arbitrary_queries_never_fail_the_server(client: TestClient, q: str) -> None:
    for path in ("/v1/search", "/v1/memory/search"):
        r = client.get(path, params={"q": q, "kind": "all"} if path == "/v1/search" else {"q": q})
        assert r.status_code in (200, 422), (q, r.status_code, r.text)


def test_memory_search_relevance_recency_and_relations(
    client: TestClient, clock: FakeClock
) -> None:
    def remember(name: str, content: str, **extra: Any) -> None:
        r = client.post("/v1/memory/blocks", json={"name": name, "content": content, **extra})
        assert r.status_code == 201, r.text

    remember("old-deploy", "Deploys go through the staging cluster first.")
    remember("unrelated", "The office coffee machine needs descaling.")
    for n in range(6):
        remember(f"filler-{n}", f"Filler note number {n} about nothing in particular.")
    clock.advance(days=90)
    remember("new-deploy", "Deploys go through the staging cluster first, then canary.")
    remember("rollback", "Roll back a deploy with the release tool.", conflicts_with=["new-deploy"])
    hits = client.get("/v1/memory/search", params={"q": "how do deploys work", "k": 3}).json()
    names = [h["name"] for h in hits["items"]]
    assert names[:2] == ["new-deploy", "old-deploy"] or names[0] == "new-deploy"
    first = hits["items"][0]
    assert first["recency"] > hits["items"][names.index("old-deploy")]["recency"]
    assert first["conflicts_with"] == ["rollback"]
    assert "unrelated" not in names
    r = client.post(
        "/v1/memory/blocks",
        params={"repo_root": REPO},
        json={"name": "deploy-here", "content": "This project deploys with make ship."},
    )
    assert r.status_code == 201
    assert "deploy-here" not in {h["name"] for h in search_memory(client, "deploys")}
    assert "deploy-here" in {h["name"] for h in search_memory(client, "deploys", repo_root=REPO)}
    ops = [
        e["op"] for e in client.get("/v1/journal", params={"op": "memory.recall"}).json()["items"]
    ]
    assert ops == []  # searching is not recalling
    everything = search(client, "coffee", kind="all")
    assert everything and everything[0]["name"] == "unrelated" and everything[0]["kind"] == "block"


def search_memory(client: TestClient, q: str, **params: Any) -> list[dict[str, Any]]:
    r = client.get("/v1/memory/search", params={"q": q, "k": 20, **params})
    assert r.status_code == 200, r.text
    return list(r.json()["items"])


def test_context_query_orders_the_index_by_relevance(client: TestClient, clock: FakeClock) -> None:
    client.post("/v1/memory/blocks", json={"name": "sqlite-tips", "content": "Use WAL mode."})
    for n in range(5):
        clock.advance(minutes=1)
        client.post("/v1/memory/blocks", json={"name": f"note-{n}", "content": f"Note {n}."})
    plain = client.get("/v1/memory/context").json()
    assert plain["order"] == "recency"
    assert plain["content"].index("note-4") < plain["content"].index("sqlite-tips")
    ranked = client.get("/v1/memory/context", params={"query": "sqlite wal"}).json()
    assert ranked["order"] == "relevance"
    assert ranked["content"].index("sqlite-tips") < ranked["content"].index("note-4")
    assert ranked["counts"] == plain["counts"]
    assert client.get("/v1/memory/context", params={"query": '"open'}).status_code == 422


def results(client: TestClient, queries: list[str]) -> list[list[tuple[str, int, str]]]:
    return [[(h["session_id"], h["seq"], h["snippet"]) for h in search(client, q)] for q in queries]


def test_the_index_is_disposable(home: Path, clock: FakeClock) -> None:
    queries = ["tokenizer", "docker release", '"multi-byte"', "kind:title pipeline"]
    with make_client(home, clock) as client:
        seed(client)
        client.post("/v1/memory/blocks", json={"name": "m", "content": "Walrus facts."})
        before = results(client, queries)
        memory_before = search_memory(client, "walrus")
    assert all(before)
    shutil.rmtree(home / "index")
    with make_client(home, clock) as client:
        assert results(client, queries) == before
        assert [h["name"] for h in search_memory(client, "walrus")] == ["m"]
        assert search_memory(client, "walrus")[0]["etag"] == memory_before[0]["etag"]
    # An index of an older schema is rebuilt as well, without anyone asking.
    db = sqlite3.connect(home / "index" / "catalog.sqlite3")
    db.execute("PRAGMA user_version = 1")
    db.close()
    with make_client(home, clock) as client:
        assert results(client, queries) == before


def test_files_changed_while_stopped_are_caught_up(home: Path, clock: FakeClock) -> None:
    with make_client(home, clock) as client:
        ids = seed(client)
        client.post("/v1/memory/blocks", json={"name": "hand", "content": "Original words."})
    # Another program appends to a transcript; a person edits a block by hand.
    path = next((home / "sessions").rglob(f"{ids['b']}.jsonl"))
    line = {
        "type": "message",
        "seq": 4,
        "role": "user",
        "content": "narwhal sighting",
        "ts": "2026-01-02T03:05:00.000Z",
    }
    with path.open("ab") as f:
        f.write(json.dumps(line).encode() + b"\n")
    block = home / "memory" / "hand.md"
    block.write_text(block.read_text().replace("Original words.", "Edited by a person: okapi."))
    with make_client(home, clock) as client:
        assert [(h["session_id"], h["seq"]) for h in search(client, "narwhal")] == [(ids["b"], 4)]
        stats = client.get("/v1/info").json()["catalog"]
        assert (stats["incremental"], stats["full"], stats["memory"]) == (1, 0, 1)
        assert search_memory(client, "okapi")[0]["name"] == "hand"
        assert search_memory(client, "original") == []


def test_deleted_sessions_leave_search_and_restored_ones_return(client: TestClient) -> None:
    ids = seed(client)
    assert client.delete(f"/v1/sessions/{ids['b']}").status_code == 204
    assert ids["b"] not in {h["session_id"] for h in search(client, "docker")}
    assert client.post(f"/v1/sessions/{ids['b']}/restore").status_code == 200
    assert ids["b"] in {h["session_id"] for h in search(client, "docker")}
    client.post("/v1/memory/blocks", json={"name": "gone", "content": "Quokka habits."})
    assert search_memory(client, "quokka")
    assert client.delete("/v1/memory/blocks/gone").status_code == 204
    assert search_memory(client, "quokka") == []


def tau_sessions(client: TestClient, count: int) -> list[tuple[str, str]]:
    """Sessions from real OpenAI chat logs: (session id, its first user message)."""
    records = json.loads((FIXTURES / "openai-chat/tau-bench/gpt-4o-airline.json").read_text())
    out = []
    seen_tasks = set()
    for record in records:
        if record["task_id"] in seen_tasks or len(out) == count:
            continue
        seen_tasks.add(record["task_id"])
        sid = new_session(client, repo_root="/srv/airline")
        events = []
        for message in record["traj"]:
            event = {"type": "message", **{k: v for k, v in message.items() if v is not None}}
            if message["role"] == "assistant" and message.get("content") is None:
                event["content"] = None
            events.append(event)
        r = client.post(f"/v1/sessions/{sid}/events", json=events)
        assert r.status_code == 201, r.text
        first_user = next(m["content"] for m in record["traj"] if m["role"] == "user")
        out.append((sid, first_user))
    return out


def test_known_phrases_find_their_session_first(client: TestClient) -> None:
    sessions = tau_sessions(client, 40)
    for path in sorted((FIXTURES / "claude-code").rglob("*.jsonl")):
        sid = new_session(client, repo_root="/srv/claude")
        texts = []
        for raw in path.read_text().splitlines():
            record = json.loads(raw)
            content = (record.get("message") or {}).get("content")
            if record.get("type") == "user" and isinstance(content, str) and content.strip():
                texts.append(user(content))
        if texts:
            client.post(f"/v1/sessions/{sid}/events", json=texts).raise_for_status()
    firsts = 0
    for sid, phrase in sessions:
        hits = search(client, phrase)  # typed as is: no quotes, no operators
        firsts += hits[0]["session_id"] == sid
    assert firsts >= 0.9 * len(sessions), f"{firsts} of {len(sessions)} found first"


def test_a_quarantined_tail_never_reaches_the_index(home: Path, clock: FakeClock) -> None:
    with make_client(home, clock) as client:
        sid = new_session(client)
        client.post(f"/v1/sessions/{sid}/events", json=user("alpha lemur")).raise_for_status()
        assert [h["seq"] for h in search(client, "lemur")] == [1]
    path = next((home / "sessions").rglob(f"{sid}.jsonl"))
    with path.open("ab") as f:  # a write cut short by a crash: no newline
        f.write(b'{"type":"message","seq":2,"role":"user","content":"gibbon torn')
    with make_client(home, clock) as client:
        client.post(f"/v1/sessions/{sid}/events", json=user("beta lemur")).raise_for_status()
        hits = sorted((h["seq"], h["snippet"]) for h in search(client, "lemur"))
        assert hits == [(1, "alpha lemur"), (2, "beta lemur")]
        assert search(client, "gibbon") == []
    shutil.rmtree(home / "index")
    with make_client(home, clock) as client:
        assert sorted(h["seq"] for h in search(client, "lemur")) == [1, 2]
        assert search(client, "gibbon") == []
