"""The walk of a request: which of the daemon's source files and functions one request
enters, on every thread, traced with a profile hook on the app in this process.

Three requests are traced once the daemon is ready and its start has settled, each
after the same request once untraced (so first-use imports and caches are not counted): an append of two events, a remember of a note,
and an import of a 29-line Claude Code transcript. For each it prints how many files
and functions of ``aster_persist`` ran, how often control came back into a file it had
left (re-entries), and the functions called most. ``python bench/walk.py`` prints the
trace; ``make bench`` adds one row per request.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: import bench.*

PACKAGE = "aster_persist"
TRANSCRIPT = (
    Path(__file__).resolve().parents[1]
    / "tests/fixtures/claude-code/claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
)


@dataclass
class Trace:
    """What the profile hook saw while ``active``: calls by (file, function), and entries."""

    active: bool = False
    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    answered: bool = False  # the response is in: what runs now follows from the request
    answering: set[str] = field(default_factory=set)  # files entered until the response
    after: set[str] = field(default_factory=set)  # files entered after it (index, feed...)
    entries: Counter[str] = field(default_factory=Counter)
    scanned: Counter[str] = field(default_factory=Counter)  # lines scanned for secrets
    last: dict[int, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self.active or event != "call":
            return
        path = frame.f_code.co_filename
        at = path.find(f"/{PACKAGE}/")
        if at < 0:
            return
        name = path[at + len(PACKAGE) + 2 :]
        thread = threading.get_ident()
        behind = self.answered or threading.current_thread().name.startswith("aster-index")
        with self.lock:
            self.calls[(name, frame.f_code.co_qualname)] += 1
            (self.after if behind else self.answering).add(name)
            if name == "secrets/scan.py" and frame.f_code.co_name == "scan_line":
                self.scanned[frame.f_locals["line"]] += 1  # a scan, not a cached answer
            if self.last.get(thread) != name:
                self.entries[name] += 1
                self.last[thread] = name

    def clear(self) -> None:
        self.calls.clear()
        self.answered = False
        self.answering.clear()
        self.after.clear()
        self.entries.clear()
        self.scanned.clear()
        self.last.clear()


@dataclass
class Walk:
    request: str
    files: int
    answering: int  # files entered until the response (the catalog's threads aside)
    after: int  # files entered only by what follows it: indexing, the feed, the watcher
    scans: int  # lines scanned for secrets (a line's scan remembered by content: once)
    rescans: int  # of those, scans of a line already scanned in the same request
    functions: int
    reentries: int
    most_entered: list[tuple[str, int]]
    most_called: list[tuple[str, int]]


def _walk(trace: Trace, request: str) -> Walk:
    files = {name for name, _ in trace.calls}
    return Walk(
        request=request,
        files=len(files),
        answering=len(trace.answering),
        after=len(trace.after - trace.answering),
        scans=sum(trace.scanned.values()),
        rescans=sum(trace.scanned.values()) - len(trace.scanned),
        functions=len(trace.calls),
        reentries=sum(trace.entries.values()) - len(files),
        most_entered=trace.entries.most_common(6),
        most_called=[(f"{f}:{fn}", n) for (f, fn), n in trace.calls.most_common(6)],
    )


async def _walks(home: Path, trace: Trace) -> list[Walk]:
    from aster_persist.app import create_app
    from aster_persist.settings import Settings

    app = create_app(Settings(home=home))
    transport = httpx.ASGITransport(app=app)
    walks: list[Walk] = []
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:4627") as http,
    ):
        # what starting does (the catalog catching up, the first look at followed
        # folders) is not any request's walk: let it finish first
        while (await http.get("/readyz")).status_code != 200:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        r = await http.post("/v1/sessions", json={"repo_root": "/srv/walk"})
        sid = r.json()["id"]
        two = [
            {"type": "message", "role": "user", "content": "read main.rs"},
            {"type": "message", "role": "assistant", "content": "It is the entrypoint."},
        ]
        body = TRANSCRIPT.read_bytes()

        async def append(i: int) -> None:
            r = await http.post(f"/v1/sessions/{sid}/events", json=two)
            assert r.status_code == 201, r.text

        async def remember(i: int) -> None:
            note = f"the build runs with make {i} and needs the cache warmed first"
            r = await http.post("/v1/memory/remember", json={"note": note, "title": f"build {i}"})
            assert r.status_code in (200, 201), r.text

        async def import_(i: int) -> None:
            repo = f"/srv/walk-import-{i}"
            r = await http.post("/v1/sessions/import", content=body, params={"repo_root": repo})
            assert r.status_code in (200, 201), r.text

        for label, step in (
            ("append of two events", append),
            ("remember of a note", remember),
            ("import of a 29-line transcript", import_),
        ):
            await step(0)  # untraced: first-use imports and caches
            trace.clear()
            trace.active = True
            await step(1)
            trace.answered = True
            await asyncio.sleep(0.2)  # the catalog and the feed catch up, on their threads
            trace.active = False
            walks.append(_walk(trace, label))
    return walks


def trace_walks() -> list[Walk]:
    trace = Trace()
    threading.setprofile(trace.hook)  # every thread the app starts carries the hook
    sys.setprofile(trace.hook)
    try:
        with tempfile.TemporaryDirectory(prefix="aster-walk-") as folder:
            return asyncio.run(_walks(Path(folder) / "home", trace))
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def bench_walk() -> None:
    from bench.harness import add

    for walk in trace_walks():
        add(
            f"walk: {walk.request}",
            f"{walk.files} files ({walk.answering} to answer, {walk.after} after),"
            f" {walk.functions} functions, {walk.reentries} re-entries,"
            f" {walk.scans} lines scanned ({walk.rescans} again)",
            "-",
            ", ".join(f"{name} x{n}" for name, n in walk.most_entered[:3]),
        )


def main() -> None:
    for walk in trace_walks():
        print(f"\n## {walk.request}")
        print(
            f"files {walk.files} ({walk.answering} until the response, {walk.after} only after"
            f" it), functions {walk.functions}, re-entries {walk.reentries},"
            f" lines scanned for secrets {walk.scans} ({walk.rescans} of them again)"
        )
        print("entered most:", ", ".join(f"{n} x{c}" for n, c in walk.most_entered))
        print("called most:", ", ".join(f"{n} x{c}" for n, c in walk.most_called))


if __name__ == "__main__":
    main()
