"""Following, in process: nothing written while the watch is being set up is missed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aster_persist.live.follow import Following

from ..conftest import CLAUDE_SMALL, make_client, wait_until

FIXTURE = CLAUDE_SMALL


def test_a_file_written_before_the_watch_is_set_is_taken_in(
    home: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    source = folder / FIXTURE.name
    first_look = Following.take_in
    looks: list[int] = []

    async def take_in(self: Following, paths: Any) -> int:
        paths = list(paths)
        done = await first_look(self, paths)
        looks.append(len(paths))
        if len(looks) == 1:  # the folder was looked at; its watch is not set yet
            source.write_bytes(FIXTURE.read_bytes())
        return done

    monkeypatch.setattr(Following, "take_in", take_in)
    with make_client(home, follow=[str(folder)]) as client:
        made = wait_until(lambda: client.get("/v1/sessions").json()["items"], timeout=10)
        assert [s["source_tool"] for s in made] == ["claude-code"]
        assert looks[0] == 0  # the first look found nothing: the file came after it
