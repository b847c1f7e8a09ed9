"""At start, the journal is caught up with the memory files: whatever a kill cut short
between a change and its journal line, or a person changed while the daemon was
stopped, is journaled once, with the bytes it replaced when they are still beside the
file, and a move cut short keeps the one name the journal gives it.

Each case leaves the files as a stopped daemon finds them (the same files a kill at
that step leaves; ``tests/proof/test_unjournaled_crash.py`` makes them with real kills),
then starts a store on them."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aster_persist.errors import Conflict
from aster_persist.schemas.names import project_slug
from aster_persist.storage.home import Home
from aster_persist.storage.journal import Journal
from aster_persist.storage.memory import CORE, MemoryStore
from aster_persist.storage.memory.catchup import FOUND
from aster_persist.storage.memory.plans import Plans

from ..conftest import FakeClock

Start = Callable[[], MemoryStore]
TEMP = ".aster-tmp-"
PROJECT = "project:" + project_slug("/srv/acme")


@pytest.fixture
def start(tmp_path: Path, clock: FakeClock) -> Iterator[Start]:
    """Starts a store on one home as the daemon does (caught up, then loaded), the one
    started before it stopped."""
    home = Home.open(tmp_path / "home")
    journals: list[Journal] = []

    def started() -> MemoryStore:
        if journals:
            journals[-1].close()
        journal = Journal(home.root / "journal.jsonl", clock=clock, durable=False)
        journal.open()
        journals.append(journal)
        store = MemoryStore(home, journal, clock=clock)
        store.catch_up()
        store.load()
        return store

    yield started
    journals[-1].close()
    home.close()


def found(store: MemoryStore) -> list[dict[str, Any]]:
    """The entries journaled as found at start."""
    entries = store.journal.entries()
    return [e for e in entries if isinstance(e["detail"], dict) and e["detail"].get("by") == FOUND]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write(store: MemoryStore, name: str, body: str, scope: str = "global") -> bytes:
    store.write_block(scope, name, body=body, meta={})
    return store.path(scope, name).read_bytes()


def test_a_block_made_but_not_journaled_is_journaled_once(start: Start) -> None:
    store = start()
    data = write(store, "port", "The API listens on 5433.")
    path = store.path("global", "port")
    made = path.read_bytes().replace(b"5433", b"5434")
    (path.parent / "cache.md").write_bytes(made.replace(b"name: port", b"name: cache"))
    path.write_bytes(made)
    store = start()
    [added, edited] = sorted(found(store), key=lambda e: e["name"])
    assert (added["op"], added["name"], added["actor"]) == ("memory.write", "cache", "watcher")
    assert added["before"] is None and added["after"]["path"] == "memory/cache.md"
    assert added["after"]["sha256"] == sha((path.parent / "cache.md").read_bytes())
    assert (edited["op"], edited["name"]) == ("memory.edit", "port")
    assert edited["after"]["sha256"] == sha(made) and edited["before"]["sha256"] == sha(data)
    assert {b.name for b in store.list_blocks("global")} == {"cache", "port"}
    assert len(start().journal.entries()) == 3  # the next start finds nothing more


def test_an_edit_cut_short_is_journaled_with_the_bytes_it_replaced(start: Start) -> None:
    store = start()
    old = write(store, "port", "The API listens on 5433.")
    path = store.path("global", "port")
    new = old.replace(b"5433", b"5434")
    # what a kill between the swap and its journal line leaves: the new bytes in place,
    # the ones they replaced in the temporary file beside them
    (path.parent / f"{TEMP}port.md.0a1b2c3d4e5f").write_bytes(old)
    path.write_bytes(new)
    store = start()
    [edit] = found(store)
    assert edit["op"] == "memory.edit" and edit["before"]["content"] == old.decode()
    store.revert(edit)
    assert path.read_bytes() == old  # byte for byte


def test_an_edit_made_while_stopped_keeps_the_hash_it_replaced(start: Start) -> None:
    store = start()
    old = write(store, "port", "The API listens on 5433.")
    path = store.path("global", "port")
    new = old + b"Also 5434.\n"
    path.write_bytes(new)
    (path.parent / f"{TEMP}port.md.0a1b2c3d4e5f").write_bytes(b"something else")
    store = start()
    [edit] = found(store)
    assert edit["before"] == {
        "path": "memory/port.md",
        "sha256": sha(old),
        "unkept": edit["before"]["unkept"],
    }
    with pytest.raises(Conflict, match=r"does not hold what memory/port\.md held"):
        store.revert(edit)
    assert path.read_bytes() == new  # refused, nothing changed
    assert store.read_block("global", "port")[0].endswith("Also 5434.\n")


def test_removals_are_journaled_with_what_a_removal_left_beside_them(start: Start) -> None:
    store = start()
    old = write(store, "port", "The API listens on 5433.")
    store.add_note("global", "Use tabs.")
    core = store.folder("global") / CORE
    path = store.path("global", "port")
    os.rename(path, path.parent / f"{TEMP}port.md.gone")  # a forget cut short
    core.unlink()  # by hand
    store = start()
    entries = {e["name"]: e for e in found(store)}
    assert {e["op"] for e in entries.values()} == {"memory.delete"}
    assert entries["port"]["after"] is None and entries["port"]["before"]["content"] == old.decode()
    assert "unkept" in entries[CORE]["before"]
    assert store.list_blocks("global") == []
    store.revert(entries["port"])
    assert path.read_bytes() == old
    store.forget("global", "port")  # what the cut-short removal left is not in the way
    assert not path.exists()


def test_a_move_cut_short_between_link_and_unlink_keeps_the_journals_name(start: Start) -> None:
    store = start()
    live = write(store, "port", "The API listens on 5433.")
    write(store, "gone", "Archived long ago.")
    store.move("global", "gone", archive=True)
    path, archived = store.path("global", "port"), store.path("global", "port", archived=True)
    os.link(path, archived)  # an archive killed after its link
    back, back_archived = store.path("global", "gone"), store.path("global", "gone", archived=True)
    os.link(back_archived, back)  # a restore killed after its link
    before = store.journal.entries()
    store = start()
    assert store.journal.entries() == before  # nothing was changed: nothing to journal
    assert path.read_bytes() == live and not archived.exists()
    assert back_archived.exists() and not back.exists()
    assert [b.name for b in store.list_blocks("global")] == ["port"]
    assert store.block("global", "gone").archived


def test_a_move_made_but_not_journaled_is_journaled_as_the_move(start: Start) -> None:
    store = start()
    live = write(store, "port", "The API listens on 5433.")
    path, archived = store.path("global", "port"), store.path("global", "port", archived=True)
    archived.parent.mkdir()
    os.rename(path, archived)  # an archive killed after its unlink
    store = start()
    [moved] = found(store)
    assert moved["op"] == "memory.archive" and moved["before"]["path"] == "memory/port.md"
    assert moved["after"]["path"] == "memory/.archive/port.md"
    assert store.block("global", "port").archived
    store.revert(moved)
    assert path.read_bytes() == live and not archived.exists()
    assert start().journal.entries()[-1]["op"] == "memory.revert"  # and nothing found


def test_a_project_folder_removed_while_stopped_is_journaled_file_by_file(
    start: Start, tmp_path: Path
) -> None:
    store = start()
    write(store, "one", "First.", PROJECT)
    write(store, "two", "Second.", PROJECT)
    store.add_note(PROJECT, "A note.")
    folder = store.folder(PROJECT)
    os.rename(folder, tmp_path / "moved")
    store = start()
    assert sorted((e["op"], e["name"]) for e in found(store)) == [
        ("memory.delete", CORE),
        ("memory.delete", "one"),
        ("memory.delete", "two"),
    ]
    assert store.list_blocks(PROJECT) == []


def test_a_secret_found_at_start_is_journaled_without_it(start: Start) -> None:
    store = start()
    store.write_block("global", "keys", body="Keys live in the vault.", meta={})
    path = store.path("global", "keys")
    key = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    path.write_text(path.read_text() + f"OPENAI_API_KEY={key}\n")
    store = start()
    [edit] = found(store)
    assert edit["detail"]["secrets"] and key not in str(store.journal.entries())
    assert store.block("global", "keys").secrets


def test_a_step_of_a_plan_left_open_is_undone_with_the_plan(start: Start) -> None:
    store = start()
    old = write(store, "port", "The API listens on 5433.")
    steps = [
        {"do": "write", "name": "port", "body": "The API listens on 5434.", "meta": {}},
        {"do": "create", "name": "style", "body": "Tabs.", "meta": {}},
    ]
    plan = store.journal.record("memory.plan", scope="global", detail={"steps": steps})
    path = store.path("global", "port")
    new = old.replace(b"5433", b"5434")
    (path.parent / f"{TEMP}port.md.0a1b2c3d4e5f").write_bytes(old)
    path.write_bytes(new)  # the first step swapped in, then the kill
    store = start()
    [step] = found(store)
    assert step["detail"]["plan"] == plan["id"] and step["detail"]["step"] == 0
    assert Plans(store).finish() == [plan["id"]]
    assert path.read_bytes() == old  # the plan undone whole


def test_a_link_in_a_files_place_is_left_as_it_is_not_journaled_gone(
    start: Start, tmp_path: Path
) -> None:
    store = start()
    write(store, "port", "The API listens on 5433.")
    write(store, "keys", "Somewhere else.", PROJECT)
    path = store.path("global", "port")
    outside = tmp_path / "outside.md"
    outside.write_text("not memory\n")
    path.unlink()
    path.symlink_to(outside)
    folder = store.folder(PROJECT)
    os.rename(folder, tmp_path / "project")
    folder.symlink_to(tmp_path / "project")  # a project folder made a link
    before = store.journal.entries()
    store = start()
    new = store.journal.entries()[len(before) :]
    assert {e["op"] for e in new} <= {"home.symlink_refused"}  # no removal journaled
    assert found(store) == []
    assert path.is_symlink() and outside.read_text() == "not memory\n"


def test_a_file_a_person_made_while_a_plan_was_open_is_kept(start: Start) -> None:
    store = start()
    write(store, "port", "The API listens on 5433.")
    steps = [
        {"do": "archive", "name": "port"},
        {"do": "create", "name": "style", "body": "Tabs.", "meta": {}},
    ]
    store.journal.record("memory.plan", scope="global", detail={"steps": steps})
    store.journal.record("memory.plan", scope="global", detail="not an object")
    path = store.path("global", "style")
    path.write_text("Spaces, by hand.\n")  # no step of the plan had been made
    store = start()
    [made] = found(store)
    assert made["op"] == "memory.write" and "plan" not in made["detail"]
    Plans(store).finish()
    assert path.read_text() == "Spaces, by hand.\n"  # theirs, kept
