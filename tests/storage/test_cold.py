"""Cold sessions at the store's own layer: the compressed form is a standard zstd file
holding exactly the plain bytes, every reader reads it, a change of form is put in
place only when nothing changed, an append makes it plain again, and a crash that left
both forms is settled with the plain file kept."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aster_persist.errors import StorageFailed
from aster_persist.storage import packed
from aster_persist.storage.home import Home
from aster_persist.storage.transcripts import AppendRequest, TranscriptStore
from aster_persist.storage.transcripts.places import UNREAD

from ..conftest import stored_session

EVENTS = [
    {"type": "message", "role": "user", "content": f"turn {n}: the deploy key rotation"}
    for n in range(40)
]


class Forms:
    """What the store tells of each change of form (the journal, in the daemon)."""

    def __init__(self) -> None:
        self.said: list[tuple[str, str, str, dict[str, Any]]] = []

    def __call__(self, sid: str, op: str, slug: str, detail: dict[str, Any]) -> None:
        self.said.append((sid, op, slug, detail))


def store_in(home_path: Path, forms: Forms, **kwargs: Any) -> TranscriptStore:
    store = TranscriptStore(Home.open(home_path), on_form=forms, **kwargs)
    store.scan()
    return store


def reopened(store: TranscriptStore, forms: Forms) -> TranscriptStore:
    """The same home opened again, as a daemon's next start finds it (scanned)."""
    store.close()
    store.home.close()
    return store_in(store.home.root, forms)


def written_session(store: TranscriptStore) -> tuple[str, Path, bytes]:
    sid = stored_session(store, EVENTS)
    path = store.live_path(sid)
    return sid, path, path.read_bytes()


def files_of(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_packed_session_is_a_zstd_file_every_reader_reads_as_the_plain_one(
    tmp_path: Path,
) -> None:
    forms = Forms()
    told: list[Any] = []
    store = store_in(tmp_path / "home", forms, on_change=lambda info, written=(): told.append(info))
    sid, plain, data = written_session(store)
    before_read = store.read(sid)
    made = store.compress(sid)
    assert store.pack(sid, made, {"by": "a test"}) is True
    target = plain.with_name(plain.name + ".zst")
    assert files_of(plain.parent) == [target.name]  # the plain file and the temporary gone
    assert len(target.read_bytes()) < len(data) / 3
    shown = subprocess.run(["zstdcat", str(target)], capture_output=True, check=True)
    assert shown.stdout == data  # the standard tool reads it back exactly
    assert forms.said == [
        (
            sid,
            "session.compressed",
            plain.parent.name,
            {"bytes": len(data), "compressed_bytes": target.stat().st_size, "by": "a test"},
        )
    ]
    assert store.live_path(sid) == target
    # the index is told of the file the session is now: its content's size, its mtime
    assert (told[-1].file_size, told[-1].file_mtime_ns) == (len(data), target.stat().st_mtime_ns)
    assert store.export_bytes(sid) == data
    parsed, info = store.read(sid)
    assert parsed.lines == before_read[0].lines and info.last_seq == 40
    lines, end = store.read_tail(sid, parsed.starts[10], parsed.starts[12])
    assert [line["seq"] for line in lines] == [10, 11] and end == parsed.starts[12]
    assert store.summarize(sid).file_size == len(data)  # the content's bytes, not the file's
    assert store.content_size(sid) == (len(data), target.stat().st_mtime_ns)
    store.close()
    store.home.close()
    found = TranscriptStore(Home.open(tmp_path / "home")).scan()
    assert [(f.id, f.path, f.size) for f in found] == [(sid, str(target), UNREAD)]  # not opened


def test_a_file_changed_after_it_was_compressed_stays_plain(tmp_path: Path) -> None:
    store = store_in(tmp_path / "home", Forms())
    sid, plain, _data = written_session(store)
    made = store.compress(sid)
    with plain.open("ab") as f:  # another program's append, after the copy was made
        f.write(b'{"type":"message","role":"user","content":"late","seq":41}\n')
    grown = plain.read_bytes()
    assert store.pack(sid, made, {}) is False
    assert files_of(plain.parent) == [plain.name] and plain.read_bytes() == grown

    made = store.compress(sid)
    writer = store.load_writer(sid)
    store.install(sid, writer)  # a writer holds it: not cold
    assert store.pack(sid, made, {}) is False
    assert files_of(plain.parent) == [plain.name]


def test_a_file_written_to_while_it_is_put_in_place_stays_plain(tmp_path: Path) -> None:
    """Another program's write between the copy's link and the plain file's removal (here,
    as the change is journaled) is never lost: the copy goes, and the journal says so."""
    late = b'{"type":"message","role":"user","content":"late","seq":41}\n'
    holder: list[Path] = []

    class Writing(Forms):
        def __call__(self, sid: str, op: str, slug: str, detail: dict[str, Any]) -> None:
            super().__call__(sid, op, slug, detail)
            if op == "session.compressed":
                with holder[0].open("ab") as f:
                    f.write(late)

    forms = Writing()
    store = store_in(tmp_path / "home", forms)
    sid, plain, data = written_session(store)
    holder.append(plain)
    assert store.pack(sid, store.compress(sid), {}) is False
    assert files_of(plain.parent) == [plain.name] and plain.read_bytes() == data + late
    assert [op for _s, op, _slug, _d in forms.said] == [
        "session.compressed",
        "session.decompressed",
    ]
    assert store.live_path(sid) == plain


def test_an_append_makes_a_packed_session_plain_again_byte_for_byte(tmp_path: Path) -> None:
    forms = Forms()
    store = store_in(tmp_path / "home", forms)
    sid, plain, data = written_session(store)
    assert store.pack(sid, store.compress(sid), {})
    store.install(sid, store.load_writer(sid))
    assert files_of(plain.parent) == [plain.name] and plain.read_bytes() == data
    assert forms.said[-1][1] == "session.decompressed"
    assert store.placed[sid] == (len(data), plain.stat().st_mtime_ns)  # the watcher knows it
    result, _needed = store.append(AppendRequest(sid, [EVENTS[0]]))
    assert result.first_seq == 41
    assert plain.read_bytes().startswith(data)


def test_trash_restore_and_purge_keep_a_packed_session_packed(tmp_path: Path) -> None:
    store = store_in(tmp_path / "home", Forms())
    sid, plain, data = written_session(store)
    assert store.pack(sid, store.compress(sid), {})
    where = store.detach(sid)
    store.trash(sid, where)
    trashed = plain.parent / ".trash" / (plain.name + ".zst")
    assert trashed.is_file() and store.trashed_header(sid)["id"] == sid
    again = reopened(store, Forms())  # found in the trash, in its form
    again.restore(sid)
    assert again.export_bytes(sid) == data and again.live_path(sid).name.endswith(".zst")
    again.purge(sid, again.detach(sid))
    assert files_of(plain.parent) == [".trash"] and files_of(plain.parent / ".trash") == []


@pytest.mark.parametrize("which", ["compressed beside it", "plain written beside it"])
def test_both_forms_found_at_start_keep_the_plain_file(tmp_path: Path, which: str) -> None:
    """What a crash between linking the new form and removing the old leaves, either way
    (with a plain file that may have been written since): the plain file is the session."""
    store = store_in(tmp_path / "home", Forms())
    sid, plain, data = written_session(store)
    made = store.compress(sid)
    target = plain.with_name(plain.name + ".zst")
    os.link(made.temp, target)
    os.unlink(made.temp)
    if which == "plain written beside it":
        with plain.open("ab") as f:
            f.write(b'{"type":"message","role":"user","content":"after","seq":41}\n')
    expected = plain.read_bytes()
    forms = Forms()
    store.close()
    store.home.close()
    again = TranscriptStore(Home.open(tmp_path / "home"), on_form=forms)
    found = again.scan()
    assert [(f.id, f.path, f.size) for f in found] == [(sid, str(plain), len(expected))]
    assert again.settle() == [sid]
    assert files_of(plain.parent) == [plain.name] and plain.read_bytes() == expected
    assert [(s, op) for s, op, _slug, _d in forms.said] == [(sid, "session.decompressed")]
    assert again.export_bytes(sid) == expected and len(data) <= len(expected)


def test_a_compressed_copy_that_does_not_read_back_is_never_put_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_in(tmp_path / "home", Forms())
    sid, plain, data = written_session(store)
    real = packed._chunks

    def flipped(fd: int, size: int) -> Iterator[bytes]:  # a bit lost on its way in
        for n, chunk in enumerate(real(fd, size)):
            yield bytes([chunk[0] ^ 1]) + chunk[1:] if n == 0 else chunk

    monkeypatch.setattr(packed, "_chunks", flipped)
    with pytest.raises(StorageFailed, match="did not read back whole"):
        store.compress(sid)
    assert files_of(plain.parent) == [plain.name] and plain.read_bytes() == data


def test_large_contents_are_read_by_range_without_the_cache(tmp_path: Path) -> None:
    """Past the cache's limit a range is streamed from the frame, not decompressed whole."""
    lines = b"".join(b'{"n":%d,"pad":"%s"}\n' % (n, b"x" * (n % 300)) for n in range(70_000))
    assert len(lines) > packed.CACHE_ONE
    plain = tmp_path / "big.jsonl"
    plain.write_bytes(lines)
    made = packed.compress(plain, sync=False)  # a step at a time, read back the same way
    assert made.size == len(lines) and made.packed_size < len(lines) / 5
    os.rename(made.temp, tmp_path / "big.jsonl.zst")
    target = tmp_path / "big.jsonl.zst"
    assert packed.content_size(target) == len(lines)
    for start, end in ((0, 100), (len(lines) - 5000, None), (4_000_000, 4_000_321)):
        assert packed.read_range(target, start, end) == lines[start:end]
