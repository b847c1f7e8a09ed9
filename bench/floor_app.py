"""The floor of a durable append (one event or a batch): a bare ASGI app (no framework, no catalog, no
index, no feed) that does only what every append must. It validates the body with the
daemon's own TypeAdapter in one pass, numbers the events and stamps their time, writes
them with one ``os.write`` to the session's file, and acknowledges once a group-commit
fdatasync of that file covers them. The daemon can at best match it."""

from __future__ import annotations

import asyncio
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson

from aster_persist.schemas.clock import format_ts, utc_now
from aster_persist.schemas.validation import validate_events_json

FOLDER = os.environ.get("FLOOR_DIR") or tempfile.mkdtemp(prefix="aster-floor-")
_NL = orjson.OPT_APPEND_NEWLINE
files: dict[str, int] = {}
last_seq: dict[str, int] = {}
waiting: list[tuple[int, asyncio.Future[None]]] = []
passes = 0
kick_scheduled = False
syncer = ThreadPoolExecutor(2)


def _sync(fds: list[int]) -> None:
    for fd in fds:
        os.fdatasync(fd)


def _kick() -> None:
    """Sync every file written since the last pass (at most two passes at once)."""
    global waiting, passes
    if passes >= 2 or not waiting:
        return
    batch, waiting = waiting, []
    passes += 1
    done = asyncio.get_running_loop().run_in_executor(syncer, _sync, list({fd for fd, _ in batch}))

    def settle(_: object) -> None:
        global passes
        passes -= 1
        for _fd, future in batch:
            future.set_result(None)
        _kick()

    done.add_done_callback(settle)


def _scheduled_kick() -> None:
    global kick_scheduled
    kick_scheduled = False
    _kick()


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    global kick_scheduled
    if scope["type"] != "http":
        return
    if scope["method"] == "GET":  # readiness
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})
        return
    chunks, more = [], True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    raw = b"".join(chunks)
    events = validate_events_json(raw if raw[:1] == b"[" else b"[" + raw + b"]")
    path = scope["path"]
    fd = files.get(path)
    if fd is None:
        name = os.path.join(FOLDER, f"{len(files)}.jsonl")
        fd = files[path] = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        last_seq[path] = 0
    first = seq = last_seq[path] + 1
    now = format_ts(utc_now())
    lines = []
    for event in events:
        line = {"type": event["type"], "seq": seq, **event}
        line.setdefault("ts", now)
        lines.append(orjson.dumps(line, option=_NL))
        seq += 1
    os.write(fd, b"".join(lines))
    last_seq[path] = seq - 1
    future = asyncio.get_running_loop().create_future()
    waiting.append((fd, future))
    if not kick_scheduled:
        kick_scheduled = True
        asyncio.get_running_loop().call_soon(_scheduled_kick)
    await future
    body = b'{"first_seq":%d,"last_seq":%d,"count":%d}' % (first, seq - 1, seq - first)
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 201, "headers": headers})
    await send({"type": "http.response.body", "body": body})
