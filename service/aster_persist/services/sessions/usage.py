"""What the data home takes, as ``aster-persist du`` and ``GET /v1/info?space=true`` show
it: bytes by kind (plain and compressed transcripts, the trash, the catalog, vectors,
blobs, the journal, memory), by project and by the tool the sessions came from, and
what emptying the trash or compressing the cold sessions would free.

What compression would free is measured, not guessed: a sample of the cold sessions
(``SAMPLE_BYTES`` at most) is compressed in memory and its ratio applied to the rest.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from ...index.catalog.listing import API_SOURCE
from ...storage import packed, space
from .cold import Cold
from .parts import Parts

SAMPLE_BYTES = 16 << 20  # of cold sessions compressed in memory for the estimate


async def report(parts: Parts, cold: Cold) -> dict[str, Any]:
    measured = await asyncio.to_thread(space.measure, parts.home.root)
    rows = await asyncio.wrap_future(parts.catalog.submit(lambda catalog: catalog.sizes()))
    projects: dict[str, dict[str, Any]] = {}
    tools: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for sid, slug, repo_root, tool, _content in rows:
        size = measured.sessions.get(sid)
        if size is None:
            continue  # in the trash, or gone since the catalog saw it
        project = projects.setdefault(
            slug, {"repo_root": repo_root, "slug": slug, "sessions": 0, "bytes": 0}
        )
        project["sessions"] += 1
        project["bytes"] += size
        counted = tools[tool or API_SOURCE]
        counted[0] += 1
        counted[1] += size
    candidates = await cold.candidates(cold.after_days) if cold.after_days > 0 else []
    plain = sum(size for _sid, _slug, size in candidates)
    ratio, sampled = await _ratio(parts, [sid for sid, _slug, _size in candidates])
    return {
        "total": measured.total,
        "kinds": measured.kinds,
        "projects": sorted(projects.values(), key=lambda p: (-p["bytes"], p["slug"])),
        "tools": [
            {"tool": tool, "sessions": n, "bytes": b}
            for tool, (n, b) in sorted(tools.items(), key=lambda t: (-t[1][1], t[0]))
        ],
        "trash": {"sessions": measured.trashed, "bytes": measured.kinds["trash"]},
        "compression": {
            "after_days": cold.after_days,
            "sessions": len(candidates),
            "bytes": plain,
            "would_free": round(plain * (1 - ratio)) if candidates else 0,
            "ratio": round(ratio, 4),
            "sampled_bytes": sampled,
        },
    }


async def _ratio(parts: Parts, ids: list[str]) -> tuple[float, int]:
    """Compressed bytes over plain bytes of the first cold sessions, up to
    ``SAMPLE_BYTES`` (1.0 when there are none), and how many plain bytes that was."""

    def sample() -> tuple[float, int]:
        before = after = 0
        for sid in ids:
            if before >= SAMPLE_BYTES:
                break
            try:
                size, small = packed.measure(parts.store.live_path(sid))
            except Exception:  # deleted, compressed or unreadable meanwhile: not sampled
                continue
            before += size
            after += small
        return (after / before if before else 1.0), before

    return await asyncio.to_thread(sample)
