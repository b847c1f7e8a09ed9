"""The command line's own rules, in this process: how a project and a session id are
read, what a mistake exits with, what a home held by another process answers, and how
times and long texts are shown. No daemon is asked."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import typer

from aster_persist.cli import common
from aster_persist.storage.home import Home


def test_a_session_id_is_checked_before_the_daemon_is_asked() -> None:
    good = "01JABCDEFGHJKMNPQRSTVWXYZ0"
    assert common.session_id(good) == good
    for bad in ("", "01jabcdefghjkmnpqrstvwxyz0", "01JABCDEFGHJKMNPQRSTVWXYZ", "../../etc"):
        with pytest.raises(typer.BadParameter, match="is not a session id"):
            common.session_id(bad)


def test_a_project_is_the_top_of_its_work_tree(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert common.project(str(repo / "src" / "deep")) == str(repo.resolve())
    assert common.project(None) is None


def test_a_project_named_twice_must_be_the_same_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert common.one_project("/srv/a", None) == "/srv/a"
    assert common.one_project(None, "/srv/a") == "/srv/a"
    assert common.one_project("/srv/a", "/srv/a") == "/srv/a"
    with pytest.raises(typer.Exit) as raised:
        common.one_project("/srv/a", "/srv/b")
    assert raised.value.exit_code == common.EXIT_USAGE
    assert "name the project once" in capsys.readouterr().err


def test_a_home_another_process_holds_exits_3_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    held = Home.open(tmp_path / "home")
    try:
        with pytest.raises(typer.Exit) as raised:
            common.open_home(tmp_path / "home", why=" (doctor works on a home no daemon uses)")
        assert raised.value.exit_code == common.EXIT_UNAVAILABLE
        err = capsys.readouterr().err
        assert err.startswith("aster-persist: ") and "doctor works on a home" in err
    finally:
        held.close()
    opened = common.open_home(tmp_path / "home")  # free again: opened, and locked
    opened.close()


def test_bad_settings_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASTER_DURABILITY", "sometimes")
    with pytest.raises(typer.Exit) as raised:
        common.load_settings()
    assert raised.value.exit_code == common.EXIT_USAGE


def test_times_read_as_people_say_them() -> None:
    now = datetime.now(UTC)
    stamp = lambda delta: (now - delta).isoformat().replace("+00:00", "Z")  # noqa: E731
    assert common.when(stamp(timedelta(seconds=5))) == "just now"
    assert common.when(stamp(timedelta(minutes=3, seconds=5))) == "3 min ago"
    assert common.when(stamp(timedelta(hours=5, minutes=1))) == "5 h ago"
    assert common.when("not a time") == "not a time"
    assert common.when("2020-02-11T10:00:00") == "2020-02-11T10:00:00"  # no zone: as it is
    assert common.when("2020-02-11T10:00:00Z").endswith("2020")


def test_long_text_is_one_line_cut_with_an_ellipsis() -> None:
    assert common.short("a\n  b\tc") == "a b c"
    cut = common.short("x" * 100, width=10)
    assert cut == "x" * 9 + "…" and len(cut) == 10
    assert common.short(None) == ""
