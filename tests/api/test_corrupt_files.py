"""Truncated and bit-flipped real transcripts never make a read fail or hang."""

from __future__ import annotations

from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..conftest import FakeClock, assistant, call, make_client, new_session, tool, user
from .test_sessions import session_file

READS = ("", "/events", "/messages", "/messages?view=context", "/export", "/events?type=message")


def build(home: Path) -> tuple[str, bytes]:
    """Lines: header, 1 single, 2-4 a batch, 5 single, 6-8 a batch."""
    with make_client(home, FakeClock()) as client:
        sid = new_session(client, title="corruption target")
        post = lambda body: client.post(f"/v1/sessions/{sid}/events", json=body)  # noqa: E731
        post(user("read main.rs"))
        post([assistant(None, [call("c1")]), tool("c1", "fn main() {}\n" * 5), assistant("done ✓")])
        post({"type": "summary", "content": "s", "through_seq": 2})
        post(
            [
                {"type": "title", "title": "t"},
                user([{"type": "text", "text": "more"}]),
                assistant("ok"),
            ]
        )
    return sid, session_file(home, sid).read_bytes()


def test_truncations_and_flips(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sid, original = build(home)
    path = session_file(home, sid)
    with make_client(home, FakeClock()) as client:

        def read_all() -> dict:
            got = {}
            for suffix in READS:
                r = client.get(f"/v1/sessions/{sid}{suffix}")
                assert r.status_code == 200, (suffix, r.status_code, r.text)
                got[suffix] = r
            return got

        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.integers(min_value=1, max_value=len(original)))
        def truncated(cut: int) -> None:
            path.write_bytes(original[:cut])
            got = read_all()
            whole = original[:cut].count(b"\n")
            detail = got[""].json()
            # a batch cut short is left out whole: batches are all or nothing
            visible = {0: 0, 1: 0, 2: 1, 3: 1, 4: 1, 5: 4, 6: 5, 7: 5, 8: 5, 9: 8}[whole]
            assert detail["events"] == visible
            assert detail["state"] == ("ok" if whole else "damaged")
            assert got["/export"].content == original[:cut]

        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
        @given(
            st.integers(min_value=0, max_value=len(original) - 1),
            st.integers(min_value=0, max_value=255),
        )
        def flipped(position: int, value: int) -> None:
            data = bytearray(original)
            data[position] = value
            path.write_bytes(bytes(data))
            got = read_all()
            detail = got[""].json()
            line_no = original[:position].count(b"\n") + 1
            total = original.count(b"\n")
            try:
                line = orjson.loads(bytes(data).split(b"\n")[line_no - 1])
                broken = not isinstance(line, dict)
            except orjson.JSONDecodeError:
                broken = True
            # A newline flipped away joins its line to the next: the joined line is in
            # the middle only if the next one was (a broken last line is a torn tail).
            last = line_no + (original[position] == ord("\n"))
            if broken and line_no > 1 and last < total and value != ord("\n"):
                assert detail["state"] == "damaged" and line_no in detail["bad_lines"]

        truncated()
        flipped()
