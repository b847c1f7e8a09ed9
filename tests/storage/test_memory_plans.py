"""Plans on a plain memory store (real files, a real journal): a step that fails
reverts every step made before it, byte for byte; a plan the journal holds open is
undone by ``finish``; a secret or a taken name refuses the plan before any change."""

from __future__ import annotations

from typing import Any

import pytest

from aster_persist.errors import AsterError, InsufficientStorage
from aster_persist.storage.memory import MemoryStore
from aster_persist.storage.memory.plans import Plans

TOKEN = "ghp_" + "a" * 36


@pytest.fixture(autouse=True)
def three_blocks(store: MemoryStore) -> None:
    for name, body in (("alpha", "Use tabs.\n"), ("beta", "Tabs only.\n"), ("gamma", "Old.\n")):
        store.write_block("global", name, body=body, meta={})


def files(store: MemoryStore) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(store.root.rglob("*.md"))}


def steps(store: MemoryStore) -> list[dict[str, Any]]:
    return [
        {"do": "archive", "name": "beta", "detail": {"reason": "merged"}},
        {
            "do": "write",
            "name": "alpha",
            "body": "Use tabs, never spaces.\n",
            "meta": {"supersedes": ["beta"]},
            "etag": store.block("global", "alpha").etag,
        },
        {"do": "archive", "name": "gamma", "detail": {"reason": "stale"}},
        {"do": "create", "name": "style", "body": "Tabs; 100 columns.\n", "meta": {}},
    ]


@pytest.mark.parametrize("failing", [1, 2, 3])
def test_a_step_that_fails_reverts_the_steps_before_it(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, failing: int
) -> None:
    """The nth change fails as a full disk would: the steps before it are put back."""
    before = files(store)
    plan = steps(store)
    calls = {"n": 0}
    real_move, real_write = store.move, store.write_block

    def counted(real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("detail", {}).get("plan"):
                calls["n"] += 1
                if calls["n"] == failing + 1:
                    raise InsufficientStorage("no space left on the device")
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(store, "move", counted(real_move))
    monkeypatch.setattr(store, "write_block", counted(real_write))
    with pytest.raises(InsufficientStorage):
        Plans(store).apply("global", plan, actor="consolidator", detail={})
    assert files(store) == before
    ops = [e["op"] for e in store.journal.entries()]
    assert ops[-1] == "memory.plan_done" and ops.count("memory.revert") == failing
    assert store.journal.entries()[-1]["detail"]["undone"] is True


def test_an_open_plan_is_undone_by_finish(store: MemoryStore) -> None:
    before = files(store)
    plans = Plans(store)
    plans.apply("global", steps(store)[:2], actor="consolidator", detail={})
    assert files(store) != before
    # as a crash would leave it: the plan's steps made, its end never written
    entries = store.journal.entries()
    plan = next(e for e in entries if e["op"] == "memory.plan")
    store.journal.open_plans[plan["id"]] = plan
    assert plans.finish() == [plan["id"]]
    assert files(store) == before
    assert store.journal.open_plans == {}


def test_a_hand_edit_after_the_crash_is_kept_by_the_undo(store: MemoryStore) -> None:
    plans = Plans(store)
    plans.apply("global", steps(store)[:2], actor="consolidator", detail={})
    plan = next(e for e in store.journal.entries() if e["op"] == "memory.plan")
    store.journal.open_plans[plan["id"]] = plan
    edited = store.path("global", "alpha")
    edited.write_text(edited.read_text() + "A line added by hand.\n")
    store.reconcile([edited])
    plans.finish()
    assert "A line added by hand." in edited.read_text()  # kept
    assert store.block("global", "beta").archived is False  # the archive undone


@pytest.mark.parametrize(
    "bad",
    [
        {"do": "create", "name": "alpha", "body": "x\n", "meta": {}},
        {"do": "create", "name": "new", "body": f"token {TOKEN}\n", "meta": {}},
        {"do": "archive", "name": "ghost"},
        {"do": "write", "name": "gamma", "body": "y\n", "meta": {}, "etag": '"stale"'},
        {"do": "archive", "name": "beta"},  # beta twice
    ],
    ids=["name-taken", "secret", "no-such-block", "stale-etag", "twice"],
)
def test_a_plan_a_step_would_refuse_changes_nothing(
    store: MemoryStore, bad: dict[str, Any]
) -> None:
    before = files(store)
    journaled = len(store.journal.entries())
    with pytest.raises(AsterError) as caught:
        Plans(store).apply("global", [*steps(store)[:1], bad], actor="consolidator", detail={})
    assert caught.value.__class__.__name__ in (
        "NameTaken",
        "SecretDetected",
        "BlockNotFound",
        "PreconditionFailed",
        "Invalid",
    )
    assert files(store) == before
    assert len(store.journal.entries()) == journaled  # not even the plan was journaled
