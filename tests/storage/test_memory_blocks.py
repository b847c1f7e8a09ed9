"""The block index on its own: no files, no journal, only what it is told."""

from __future__ import annotations

import threading
import time

from aster_persist.storage.memory.blocks import BlockIndex, block_of, body_hash


def test_a_block_put_is_found_by_name_and_by_body_and_dropped_from_both() -> None:
    index = BlockIndex()
    block = index.put(block_of("global", "port", False, b"the port is 8080\n"))
    assert index.get("global", "port") == block and len(index) == 1
    assert index.with_body("global", body_hash("The  port is 8080.")) == "port"
    assert index.drop("global", "port") == block
    assert index.get("global", "port") is None and len(index) == 0
    assert index.with_body("global", block.norm) is None
    assert index.drop("global", "port") is None


def test_an_archived_block_is_never_the_live_block_of_its_body() -> None:
    index = BlockIndex()
    index.put(block_of("global", "old", True, b"same words\n"))
    assert index.with_body("global", body_hash("same words")) is None
    index.put(block_of("global", "new", False, b"same words\n"))
    index.put(block_of("global", "newer", False, b"same words\n"))  # the first keeps it
    assert index.with_body("global", body_hash("same words")) == "new"
    index.put(block_of("global", "new", False, b"other words\n"))
    assert index.with_body("global", body_hash("same words")) is None


def test_the_visible_ordering_is_cached_until_a_change() -> None:
    index = BlockIndex()
    index.put(block_of("global", "a", False, b"---\nupdated_at: '2026-01-01'\n---\none\n"))
    index.put(block_of("project:p", "a", False, b"---\nupdated_at: '2026-01-02'\n---\ntwo\n"))
    index.put(block_of("global", "b", False, b"---\nupdated_at: '2026-01-03'\n---\nthree\n"))
    first = index.visible("project:p")
    assert [(b.scope, b.name) for b in first] == [("global", "b"), ("project:p", "a")]
    assert index.visible("project:p") is first
    index.drop("global", "b")
    assert [(b.scope, b.name) for b in index.visible("project:p")] == [("project:p", "a")]
    assert [b.scope for b in index.listing("project:p", with_global=True)] == ["project:p"]


def test_recalls_are_counted_with_the_last_time() -> None:
    index = BlockIndex()
    block = index.put(block_of("global", "port", False, b"8080\n"))
    assert index.usage(block) == {"recall_count": 0, "last_recalled_at": None}
    index.recalled("global", "port", "2026-01-01T00:00:00Z")
    index.recalled("global", "port", "2026-01-02T00:00:00Z")
    assert index.usage(block) == {"recall_count": 2, "last_recalled_at": "2026-01-02T00:00:00Z"}


def test_readers_never_see_the_blocks_change_size_under_them() -> None:
    index = BlockIndex()
    for i in range(20_000):
        index.put(block_of("global", f"pre-{i}", False, f"body {i}\n".encode()))
    stop = time.monotonic() + 1.5
    errors: list[BaseException] = []

    def writer() -> None:
        n = 0
        while time.monotonic() < stop:
            index.put(block_of("global", f"w-{n}", False, f"text {n}\n".encode()))
            index.drop("global", f"w-{n}")
            n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    reads = 0
    while time.monotonic() < stop:
        for read in (
            lambda: index.listing("global"),
            lambda: index.visible(None),
            index.snapshot,
            index.scopes,
        ):
            try:
                read()
            except RuntimeError as exc:
                errors.append(exc)
            reads += 1
    thread.join()
    assert reads > 10
    assert errors == []
