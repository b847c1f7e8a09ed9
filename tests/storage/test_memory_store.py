"""The memory store as a plain object, no HTTP: real files in tmp_path, a real journal,
the fake clock. Duplicates merge, a patch keeps every other byte, archive and restore
move the file and nothing else, pruning never touches a protected block, the context
orders blocks as it says, and a revert puts bytes back exactly."""

from __future__ import annotations

from typing import Any

import pytest

from aster_persist.errors import NameTaken, PreconditionFailed, SecretDetected
from aster_persist.schemas import frontmatter
from aster_persist.schemas.memory import MAX_INDEX_ENTRIES
from aster_persist.schemas.names import project_slug
from aster_persist.storage.memory import ARCHIVE, CORE, MemoryStore

from ..conftest import FakeClock

PROJECT = "project:" + project_slug("/srv/acme")


def ops(store: MemoryStore) -> list[str]:
    return [str(entry["op"]) for entry in store.journal.entries()]


def write(store: MemoryStore, name: str, body: str, scope: str = "global", **meta: Any) -> Any:
    block, merged = store.write_block(scope, name, body=body, meta=meta)
    assert not merged
    return block


def test_a_block_is_written_indexed_and_journaled(store: MemoryStore) -> None:
    block = write(store, "port", "The API listens on 5433.", tags=["infra"], importance=0.7)
    path = store.path("global", "port")
    doc = frontmatter.parse(path.read_text())
    assert doc.body == "The API listens on 5433.\n"
    assert doc.meta["tags"] == ["infra"] and doc.meta["schema"] == "aster.memory.v1"
    assert block.description == "The API listens on 5433." and block.importance == 0.7
    assert store.block("global", "port") == block
    assert store.read_block("global", "port")[1].etag == block.etag
    (entry,) = store.journal.entries()
    assert entry["op"] == "memory.write" and entry["before"] is None
    assert entry["after"]["path"] == "memory/port.md"


def test_the_same_body_under_another_name_merges_into_the_first(
    store: MemoryStore, clock: FakeClock
) -> None:
    first = write(store, "port", "The API listens on 5433.", tags=["infra"], importance=0.5)
    clock.advance(seconds=5)
    merged, duplicate = store.write_block(
        "global",
        "api-port",
        body="the api LISTENS on 5433",  # the same text, folded
        meta={"tags": ["api"], "source_session": "s1", "source_seq": "3-4"},
    )
    assert duplicate and merged.name == "port"
    assert merged.tags == ["infra", "api"] and merged.importance == 0.6
    assert merged.updated_at > first.updated_at
    assert not store.path("global", "api-port").exists()
    assert frontmatter.parse(store.path("global", "port").read_text()).meta["sources"] == ["s1:3-4"]
    assert store.holds("global", "The API listens on 5433.", {"source_session": "s1"}) is False
    assert store.holds(
        "global", "The API listens on 5433.", {"source_session": "s1", "source_seq": "3-4"}
    )
    assert ops(store) == ["memory.write", "memory.merge"]


def test_a_different_body_under_a_taken_name_needs_replace(store: MemoryStore) -> None:
    write(store, "port", "The API listens on 5433.")
    with pytest.raises(NameTaken):
        store.write_block("global", "port", body="The API listens on 8080.", meta={})
    block, merged = store.write_block(
        "global", "port", body="The API listens on 8080.", meta={}, replace=True
    )
    assert not merged and block.description == "The API listens on 8080."
    assert frontmatter.parse(store.read_block("global", "port")[0]).body == (
        "The API listens on 8080.\n"
    )
    assert ops(store) == ["memory.write", "memory.edit"]


def test_a_patch_changes_its_keys_and_keeps_every_other_byte(store: MemoryStore) -> None:
    path = store.path("global", "style")
    by_hand = (
        "---\n"
        "# written by hand\n"
        "description:   Code style  \n"
        "importance: 0.2\n"
        "custom: {keep: me}\n"
        "updated_at: '2026-01-01T00:00:00.000Z'\n"
        "---\n"
        "Tabs,  not spaces.\n\n\ntrailing   \n"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(by_hand)
    store.reconcile([path])  # found by hand: journaled, indexed
    block = store.patch_block("global", "style", {"importance": 0.9, "updated_at": "later"})
    assert path.read_text() == by_hand.replace("importance: 0.2", "importance: 0.9").replace(
        "updated_at: '2026-01-01T00:00:00.000Z'", "updated_at: later"
    )
    assert block.importance == 0.9 and block.description == "Code style"
    entry = store.journal.entries()[-1]
    assert entry["op"] == "memory.edit" and entry["detail"] == {
        "keys": ["importance", "updated_at"]
    }
    assert entry["before"]["content"] == by_hand


def test_a_stale_if_match_is_412_with_the_current_etag(store: MemoryStore) -> None:
    block = write(store, "port", "The API listens on 5433.")
    store.patch_block("global", "port", {"pinned": True})
    with pytest.raises(PreconditionFailed) as caught:
        store.patch_block("global", "port", {"pinned": False}, if_match=block.etag)
    assert caught.value.current == store.block("global", "port").etag
    assert store.block("global", "port").pinned


def test_a_hand_edit_not_yet_journaled_is_kept_under_a_patch(store: MemoryStore) -> None:
    write(store, "port", "The API listens on 5433.")
    path = store.path("global", "port")
    path.write_text(path.read_text() + "Also on 5434.\n")  # the watcher has not seen it
    store.patch_block("global", "port", {"importance": 0.8})
    assert path.read_text().endswith("The API listens on 5433.\nAlso on 5434.\n")
    edits = store.journal.entries()[-2:]
    assert [(e["op"], e["actor"]) for e in edits] == [
        ("memory.edit", "watcher"),
        ("memory.edit", "api"),
    ]


def test_archive_and_restore_move_the_file_and_nothing_else(store: MemoryStore) -> None:
    write(store, "port", "The API listens on 5433.")
    live = store.path("global", "port")
    data = live.read_bytes()
    archived = store.move("global", "port", archive=True)
    assert archived.archived and not live.exists()
    assert store.path("global", "port", archived=True).read_bytes() == data
    assert store.path("global", "port", archived=True).parent.name == ARCHIVE
    assert store.list_blocks("global") == [] and store.visible(None) == []
    assert [b.name for b in store.list_blocks("global", include_archived=True)] == ["port"]
    with pytest.raises(NameTaken):  # an archived name is not taken over by a new block
        store.write_block("global", "port", body="Something else.", meta={})
    restored = store.move("global", "port", archive=False)
    assert not restored.archived and live.read_bytes() == data
    assert not store.path("global", "port", archived=True).exists()
    assert ops(store) == ["memory.write", "memory.archive", "memory.restore"]


def test_prune_archives_stale_blocks_and_never_a_protected_one(
    store: MemoryStore, clock: FakeClock
) -> None:
    write(store, "stale", "An old note nobody reads.", importance=0.2)
    write(store, "pinned", "Pinned, however old.", importance=0.2, pinned=True)
    write(store, "recalled", "Read often.", importance=0.2)
    write(store, "important", "Old but important.", importance=0.9)
    write(store, "other", "Another old note.", importance=0.2)
    write(store, "disputed", "Says the opposite.", importance=0.2, conflicts_with=["other"])
    for _ in range(3):
        store.recall("global", "recalled")
    clock.advance(days=100)
    write(store, "fresh", "Written today.", importance=0.2)

    preview = store.prune("global", max_age_days=90, max_importance=0.5, dry_run=True)
    assert sorted(a["name"] for a in preview["archived"]) == ["stale"]
    assert {p["name"]: p["reason"] for p in preview["protected"]} == {
        "pinned": "pinned",
        "recalled": "recalled 3 times",
        "disputed": "related: conflicts with other",
        "other": "related: conflicts with disputed",
    }
    assert not store.block("global", "stale").archived  # a dry run changes nothing

    done = store.prune("global", max_age_days=90, max_importance=0.5, dry_run=False)
    assert done["archived"] == preview["archived"]
    assert store.block("global", "stale").archived
    live = {b.name for b in store.list_blocks("global")}
    assert live == {"pinned", "recalled", "important", "other", "disputed", "fresh"}


def test_supersedes_archives_the_blocks_it_replaces(store: MemoryStore) -> None:
    write(store, "port-a", "The API listens on 5433.")
    write(store, "port-b", "The API port is configurable.")
    merged = write(
        store,
        "ports",
        "The API listens on 5433 unless configured.",
        supersedes=["port-a", "port-b"],
    )
    assert merged.supersedes == ["port-a", "port-b"]
    assert [b.name for b in store.list_blocks("global")] == ["ports"]
    assert ops(store)[-2:] == ["memory.archive", "memory.archive"]


def test_the_context_is_core_first_then_blocks_most_recent_or_most_relevant_first(
    store: MemoryStore, clock: FakeClock
) -> None:
    store.write_core("global", "# Core\nAlways run the tests.\n")
    for name in ("alpha", "beta", "gamma"):
        write(store, name, f"About {name}.")
        clock.advance(seconds=1)
    write(store, "beta", "Beta, for this project only.", scope=PROJECT)
    assert [b.name for b in store.visible(PROJECT)] == ["beta", "gamma", "alpha"]
    assert store.visible(PROJECT)[0].scope == PROJECT  # the project's shadows the global one

    context = store.render_context(PROJECT)
    content = context["content"]
    assert content.startswith("# Core\nAlways run the tests.\n\n### Recallable memory\n")
    listed = [line.split(":")[0] for line in content.splitlines() if line.startswith("- ")]
    assert listed == ["- beta", "- gamma", "- alpha"]
    assert "Beta, for this project only." in content
    assert context["order"] == "recency" and context["counts"]["blocks"] == 3

    relevant = store.render_context(PROJECT, relevant=["alpha", "nope", "gamma"])
    listed = [line.split(":")[0] for line in relevant["content"].splitlines() if line[:2] == "- "]
    assert listed == ["- alpha", "- gamma", "- beta"] and relevant["order"] == "relevance"


def test_the_context_lists_at_most_its_limit_and_says_how_many_more(store: MemoryStore) -> None:
    for n in range(MAX_INDEX_ENTRIES + 2):
        write(store, f"b-{n:03}", f"Note number {n}.")
    context = store.render_context(None)
    assert context["counts"] == {
        "blocks": MAX_INDEX_ENTRIES + 2,
        "shown": MAX_INDEX_ENTRIES,
        "hidden": 2,
        "global_core_bytes": 0,
        "project_core_bytes": 0,
    }
    assert "(2 more blocks are not listed here" in context["content"]


def test_a_revert_puts_the_bytes_back_and_can_itself_be_reverted(store: MemoryStore) -> None:
    write(store, "port", "The API listens on 5433.")
    path = store.path("global", "port")
    original = path.read_bytes()
    store.patch_block("global", "port", {"importance": 0.9})
    patched = path.read_bytes()
    edit = store.journal.entries()[-1]

    reverted = store.revert(edit)
    assert path.read_bytes() == original
    assert reverted["op"] == "memory.revert" and reverted["detail"] == {"reverted": edit["id"]}
    assert store.block("global", "port").importance == 0.5  # the index follows

    store.revert(reverted)
    assert path.read_bytes() == patched
    assert store.block("global", "port").importance == 0.9


def test_a_forgotten_block_comes_back_with_a_revert(store: MemoryStore) -> None:
    write(store, "port", "The API listens on 5433.")
    path = store.path("global", "port")
    data = path.read_bytes()
    store.forget("global", "port")
    assert not path.exists() and store.block("global", "port") is None
    store.revert(store.journal.entries()[-1])
    assert path.read_bytes() == data and store.block("global", "port") is not None


def test_a_note_already_in_core_memory_is_not_added_twice(store: MemoryStore) -> None:
    first = store.add_note("global", "Use  pnpm, not npm.")
    again = store.add_note("global", "use pnpm not npm")
    assert not first["duplicate"] and again["duplicate"]
    assert store.read_core("global")[0] == "- Use pnpm, not npm.\n"
    assert (store.folder("global") / CORE).read_text() == "- Use pnpm, not npm.\n"
    assert ops(store) == ["memory.write"]


def test_a_secret_is_refused_before_anything_is_written(store: MemoryStore) -> None:
    token = "ghp_" + "AIxNKu8iS2G8NPRVdD53X83RZJzzzzgEOzdm"
    with pytest.raises(SecretDetected):
        store.write_block("global", "ci", body=f"The CI token is {token}.", meta={})
    with pytest.raises(SecretDetected):
        store.patch_block("global", "ci", {"description": token})
    assert not store.path("global", "ci").exists()
    assert store.count() == 0 and store.journal.entries() == []


def test_recall_counts_are_read_back_from_the_journal_at_the_next_load(
    store: MemoryStore, clock: FakeClock
) -> None:
    write(store, "port", "The API listens on 5433.")
    write(store, "db", "The database is SQLite.")
    for _ in range(3):
        store.recall("global", "port")
        clock.advance(seconds=60)
    store.recall("global", "db")
    # an entry that names the op in its text is not a recall
    write(store, "ops", "A note that names memory.recall in its body.")
    last = store.journal.of_op("memory.recall")[-2]["ts"]
    store.load()
    assert store.usage(store.block("global", "port")) == {
        "recall_count": 3,
        "last_recalled_at": last,
    }
    assert store.usage(store.block("global", "db"))["recall_count"] == 1
    assert store.usage(store.block("global", "ops"))["recall_count"] == 0
