"""Learning against a real daemon and a scripted model on loopback: extraction from
completed turns, validation of what the model says, titles, on-demand extraction,
consolidation, a queue that survives kill -9, and appends that never wait for a model."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..conftest import Daemon, assistant, call, tool, user, wait_until
from ..model_server import Reply, ScriptedModel

ROOT = "/srv/learning"
GOOD = {
    "type": "semantic",
    "title": "Indent with tabs",
    "content": "The user prefers tabs over spaces in every file.",
    "importance": 0.8,
    "confidence": 0.9,
    "scope": "project",
    "tags": ["style"],
    "reason": "Every future edit should follow it.",
}


def start(home: Path, model: ScriptedModel, **env: str) -> Daemon:
    settings = {
        "ASTER_LLM_BASE_URL": model.url,
        "ASTER_LLM_MODEL": "scripted-1",
        "ASTER_LLM_API_KEY": "test-key",
        "ASTER_LLM_TIMEOUT_SECONDS": "3",
        "ASTER_LLM_RETRIES": "1",
        **env,
    }
    return Daemon(home, env=settings).start()


@pytest.fixture
def learning(home: Path, model: ScriptedModel) -> Iterator[Daemon]:
    daemon = start(home, model)
    yield daemon
    daemon.kill()


def status(daemon: Daemon) -> dict[str, Any]:
    return dict(httpx.get(f"{daemon.url}/v1/extraction").json())


def settled(daemon: Daemon, done: int) -> dict[str, Any]:
    """The queue's state once ``done`` jobs have finished or failed and none is left."""

    def check() -> dict[str, Any] | None:
        s = status(daemon)
        finished = s["done"] + s["failed"] >= done and not s["queued"] and not s["in_progress"]
        return s if finished else None

    return dict(wait_until(check))


def pending(home: Path) -> list[dict[str, Any]]:
    """The jobs the queue's log holds that are neither done nor failed."""
    jobs: dict[str, dict[str, Any]] = {}
    for line in (home / "queue" / "jobs.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry["op"] == "put":
            jobs[entry["id"]] = entry["job"]
        elif entry["op"] in ("done", "failed"):
            jobs.pop(entry["id"], None)
    return list(jobs.values())


def session(daemon: Daemon, **fields: Any) -> str:
    r = httpx.post(f"{daemon.url}/v1/sessions", json={"repo_root": ROOT, **fields})
    return str(r.json()["id"])


def append(daemon: Daemon, sid: str, events: Any) -> dict[str, Any]:
    r = httpx.post(f"{daemon.url}/v1/sessions/{sid}/events", json=events, timeout=30)
    assert r.status_code == 201, r.text
    return dict(r.json())


def blocks(daemon: Daemon, **params: Any) -> dict[str, dict[str, Any]]:
    r = httpx.get(f"{daemon.url}/v1/memory/blocks", params={"repo_root": ROOT, **params})
    return {b["name"]: b for b in r.json()["items"]}


def journal(daemon: Daemon, op: str) -> list[dict[str, Any]]:
    return list(httpx.get(f"{daemon.url}/v1/journal", params={"op": op}).json()["items"])


def test_without_a_model_learning_is_off(daemon: Daemon) -> None:
    sid = session(daemon)
    append(daemon, sid, [user("hello"), assistant("Hi! How can I help?")])
    s = status(daemon)
    assert s["enabled"] is False and s["queued"] == 0 and s["model"] is None
    assert pending(daemon.home) == []
    # one condition, one answer, wherever it is asked
    for r in (
        httpx.post(f"{daemon.url}/v1/sessions/{sid}/extract", json={}),
        httpx.post(f"{daemon.url}/v1/memory/consolidate"),
    ):
        assert r.status_code == 409 and r.json()["code"] == "learning_off", r.text
        assert "ASTER_LLM_BASE_URL" in r.json()["detail"]


def test_a_completed_turn_becomes_memory_with_provenance(
    learning: Daemon, model: ScriptedModel
) -> None:
    model.then("memory_items", {"items": [GOOD]})
    sid = session(learning, title="Style talk")
    append(learning, sid, user("Please always indent with tabs, I hate spaces."))
    append(learning, sid, assistant(calls=[call("c1", "read_file", '{"path": "setup.cfg"}')]))
    append(learning, sid, tool("c1", "[flake8]\nindent-size = 4"))
    assert status(learning)["queued"] == 0  # tool calls do not complete a turn
    append(learning, sid, assistant("Noted: tabs from now on."))
    s = settled(learning, 1)
    assert (s["done"], s["accepted"], s["rejected"]) == (1, 1, 0)
    assert s["model_latency_ms"]["last"] is not None

    block = httpx.get(
        f"{learning.url}/v1/memory/blocks/indent-with-tabs",
        params={"repo_root": ROOT, "track": "false"},
    ).json()
    assert block["body"] == "The user prefers tabs over spaces in every file.\n"
    assert block["importance"] == 0.8 and block["tags"] == ["style"]
    text = block["content"]
    for line in (f"source_session: {sid}", "workspace: /srv/learning", "schema: aster.memory.v1"):
        assert line in text
    assert "source_seq:\n- 1\n- 4" in text or "source_seq: [1, 4]" in text
    assert journal(learning, "memory.write")[-1]["actor"] == "extractor"

    request = model.of("memory_items")[0]
    assert request["model"] == "scripted-1" and request["_auth"] == "Bearer test-key"
    assert request["response_format"]["type"] == "json_schema"
    prompt = model.prompt(request)
    assert "indent with tabs" in prompt and "read_file" in prompt and "indent-size" in prompt
    assert "Noted: tabs from now on." in prompt


def test_related_memories_are_shown_and_relations_checked(
    learning: Daemon, model: ScriptedModel
) -> None:
    for name, content in (
        ("test-command", "Run the tests with pytest -x."),
        ("database-port", "Postgres listens on 5432."),
    ):
        r = httpx.post(
            f"{learning.url}/v1/memory/blocks",
            params={"repo_root": ROOT},
            json={"name": name, "content": content, "description": content},
        )
        assert r.status_code == 201
    newer = {**GOOD, "title": "Test command", "content": "Run the tests with make test.",
             "supersedes": ["test-command"]}  # fmt: skip
    invented = {**GOOD, "title": "Port", "content": "Postgres is on 5433.",
                "conflicts_with": ["made-up-name"]}  # fmt: skip
    conflict = {**GOOD, "title": "Staging port", "content": "Postgres listens on 5433 in staging.",
                "conflicts_with": ["database-port"]}  # fmt: skip
    model.then("memory_items", {"items": [newer, invented, conflict]})
    sid = session(learning, title="t")
    said = "The tests run with make test now, not pytest. And postgres listens on port 5433."
    append(learning, sid, [user(said), assistant("OK.")])
    s = settled(learning, 1)
    assert (s["accepted"], s["rejected"]) == (2, 1)
    prompt = model.prompt(model.of("memory_items")[0])
    assert "test-command" in prompt and "database-port" in prompt  # found by the index
    both = blocks(learning)
    assert both["staging-port"]["conflicts_with"] == ["database-port"]
    assert both["database-port"]["conflicts_with"] == ["staging-port"]  # both show it
    kept = blocks(learning)  # superseding its namesake: an edit of it, revertible
    assert "test-command-2" not in kept
    edited = httpx.get(
        f"{learning.url}/v1/memory/blocks/test-command",
        params={"repo_root": ROOT, "track": "false"},
    ).json()
    assert edited["body"] == "Run the tests with make test.\n"
    assert "test-command" in [e["name"] for e in journal(learning, "memory.edit")]
    rejected = journal(learning, "memory.rejected")
    assert len(rejected) == 1 and "made-up-name" in rejected[0]["detail"]["reason"]
    append(learning, sid, [user("Which port does postgres use in staging?"), assistant("5433.")])
    settled(learning, 2)
    again = model.prompt(model.of("memory_items")[1])  # what it is shown now: the relations
    assert "database-port: Postgres listens on 5432. (conflicts with staging-port)" in again


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ({"items": [{**GOOD, "importance": 1.7}]}, "importance must be a number from 0 to 1"),
        ({"items": [{**GOOD, "reason": " "}]}, "reason is missing"),
        ({"items": [{**GOOD, "type": "episodic"}]}, "type must be semantic or procedural"),
        ({"items": [{**GOOD, "supersedes": ["nothing-shown"]}]}, "not shown: nothing-shown"),
        ({"items": [{**GOOD, "content": "key AKIA" + "IOSFODNN7EXAMPLQ here"}]}, "secret"),
        ({"items": [GOOD] * 7}, "more than 5 items"),
    ],
)
def test_what_fails_validation_is_journaled_as_rejected(
    learning: Daemon, model: ScriptedModel, answer: dict[str, Any], why: str
) -> None:
    model.then("memory_items", answer)
    sid = session(learning, title="t")
    append(learning, sid, [user("remember this"), assistant("Done.")])
    s = settled(learning, 1)
    rejected = journal(learning, "memory.rejected")
    assert rejected and any(why in r["detail"]["reason"] for r in rejected), rejected
    assert s["rejected"] == len(rejected)
    assert "IOSFODNN7EXAMPLQ" not in (learning.home / "journal.jsonl").read_text()
    if len(answer["items"]) == 7:
        assert s["accepted"] == 5


def test_empty_malformed_slow_and_failing_models(learning: Daemon, model: ScriptedModel) -> None:
    model.then(
        "memory_items",
        {"items": []},  # nothing worth keeping
        Reply("Sure! Here you go: {not json"),  # malformed: the job fails, reported
        Reply(status=500),  # then succeeds on the retry
        Reply({"items": [GOOD]}),
        Reply({"items": []}, delay=5),  # slower than the timeout, twice: unreachable,
        Reply({"items": []}, delay=5),  # so the job stays queued and is tried again later
        Reply(
            "```json\n"
            + json.dumps(
                {"items": [{**GOOD, "title": "Fenced", "content": "Answers came fenced."}]}
            )
            + "\n```"
        ),
    )
    sid = session(learning, title="t")
    for n in range(5):
        append(learning, sid, [user(f"question {n}"), assistant(f"answer {n}")])
    s = settled(
        learning,
        5,
    )
    assert (s["done"], s["failed"], s["accepted"]) == (4, 1, 2), s
    errors = " ".join(e["error"] for e in s["last_errors"])
    assert "not a JSON object" in errors and "trying again" in errors
    [refused] = journal(learning, "memory.rejected")  # the malformed reply, said why
    assert refused["detail"]["reason"].startswith("the model's reply was refused: ")
    assert "not a JSON object" in refused["detail"]["reason"] and refused["session"] == sid
    assert {"indent-with-tabs", "fenced"} <= set(blocks(learning))
    assert pending(learning.home) == []
    failed = (learning.home / "queue" / "failed.jsonl").read_text().splitlines()
    assert len(failed) == 1 and json.loads(failed[0])["job"]["kind"] == "extract"


def test_a_model_that_refuses_json_schema_is_asked_plainly(
    learning: Daemon, model: ScriptedModel
) -> None:
    model.then(
        "memory_items",
        Reply(status=400, body='{"error": {"message": "response_format json_schema unsupported"}}'),
    )
    model.responders["memory_items"] = lambda request: Reply({"items": [GOOD]})
    sid = session(learning, title="t")
    append(learning, sid, [user("tabs please"), assistant("Sure.")])
    assert settled(learning, 1)["accepted"] == 1
    formats = [r.get("response_format", {}).get("type") for r in model.requests]
    assert formats[:2] == ["json_schema", "json_object"]


def test_appends_never_wait_for_the_model(home: Path, model: ScriptedModel) -> None:
    gate = threading.Event()
    model.responders["memory_items"] = lambda request: Reply({"items": []}, hold=gate)
    # the held call must not time out (and be asked again) while the turns are appended,
    # however loaded the machine: the order asked is what is checked
    learning = start(home, model, ASTER_LLM_TIMEOUT_SECONDS="60")
    try:
        _appends_never_wait(learning, model, gate)
    finally:
        learning.kill()


def _appends_never_wait(learning: Daemon, model: ScriptedModel, gate: threading.Event) -> None:
    sid = session(learning, title="t")
    append(learning, sid, [user("first"), assistant("one")])
    assert model.arrived.wait(10)  # the model is now answering, and will not until told
    try:
        for n in range(20):
            append(learning, sid, [user(f"q{n}"), assistant(f"a{n}")])
        s = status(learning)
        assert s["in_progress"] and s["queued"] >= 20  # all queued, none lost
    finally:
        gate.set()
    s = settled(learning, 21)
    assert s["done"] == 21
    turns = [model.prompt(r) for r in model.of("memory_items")]
    assert [t.split("The turn:\n")[1].split("\n")[0] for t in turns][:3] == [
        "User: first",
        "User: q0",
        "User: q1",
    ]  # first in, first out


def test_a_turn_taken_back_before_its_job_runs_is_not_learned(
    learning: Daemon, model: ScriptedModel
) -> None:
    gate = threading.Event()
    model.responders["memory_items"] = lambda request: Reply({"items": []}, hold=gate)
    sid = session(learning, title="t")
    append(learning, sid, [user("first"), assistant("one")])
    assert model.arrived.wait(10)  # the model holds the first job; the next ones wait
    try:
        append(learning, sid, [user("use the staging key"), assistant("zebra answer")])  # 3-4
        append(learning, sid, [user("last"), assistant("three")])  # 5-6
        append(learning, sid, {"type": "retraction", "target_seq": 4})
        append(learning, sid, {"type": "retraction", "target_seq": 5})
    finally:
        gate.set()
    settled(learning, 3)
    turns = [model.prompt(r).split("The turn:\n")[1] for r in model.of("memory_items")]
    assert len(turns) == 2 and not any("zebra answer" in t for t in turns)
    assert "User: last" not in turns[1] and "Assistant: three" in turns[1]


def test_untitled_sessions_get_a_title_once(learning: Daemon, model: ScriptedModel) -> None:
    model.then("session_title", {"title": "Debugging the flaky websocket test"})
    sid = session(learning)
    append(learning, sid, [user("why does the websocket test flake?"), assistant("A race.")])
    append(learning, sid, [user("and now?"), assistant("Fixed.")])
    named = session(learning, title="Mine")
    append(learning, named, [user("hi"), assistant("hello")])
    settled(learning, 4)
    got = httpx.get(f"{learning.url}/v1/sessions/{sid}").json()
    assert (got["title"], got["title_source"]) == ("Debugging the flaky websocket test", "event")
    events = httpx.get(f"{learning.url}/v1/sessions/{sid}/events").json()["events"]
    titles = [e for e in events if e["type"] == "title"]
    assert len(titles) == 1 and titles[0]["source"] == "model"
    assert len(model.of("session_title")) == 1  # never for the session named by its user
    assert httpx.get(f"{learning.url}/v1/sessions/{named}").json()["title"] == "Mine"


def test_extraction_on_demand_for_a_range(learning: Daemon, model: ScriptedModel) -> None:
    sid = session(learning, title="t")
    append(learning, sid, [user("alpha"), user("beta"), user("gamma"), user("delta")])
    model.then("memory_items", {"items": [GOOD]})
    r = httpx.post(f"{learning.url}/v1/sessions/{sid}/extract", json={"from_seq": 2, "to_seq": 3})
    assert r.status_code == 202 and r.json()["job"]
    s = settled(learning, 1)
    assert s["accepted"] == 1
    prompt = model.prompt(model.of("memory_items")[0])
    assert (
        "beta" in prompt and "gamma" in prompt and "alpha" not in prompt and "delta" not in prompt
    )
    bad = httpx.post(f"{learning.url}/v1/sessions/{sid}/extract", json={"to_seq": 99})
    assert bad.status_code == 422 and "last seq" in bad.json()["detail"]


def test_consolidation_proposes_then_applies_revertibly(
    learning: Daemon, model: ScriptedModel
) -> None:
    for name, content in (
        ("tabs", "Use tabs."),
        ("tab-indent", "Indent with tabs, not spaces."),
        ("old-ci", "CI runs on Travis."),
    ):
        httpx.post(
            f"{learning.url}/v1/memory/blocks",
            params={"repo_root": ROOT},
            json={"name": name, "content": content},
        )
    proposal = {
        "merges": [
            {
                "into": "tab-indent",
                "from": ["tabs"],
                "content": "Indent with tabs.",
                "reason": "same",
            }
        ],
        "archives": [
            {"name": "old-ci", "reason": "CI moved"},
            {"name": "ghost", "reason": "?"},
        ],
        "new": [{**GOOD, "title": "Style rules", "content": "Tabs; 100 columns."}],
    }
    model.then("consolidation", proposal)
    before = blocks(learning)
    dry = httpx.post(f"{learning.url}/v1/memory/consolidate", params={"repo_root": ROOT}).json()
    assert dry["applied"] is False and [m["into"] for m in dry["merges"]] == ["tab-indent"]
    assert [a["name"] for a in dry["archives"]] == ["old-ci"]
    assert any("unknown block" in r["reason"] for r in dry["rejected"])
    assert blocks(learning) == before  # a dry run changes nothing
    assert "old-ci" in model.prompt(model.of("consolidation")[0])
    [asked] = journal(learning, "memory.consolidation")  # the model's reasons, kept
    assert asked["detail"]["applied"] is False
    assert asked["detail"]["archives"] == [{"name": "old-ci", "reason": "CI moved"}]
    assert asked["detail"]["merges"] == [{"into": "tab-indent", "from": ["tabs"], "reason": "same"}]

    done = httpx.post(
        f"{learning.url}/v1/memory/consolidate",
        params={"repo_root": ROOT, "apply": "true"},
        json={"proposal": dry},
    ).json()
    assert done["applied"] is True
    after = blocks(learning)
    assert set(after) == {"tab-indent", "style-rules"}
    assert len(model.of("consolidation")) == 1  # the dry run's proposal, not a new one
    archive = next(e for e in journal(learning, "memory.archive") if e["name"] == "old-ci")
    assert archive["actor"] == "consolidator"
    [plan] = journal(learning, "memory.plan")  # the pass, journaled before its first step
    assert archive["detail"] == {
        "reason": "CI moved",
        "trigger": "consolidation asked for",
        "plan": plan["id"],
        "step": 2,  # after the merge's archive of tabs and its rewrite of tab-indent
    }
    [closed] = journal(learning, "memory.plan_done")
    assert closed["detail"] == {"plan": plan["id"], "done": 4}
    assert [s["do"] for s in plan["detail"]["steps"]] == ["archive", "write", "archive", "create"]
    merged = next(e for e in journal(learning, "memory.archive") if e["name"] == "tabs")
    assert merged["detail"]["reason"] == "merged into tab-indent: same"
    r = httpx.post(f"{learning.url}/v1/journal/{archive['id']}/revert")
    assert r.status_code == 200 and "old-ci" in blocks(learning)


def test_kill_9_with_jobs_queued_and_in_flight(home: Path, model: ScriptedModel) -> None:
    gate = threading.Event()
    model.responders["memory_items"] = lambda request: Reply({"items": []}, hold=gate)
    daemon = start(home, model)
    sid = session(daemon, title="t")
    for n in range(4):
        append(daemon, sid, [user(f"fact number {n} is important"), assistant(f"noted {n}")])
    assert model.arrived.wait(10)
    daemon.kill()  # one job in flight, three queued
    gate.set()
    queued = pending(home)
    assert len(queued) == 4

    # and one job whose answer was saved just before the crash
    result = {
        "accepted": [{**GOOD, "title": "Fact three", "content": "Fact three holds."}],
        "rejected": [],
        "first_seq": 7,
        "last_seq": 8,
        "repo_root": ROOT,
    }
    saved = {"op": "result", "id": queued[-1]["id"], "result": result}
    with (home / "queue" / "jobs.jsonl").open("a") as log:
        log.write(json.dumps(saved) + "\n")

    def answer(request: dict[str, Any]) -> Reply:
        n = model.prompt(request).split("fact number ")[1][0]
        return Reply({"items": [{**GOOD, "title": f"Fact {n}", "content": f"Fact {n} holds."}]})

    model.responders["memory_items"] = answer
    daemon = Daemon(home, port=daemon.port, env=daemon.env).start()
    try:
        s = settled(daemon, 4)
        assert s["done"] == 4 and s["failed"] == 0
        names = set(blocks(daemon))
        assert names == {"fact-0", "fact-1", "fact-2", "fact-three"}  # each once, no copies
        writes = [e["name"] for e in journal(daemon, "memory.write")]
        assert sorted(writes) == sorted(set(writes))  # no block written twice
        # the interrupted job is asked again, the saved answer is not
        asked = [model.prompt(r).split("fact number ")[1][0] for r in model.of("memory_items")]
        assert sorted(set(asked[1:])) == ["0", "1", "2"]
    finally:
        daemon.kill()

    # a crash after the answer was applied, before the job was marked done: again
    with (home / "queue" / "jobs.jsonl").open("a") as log:
        log.write(json.dumps({"op": "put", "id": queued[-1]["id"], "job": queued[-1]}) + "\n")
        log.write(json.dumps(saved) + "\n")
    daemon = Daemon(home, port=daemon.port, env=daemon.env).start()
    try:
        assert settled(daemon, 1)["done"] == 1
        assert set(blocks(daemon)) == {"fact-0", "fact-1", "fact-2", "fact-three"}
        writes = [e["name"] for e in journal(daemon, "memory.write")]
        assert writes.count("fact-three") == 1
    finally:
        daemon.kill()


def test_shutdown_waits_a_bounded_time_then_leaves_jobs_queued(
    home: Path, model: ScriptedModel
) -> None:
    gate = threading.Event()
    model.responders["memory_items"] = lambda request: Reply({"items": []}, hold=gate)
    daemon = start(home, model, ASTER_LLM_DRAIN_SECONDS="0.5", ASTER_LLM_TIMEOUT_SECONDS="60")
    sid = session(daemon, title="t")
    for n in range(3):
        append(daemon, sid, [user(f"q{n}"), assistant(f"a{n}")])
    assert model.arrived.wait(10)
    started = time.monotonic()
    assert daemon.stop(timeout=20) == 0
    assert time.monotonic() - started < 15  # bounded: it did not wait for the model
    gate.set()
    assert len(pending(home)) == 3  # all kept for the next start
    model.responders["memory_items"] = lambda request: Reply({"items": []})
    daemon = Daemon(home, env=daemon.env).start()
    try:
        assert settled(daemon, 3)["done"] == 3
    finally:
        daemon.kill()


def test_imported_history_queues_nothing(learning: Daemon, model: ScriptedModel) -> None:
    data = (Path(__file__).parents[1] / "fixtures" / "codex").rglob("*.jsonl")
    for path in data:
        r = httpx.post(f"{learning.url}/v1/sessions/import", content=path.read_bytes(), timeout=60)
        assert r.status_code == 201, r.text
    time.sleep(0.3)
    s = status(learning)
    assert (s["queued"], s["done"], s["failed"]) == (0, 0, 0) and model.requests == []


def test_every_turn_an_append_completes_is_extracted_whole(
    learning: Daemon, model: ScriptedModel
) -> None:
    sid = session(learning, title="t")
    append(learning, sid, [user("first question"), assistant("first answer")])
    # One append completing two turns, then a turn whose user message came in the same
    # sync as the end of the turn before it.
    append(
        learning,
        sid,
        [
            user("second question"),
            assistant("second answer"),
            user("third question"),
            assistant("third answer"),
        ],
    )
    with httpx.Client(base_url=learning.url, timeout=30) as http:
        done = [
            http.post(f"/v1/sessions/{sid}/events", json=body)
            for body in (
                [user("fourth question"), assistant("fourth answer")],
                [user("fifth question")],
            )
        ]
        assert all(r.status_code == 201 for r in done)
        http.post(f"/v1/sessions/{sid}/events", json=assistant("fifth answer")).raise_for_status()
    settled(learning, 5)
    turns = [model.prompt(r).split("The turn:")[-1] for r in model.of("memory_items")]
    for n, word in enumerate(("first", "second", "third", "fourth", "fifth")):
        assert f"{word} question" in turns[n] and f"{word} answer" in turns[n], turns[n]
        assert (
            sum(f"{w} " in turns[n] for w in ("first", "second", "third", "fourth", "fifth")) == 1
        )


def test_a_rejection_never_quotes_a_secret(learning: Daemon, model: ScriptedModel) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    model.then(
        "memory_items",
        {"items": [{**GOOD, "type": token}, {**GOOD, "title": "other", "supersedes": [token]}]},
    )
    sid = session(learning, title="t")
    append(learning, sid, [user("question"), assistant("answer")])
    settled(learning, 1)
    rejected = journal(learning, "memory.rejected")
    assert len(rejected) == 2
    assert token not in json.dumps(rejected)
    assert token not in (learning.home / "journal.jsonl").read_text()
    assert all("redacted" in e["detail"]["reason"] for e in rejected)


def test_an_unreachable_model_keeps_the_job_until_it_answers(
    learning: Daemon, model: ScriptedModel
) -> None:
    model.then(
        "memory_items",
        Reply(status=429, body='{"error": {"message": "slow down"}}'),
        Reply(status=503),
        Reply(status=503),
        Reply(status=503),
        Reply({"items": [GOOD]}),
    )
    sid = session(learning, title="t")
    append(learning, sid, [user("question"), assistant("answer")])
    s = settled(learning, 1)
    assert (s["done"], s["failed"], s["accepted"]) == (1, 0, 1), s
    assert "trying again" in " ".join(e["error"] for e in s["last_errors"])
    assert "indent-with-tabs" in blocks(learning)


def test_a_reply_that_trickles_in_is_cut_at_the_timeout(home: Path, model: ScriptedModel) -> None:
    import asyncio

    from aster_persist.learning.model import ModelClient, ModelError

    async def ask() -> str:
        client = ModelClient(model.url, "scripted-1", timeout=1, retries=0)
        try:
            await client.json([{"role": "user", "content": "x"}], schema={}, name="memory_items")
        except ModelError as exc:
            assert exc.transient
            return str(exc)
        finally:
            await client.close()
        return "answered"

    model.then("memory_items", Reply(trickle=0.3))
    started = time.monotonic()
    assert "no whole reply within 1 s" in asyncio.run(ask())
    assert time.monotonic() - started < 10


def test_a_malformed_consolidation_proposal_is_refused_not_a_500(learning: Daemon) -> None:
    for proposal in (
        {"into": ["a"]},
        {"merges": 1},
        {"merges": [{"into": {}, "from": [[]]}]},
        {"archives": [{"name": {}}]},
        {"new": [{"title": {}}]},
    ):
        r = httpx.post(
            f"{learning.url}/v1/memory/consolidate",
            params={"repo_root": ROOT, "apply": "true"},
            json={"proposal": proposal},
        )
        assert r.status_code in (200, 422), (proposal, r.text)
        if r.status_code == 200:
            assert r.json()["done"] == [] and r.json()["merges"] == []


def test_consolidation_merges_whole_blocks_once_and_keeps_their_history(
    learning: Daemon,
) -> None:
    def put(name: str, content: str, **meta: Any) -> None:
        r = httpx.post(
            f"{learning.url}/v1/memory/blocks",
            params={"repo_root": ROOT},
            json={"name": name, "content": content, **meta},
        )
        assert r.status_code == 201, r.text

    put("tabs-a", "Indent with tabs.")
    put("tabs-b", "Tabs, never spaces.")
    put("older", "Indentation: spaces.")
    put("long", "x " * 400)
    put("spare", "A spare note.")
    r = httpx.patch(
        f"{learning.url}/v1/memory/blocks/tabs-a",
        params={"repo_root": ROOT},
        json={"description": "tabs"},
    )
    r.raise_for_status()
    httpx.post(  # tabs-a already carries a history
        f"{learning.url}/v1/memory/consolidate",
        params={"repo_root": ROOT, "apply": "true"},
        json={
            "proposal": {
                "merges": [
                    {
                        "into": "tabs-a",
                        "from": ["older"],
                        "content": "Indent with tabs.",
                        "reason": "r",
                    }
                ]
            }
        },
    ).raise_for_status()
    proposal = {
        "merges": [
            # the merged text is tabs-b's own: it must still land in tabs-a
            {"into": "tabs-a", "from": ["tabs-b"], "content": "Tabs, never spaces.", "reason": "r"},
            {"into": "tabs-b", "from": ["tabs-a"], "content": "again", "reason": "r"},
            {"into": "long", "from": ["spare"], "content": "short", "reason": "r"},
        ]
    }
    r = httpx.post(
        f"{learning.url}/v1/memory/consolidate",
        params={"repo_root": ROOT, "apply": "true"},
        json={"proposal": proposal},
    )
    assert r.status_code == 200, r.text
    result = r.json()
    assert result["done"] == [{"merged": ["tabs-b"], "into": "tabs-a"}]
    reasons = " ".join(x["reason"] for x in result["rejected"])
    assert "earlier merge" in reasons and "longer than the model was shown" in reasons
    live = blocks(learning)
    assert set(live) == {"tabs-a", "long", "spare"}
    text = httpx.get(
        f"{learning.url}/v1/memory/blocks/tabs-a", params={"repo_root": ROOT, "track": "false"}
    ).json()["content"]
    assert text.rstrip().endswith("Tabs, never spaces.")
    assert live["tabs-a"]["supersedes"] == ["older", "tabs-b"]
    assert (
        len(live["long"]["description"]) > 0
        and "x x x"
        in httpx.get(
            f"{learning.url}/v1/memory/blocks/long", params={"repo_root": ROOT, "track": "false"}
        ).json()["content"]
    )


def test_a_429_waits_as_long_as_retry_after_asks() -> None:
    import asyncio

    from aster_persist.learning.model import ModelClient

    answers = [
        httpx.Response(429, headers={"Retry-After": "0.6"}, json={"error": "slow down"}),
        httpx.Response(200, json={"choices": [{"message": {"content": '{"items": []}'}}]}),
    ]
    asked: list[float] = []

    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(time.monotonic())
        return answers.pop(0)

    async def ask() -> dict[str, Any]:
        client = ModelClient(
            "http://model.invalid/v1",
            "m",
            retries=1,
            backoff=0.01,
            transport=httpx.MockTransport(handle),
        )
        try:
            return await client.json([], schema={}, name="memory_items")
        finally:
            await client.close()

    assert asyncio.run(ask()) == {"items": []}
    assert asked[1] - asked[0] >= 0.6  # not the 0.01 s backoff


def test_a_session_boundary_consolidates_its_project(home: Path, model: ScriptedModel) -> None:
    """Idle for the configured time, or a new session in the project: one pass, applied,
    its trigger and the model's reasons journaled; a failing model is journaled too and
    holds nothing up; at most one pass a project in the interval."""
    daemon = start(
        home,
        model,
        ASTER_CONSOLIDATE_IDLE_MINUTES="0.02",  # 1.2 s
        ASTER_CONSOLIDATE_MIN_INTERVAL_MINUTES="0.05",  # 3 s
    )
    try:
        for name, content in (("old-ci", "CI runs on Travis."), ("ci", "CI runs on GitHub.")):
            httpx.post(
                f"{daemon.url}/v1/memory/blocks",
                params={"repo_root": ROOT},
                json={"name": name, "content": content},
            )
        model.then(
            "consolidation",
            {"merges": [], "archives": [{"name": "old-ci", "reason": "CI moved"}], "new": []},
            Reply(status=500),  # and the next pass: failing, tried once and retried once
            Reply(status=500),
        )
        sid = session(daemon, title="t")
        append(daemon, sid, [user("set up CI"), assistant("Done.")])
        passes = wait_until(lambda: journal(daemon, "memory.consolidation") or None)
        assert passes[0]["detail"]["trigger"] == "no activity in the project for 0.02 min"
        assert passes[0]["detail"]["applied"] is True
        assert "old-ci" not in blocks(daemon)  # applied
        archive = next(e for e in journal(daemon, "memory.archive") if e["name"] == "old-ci")
        assert archive["detail"]["reason"] == "CI moved"
        assert archive["detail"]["trigger"] == passes[0]["detail"]["trigger"]

        httpx.post(  # (a pass asks nothing of fewer than two blocks: "ci" is alone now)
            f"{daemon.url}/v1/memory/blocks",
            params={"repo_root": ROOT},
            json={"name": "docs", "content": "Docs live in docs/."},
        )
        time.sleep(3)  # past the interval: the next boundary makes a pass again
        append(daemon, sid, [user("and docs?"), assistant("Later.")])
        session(daemon, title="next")  # a new session in the project: the last one ended
        failed = wait_until(lambda: journal(daemon, "memory.consolidation")[1:] or None)
        assert failed[0]["detail"]["trigger"] == "a new session started in the project"
        assert "failed" in failed[0]["detail"] and failed[0]["detail"]["applied"] is False
        assert len(model.of("consolidation")) == 3  # one pass each (the second tried twice)
        append(daemon, sid, [user("still there?"), assistant("Yes.")])  # nothing held up
        assert settled(daemon, 4)["failed"] == 0
    finally:
        daemon.kill()
