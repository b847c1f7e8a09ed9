"""Files imported side by side (as ``sessions import`` sends a tree, a few at a time):
resumed copies and the session they resume, sent together, still store the shared
events once."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import orjson

from ..api.test_import_safety import resumed
from ..conftest import FIXTURES, Daemon

ORIGINAL = FIXTURES / "claude-code" / "spotter" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"


def test_copies_and_their_original_sent_together_store_the_shared_events_once(
    tmp_path: Path,
) -> None:
    daemon = Daemon(tmp_path / "home").start()
    try:
        for n in range(3):
            original = _own(ORIGINAL.read_bytes(), n)
            records = [orjson.loads(line) for line in original.splitlines()]
            files = {"original": original} | {
                f"copy {k}": resumed(records, f"5e55a0e0-0000-4000-8000-0000000{n}{k:04d}")
                for k in range(3)
            }
            # a project each round: no round shares another's
            answers = _sent_together(daemon.url, files, f"/srv/together-{n}")
            ids = {name: answer["sessions"][0]["id"] for name, answer in answers.items()}
            assert [a["sessions"][0]["status"] for a in answers.values()] == ["imported"] * 4
            bases = {
                name: httpx.get(f"{daemon.url}/v1/sessions/{sid}").json()["header"].get("base")
                for name, sid in ids.items()
            }
            # whichever was written first is whole; each other one refers to one before it
            assert [name for name, base in bases.items() if base is None] in (
                [[name] for name in files]
            ), bases
            first = [
                httpx.get(f"{daemon.url}/v1/sessions/{ids[name]}/messages").json()["messages"]
                for name in files
            ]
            assert all(shown[: len(first[0])] == first[0] for shown in first[1:])
    finally:
        daemon.stop()


def _sent_together(url: str, files: dict[str, bytes], root: str) -> dict[str, dict]:
    """Each file's import answer, the files sent at the same moment."""
    answers: dict[str, dict] = {}
    gate = threading.Barrier(len(files))

    def send(name: str, data: bytes) -> None:
        gate.wait()
        r = httpx.post(
            f"{url}/v1/sessions/import", content=data, params={"repo_root": root}, timeout=60
        )
        answers[name] = r.json()

    sending = [threading.Thread(target=send, args=item) for item in files.items()]
    for thread in sending:
        thread.start()
    for thread in sending:
        thread.join(60)
    return answers


def _own(data: bytes, n: int) -> bytes:
    """The file as another session's: its session id and its records' ids its own."""
    for line in data.splitlines():
        session = orjson.loads(line).get("sessionId")
        if session:
            data = data.replace(session.encode(), f"{session[:-4]}{n:04d}".encode())
            break
    for key in (b'"uuid":"', b'"parentUuid":"'):
        data = data.replace(key, key + f"r{n}-".encode())
    return data
