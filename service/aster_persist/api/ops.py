"""Operations: liveness, readiness and what this daemon is."""

from __future__ import annotations

import os
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from .. import __version__
from ..schemas.ops import Health, Readiness
from .plumbing import ERRORS, configured, json_response, running

router = APIRouter(tags=["operations"])


@router.get("/healthz", operation_id="ops-health", response_model=Health)
async def healthz() -> Response:
    """Alive: the process answers."""
    return json_response({"status": "ok"})


@router.get(
    "/readyz",
    operation_id="ops-ready",
    response_model=Readiness,
    responses={503: {"model": Readiness, "description": "Not ready yet, or degraded"}},
)
async def readyz(request: Request) -> Response:
    """Ready: the catalog has caught up with the files and the data home is writable."""
    state, given = running(request), configured(request)
    sessions = state.sessions
    writable = os.access(given.home.root, os.W_OK)
    caught_up = sessions.ready.is_set()
    status = "ready" if caught_up and writable else "starting" if writable else "unwritable"
    if given.home.degraded:
        status = "degraded"
    body = {
        "status": status,
        "index": {"caught_up": caught_up, **sessions.progress},
        "writable": writable,
        "degraded": given.home.degraded,
    }
    return json_response(body, 200 if status == "ready" else 503)


@router.get(
    "/v1/info",
    operation_id="ops-info",
    response_model=dict[str, Any],
    responses={422: ERRORS[422]},  # a `space` that is not a boolean
)
async def info(request: Request, space: bool = False) -> Response:
    """Version, data home, settings in force and counts; with `space=true`, what the
    data home takes by kind, project and tool, and what emptying the trash or
    compressing cold sessions would free (as `aster-persist du` shows it)."""
    state, given = running(request), configured(request)
    settings = given.settings
    sessions = state.sessions
    count = await sessions.count() if sessions.ready.is_set() else 0
    stats = sessions.stats()
    semantic: dict[str, Any] = {"enabled": settings.semantic}
    if settings.semantic and sessions.ready.is_set():
        semantic |= await sessions.in_catalog(
            lambda c: {
                "weight": settings.semantic_weight,
                "model": c.vectors.embedder.identity if c.vectors else None,
                "rerank": c.reranker is not None,
                "vectors": c.vectors.size if c.vectors else 0,
                "pending": c.vectors.pending(c.db) if c.vectors else 0,
                # in the graph that searches them at scale (0: none yet, or not needed)
                "graph": c.vectors.linked if c.vectors and c.vectors.ann else 0,
            }
        )
    return json_response(
        {
            "name": "aster-persist",
            "version": __version__,
            "pid": os.getpid(),
            "home": str(given.home.root),
            "degraded": given.home.degraded,
            "durability": settings.durability,
            "auth": "token" if given.token else "off",
            "token_file": str(given.home.root / "token")
            if given.token and not settings.token
            else None,
            "limits": {
                "max_body_bytes": settings.max_body_bytes,
                "max_event_bytes": settings.max_event_bytes,
            },
            "counts": {"sessions": count},
            "catalog": sessions.catch_up_stats,
            "semantic": semantic,
            "appends": {"requests": stats["appends"], "syncs": stats["syncs"]},
            "watching": state.watching.is_set(),
            "streams": {
                "open": len(state.feed.subscribers),
                "dropped": state.feed.dropped,
                "max": settings.max_subscribers,
            },
            **({"space": await sessions.space()} if space else {}),
        }
    )


@router.get(
    "/metrics",
    operation_id="ops-metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}}},
)
async def metrics(request: Request) -> Response:
    """Prometheus metrics, read from the stores at scrape time (nothing on the hot path)."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
    from prometheus_client.core import CollectorRegistry, CounterMetricFamily, GaugeMetricFamily

    state, given = running(request), configured(request)
    sessions = state.sessions
    count = await sessions.count() if sessions.ready.is_set() else 0
    stats = sessions.stats()

    class Snapshot:
        def collect(self) -> Any:
            yield CounterMetricFamily(
                "aster_appends", "Append requests acknowledged.", value=stats["appends"]
            )
            yield CounterMetricFamily(
                "aster_syncs", "Group-commit sync passes.", value=stats["syncs"]
            )
            yield GaugeMetricFamily("aster_sessions", "Sessions in the catalog.", value=count)
            yield GaugeMetricFamily(
                "aster_open_transcripts",
                "Transcripts open for appends.",
                value=stats["open_files"],
            )
            yield GaugeMetricFamily(
                "aster_memory_blocks",
                "Memory blocks, archived included.",
                value=state.memory.count(),
            )
            yield GaugeMetricFamily(
                "aster_ready",
                "1 when the catalog has caught up.",
                value=int(sessions.ready.is_set()),
            )
            yield GaugeMetricFamily(
                "aster_degraded",
                "1 when serving from the temporary fallback store.",
                value=int(bool(given.home.degraded)),
            )

    registry = CollectorRegistry()
    registry.register(Snapshot())
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
