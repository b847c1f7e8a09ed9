"""What the data home costs against what it keeps (``--only footprint``): every fixture
(real transcripts of five tools) imported with the command line into a fresh home, with
compression off, and with the default settings once the compression threshold has
passed (their own times are months old: the daemon compresses them at its next start).

The home is measured by kind (plain and compressed transcripts, the catalog with its
write-ahead log, blobs, the journal) against the bytes of the source files. Beside it,
what a resumed Claude Code session adds when the one it resumes is stored (``bench_copies``).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson

from bench.harness import ROOT, add, daemon

FIXTURES = ROOT / "tests" / "fixtures"
SUFFIXES = (".jsonl", ".json", ".traj")


def sources() -> int:
    return sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.suffix in SUFFIXES)


def by_kind(home: Path) -> dict[str, int]:
    """Bytes of the home's files by what they are."""
    kinds = {"plain": 0, "compressed": 0, "catalog": 0, "blobs": 0, "journal": 0, "other": 0}
    for path in home.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        size = path.stat().st_size
        rel = path.relative_to(home).parts
        if rel[0] == "sessions" and path.name.endswith(".jsonl"):
            kinds["plain"] += size
        elif rel[0] == "sessions" and path.name.endswith(".jsonl.zst"):
            kinds["compressed"] += size
        elif rel[0] == "index":
            kinds["catalog"] += size
        elif rel[0] in ("blobs", "journal.jsonl"):
            kinds["blobs" if rel[0] == "blobs" else "journal"] += size
        else:
            kinds["other"] += size
    return kinds


def imported(home: Path, **env: str) -> None:
    """The fixtures imported by the command line, the catalog caught up, the daemon stopped."""
    server = daemon(home, **env)
    try:
        done = subprocess.run(
            [
                *(sys.executable, "-m", "aster_persist", "sessions", "import", str(FIXTURES)),
                *("--repo-root", "/srv/fixtures", "--url", server.url),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        time.sleep(1)  # the catalog follows the imports on its own thread
    finally:
        server.stop()


def compressed_after_the_threshold(home: Path) -> int:
    """Start again with the default settings (its sweep compresses what is cold already),
    then sweep as the daemon does once 14 days have passed (sessions whose files had no
    times were given the import's); stop. How many sessions were compressed."""
    server = daemon(home)
    try:
        for _ in range(600):  # the start's own sweep first
            left = httpx.post(f"{server.url}/v1/sessions/compress", json={}, timeout=60).json()
            if not left["compressed"]:
                break
            time.sleep(0.1)
        later = {"older_than_days": 0, "dry_run": False}
        httpx.post(f"{server.url}/v1/sessions/compress", json=later, timeout=600)
        journal = httpx.get(
            f"{server.url}/v1/journal", params={"op": "session.compressed", "limit": 1000}
        ).json()["items"]
    finally:
        server.stop()
    return len(journal)


def bench_footprint(work: Path) -> None:
    source = sources()
    off = work / "footprint-off"
    imported(off, ASTER_COMPRESS_AFTER_DAYS="0")
    plain = by_kind(off)
    on = work / "footprint-default"
    imported(on)
    count = compressed_after_the_threshold(on)
    packed = by_kind(on)
    for name, kinds in (("compression off", plain), ("default, after 14 days", packed)):
        total = sum(kinds.values())
        transcripts = kinds["plain"] + kinds["compressed"]
        add(
            f"data home after importing the fixtures ({source / 1e6:.1f} MB), {name}",
            f"{total / source:.2f}x the sources ({total / 1e6:.2f} MB)",
            f"transcripts {transcripts / 1e6:.2f} MB, catalog {kinds['catalog'] / 1e6:.2f} MB "
            f"({kinds['catalog'] / (plain['plain'] or 1):.2f}x the plain transcripts), "
            f"journal {kinds['journal'] / 1e6:.2f} MB, blobs {kinds['blobs'] / 1e6:.2f} MB",
            "target <= 1.0x"
            if name == "compression off"
            else f"target <= 0.4x ({count} compressed)",
        )


def resumed(path: Path, session: str) -> bytes:
    """What Claude Code writes when the session of ``path`` is resumed: a new file under a
    new session id holding every old record, then the user and the assistant going on."""
    records = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    copied = [{**r, "sessionId": session} if r.get("sessionId") else r for r in records]
    last = next(r for r in reversed(records) if r.get("uuid"))
    base = {k: last[k] for k in ("cwd", "timestamp", "version") if k in last}
    more = [
        {
            **base,
            "type": "user",
            "sessionId": session,
            "uuid": f"{session}-1",
            "parentUuid": last["uuid"],
            "message": {"role": "user", "content": "go on with the next step"},
        },
        {
            **base,
            "type": "assistant",
            "sessionId": session,
            "uuid": f"{session}-2",
            "parentUuid": f"{session}-1",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        },
    ]
    return b"".join(orjson.dumps(r) + b"\n" for r in [*copied, *more])


def bench_copies(work: Path) -> None:
    """Each Claude Code fixture and a resumed copy of it imported (the original first, and
    in a second home the copy first): the bytes the later one's transcript adds, against
    the bytes of its source file (target: at most a tenth)."""
    originals = sorted(p for p in (FIXTURES / "claude-code").rglob("*.jsonl") if p.stat().st_size)
    for order in ("original first", "copy first"):
        home = work / f"copies-{order.split()[0]}"
        server = daemon(home, ASTER_COMPRESS_AFTER_DAYS="0")
        added = sources = 0
        try:
            with httpx.Client(base_url=server.url, timeout=600) as http:
                for n, path in enumerate(originals):
                    copy = resumed(path, f"5e55a0e0-0000-4000-8000-{n:012d}")
                    pair = [path.read_bytes(), copy]
                    if order == "copy first":
                        pair.reverse()
                    ids = []
                    for data in pair:
                        r = http.post("/v1/sessions/import", content=data)
                        assert r.status_code == 201, r.text
                        ids.append(r.json()["sessions"][0]["id"])
                    [later] = home.rglob(f"sessions/*/{ids[1]}.jsonl")
                    added += later.stat().st_size
                    sources += len(pair[1])
        finally:
            server.stop()
        add(
            f"a resumed Claude Code session imported beside the one it resumes ({order}, "
            f"{len(originals)} fixtures)",
            f"{added / sources:.3f}x of its source's bytes ({added / 1e3:.0f} kB)",
            f"{sources / 1e6:.2f} MB of sources",
            "target <= 0.1x",
        )
