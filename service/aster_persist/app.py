"""The composition root: ``create_app(settings)`` wires the stores into a FastAPI app.

Nothing is built at import time. The lifespan opens (or is handed) the data home, starts
the stores, and on shutdown finishes queued appends and closes everything in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, NamedTuple

from fastapi import APIRouter, FastAPI
from starlette.middleware.cors import CORSMiddleware

from . import __version__
from .api import docs as docs_api
from .api import events as events_api
from .api import journal as journal_api
from .api import learning as learning_api
from .api import memory as memory_api
from .api import ops, overview, page, problems, reading, sessions
from .api import search as search_api
from .api import team as team_api
from .api.fastpath import FastPath
from .api.front import AsterApp
from .api.guard import Guard
from .api.openapi import openapi_document
from .api.plumbing import EXPOSED_HEADERS, Configured, Running
from .costs import Prices
from .costs.spending import Spending
from .errors import HomeUnavailable
from .index.catalog import CatalogWorker, MemoryDoc
from .learning.learner import Learner
from .learning.model import ModelClient
from .learning.queue import JobQueue
from .live.feed import Feed
from .live.follow import Following
from .live.watcher import watch
from .mcp.lazy import LazyMcp
from .schemas.clock import Clock, utc_now
from .services.memory import Memory
from .services.sessions import Activity, Parts, Sessions
from .settings import Settings
from .storage import fs
from .storage.blobs import BlobStore
from .storage.commit import GroupCommitter
from .storage.home import Home
from .storage.journal import Journal
from .storage.memory import MemoryStore
from .storage.token import load_token
from .storage.transcripts import TranscriptStore
from .team.projects import ProjectKeys
from .team.service import Team

log = logging.getLogger("aster_persist")


async def prune_on_schedule(memory: Memory, settings: Settings) -> None:
    """Archive stale, unimportant memory in every scope, every so often (off by default)."""
    while True:
        await asyncio.sleep(settings.memory_prune_every_hours * 3600)
        for scope in memory.scopes():
            try:
                result = await memory.prune(
                    scope,
                    max_age_days=settings.memory_prune_max_age_days,
                    max_importance=settings.memory_prune_max_importance,
                    dry_run=False,
                    actor="consolidator",
                    trigger=f"the scheduled prune (every {settings.memory_prune_every_hours} h)",
                )
            except Exception:
                log.exception("scheduled memory prune of %s failed", scope)
                continue
            if result["archived"]:
                log.info("scheduled prune archived %d blocks in %s", len(result["archived"]), scope)


def model_client(settings: Settings) -> ModelClient | None:
    """The model learning asks, when one is configured."""
    if not (settings.llm_base_url and settings.llm_model):
        return None
    log.info("learning from sessions with %s at %s", settings.llm_model, settings.llm_base_url)
    return ModelClient(
        settings.llm_base_url,
        settings.llm_model,
        api_key=settings.llm_api_key,
        timeout=settings.llm_timeout_seconds,
        retries=settings.llm_retries,
    )


def journal_refusals(journal: Journal) -> Callable[[str], None]:
    """A listener that journals each link the home refused (``home.symlink_refused``),
    on a thread of its own: a refusal can happen while the journal is being written."""

    def record(rel: str) -> None:
        try:
            journal.record(
                "home.symlink_refused",
                scope="global",
                actor="api",
                detail={"path": rel, "reason": "a symbolic link; never followed"},
            )
        except Exception:
            log.exception("could not journal the link refused at %s", rel)

    def refused(rel: str) -> None:
        log.warning("refused the symbolic link %s inside the data home", rel)
        threading.Thread(target=record, args=(rel,), name="aster-refusal", daemon=True).start()

    return refused


def create_app(
    settings: Settings | None = None,
    *,
    home: Home | None = None,
    clock: Clock = utc_now,
) -> FastAPI:
    """Build the app. Pass ``home`` when the caller has already opened and locked it."""
    settings = settings or Settings()
    settings.check()
    if home is None:
        home = Home.open(settings.home, fallback=settings.fallback)
    try:
        home.check_layout()
        if settings.semantic:  # the model read (once a process) before anything starts
            from .index import encoder

            encoder.load(settings.semantic_model, quick=settings.rerank)
    except (HomeUnavailable, ValueError):
        home.close()
        raise
    token = load_token(home, enabled=settings.auth_enabled, given=settings.token)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        journal = Journal(
            home.root / "journal.jsonl", clock=clock, durable=settings.durability != "none"
        )
        journal.open()
        fs.listen(home.root, journal_refusals(journal))
        memory_store = MemoryStore(home, journal, clock=clock)
        built = build_sessions(home, settings, journal, clock, memory_doc=memory_store.index_doc)
        store = built.sessions
        memory = Memory(memory_store, built.committer)
        feed = Feed(
            asyncio.get_running_loop(),
            max_subscribers=settings.max_subscribers,
            queue_size=settings.subscriber_queue,
            heartbeat=settings.heartbeat_seconds,
        )
        store.listeners.append(feed.appended)
        activity = Activity(settings.running_seconds, clock)
        store.listeners.append(activity.appended)
        journal.listeners.append(feed.journaled)
        etags = await memory.load()
        journal.listeners.append(built.catalog.journaled)
        await store.start(etags)
        learner = Learner(
            store,
            memory,
            JobQueue(home.root / "queue"),
            model_client(settings),
            extraction=settings.llm_extraction,
            max_items=settings.llm_extraction_max_items,
            max_input_chars=settings.llm_extraction_max_input_chars,
            consolidate_idle=settings.consolidate_idle_minutes * 60,
            consolidate_min_interval=settings.consolidate_min_interval_minutes * 60,
            consolidate_max_blocks=settings.consolidate_max_blocks,
        )
        if learner.enabled:  # with no model, nothing an append or a new session queues
            store.listeners.append(learner.appended)
            journal.listeners.append(learner.session_started)
        learner.start()
        mcp.attach(store, memory)
        journal.listeners.append(mcp.changed)
        stop_watching, watching = asyncio.Event(), asyncio.Event()
        watcher = (
            asyncio.get_running_loop().create_task(watch(memory, store, stop_watching, watching))
            if settings.watch
            else None
        )
        team = Team(
            store,
            memory,
            state=home.root / "team.json",
            urls=settings.team_url,
            credentials=settings.team_credentials,
            machine=settings.machine,
            projects=settings.team_projects,
            share_global_memory=settings.team_global_memory,
        )
        store.listeners.append(team.appended)
        team.start()
        following = Following(store, home.root, settings.follow)
        stop_following = asyncio.Event()
        follower = asyncio.get_running_loop().create_task(following.run(stop_following))
        compressor = asyncio.get_running_loop().create_task(store.keep_cold())
        pruner = None
        if settings.memory_prune_every_hours > 0:
            pruner = asyncio.get_running_loop().create_task(prune_on_schedule(memory, settings))
        app.state.running = Running(
            journal=journal,
            sessions=store,
            memory=memory,
            feed=feed,
            learner=learner,
            following=following,
            watching=watching,
            team=team,
            spending=Spending(store, Prices(settings.prices)),
            activity=activity,
        )
        try:
            yield
        finally:
            if pruner is not None:
                pruner.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pruner
            await team.close()
            await learner.stop(settings.llm_drain_seconds)
            await mcp.close()
            stop_watching.set()
            stop_following.set()
            compressor.cancel()  # a session being put in place is put whole on the writer thread
            with contextlib.suppress(asyncio.CancelledError):
                await compressor
            with contextlib.suppress(Exception):
                await asyncio.wait_for(follower, 5)
            if watcher is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(watcher, 5)
            feed.close()
            await store.close()
            journal.close()
            home.close()

    origins = settings.origins
    app = AsterApp(
        title="aster-persist",
        version=__version__,
        summary="One durable store of transcripts, memory and a live journal for AI coding agents.",
        lifespan=lifespan,
        docs_url=None,  # api/docs.py serves it, with its assets
        redoc_url=None,
    )
    app.state.configured = Configured(settings, home, token)
    problems.install(app)
    _routes(app, overview.router)  # before /sessions/{id}: its paths are fixed words
    _routes(app, sessions.router)
    _routes(app, reading.router)
    _routes(app, journal_api.router)
    _routes(app, memory_api.router)
    _routes(app, search_api.router)
    _routes(app, team_api.router)
    _routes(app, events_api.router)
    _routes(app, learning_api.router)
    _routes(app, page.router)
    _routes(app, docs_api.router)
    mcp = LazyMcp()
    app.router.routes.append(mcp.route)
    _routes(app, ops.router)
    app.add_middleware(
        CORSMiddleware,
        allow_origins=origins,
        allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
        allow_headers=[
            "Authorization",
            "Content-Type",
            "If-Match",
            "If-None-Match",
            "Idempotency-Key",
            "X-Aster-Actor",
            "Last-Event-ID",
        ],
        expose_headers=EXPOSED_HEADERS,
    )
    app.front = lambda inner: Guard(
        FastPath(inner, app),
        allowed_hosts=settings.hosts,
        allowed_origins=origins,
        token=token,
        max_body_bytes=settings.max_body_bytes,
        max_import_bytes=settings.max_import_bytes,
        max_requests=settings.max_requests,
        warning=home.degraded,
    )
    app.openapi = lambda: openapi_document(app)  # type: ignore[method-assign]
    return app


class Built(NamedTuple):
    """The sessions service, and the parts of it that the rest of the daemon is wired to
    (the writer thread memory shares, the catalog memory's changes are indexed by)."""

    sessions: Sessions
    store: TranscriptStore
    committer: GroupCommitter
    catalog: CatalogWorker
    journal: Journal | None


def _routes(app: FastAPI, router: APIRouter) -> None:
    """Give the app a router's routes as they are. (``include_router`` would build every
    route again, on the first request, for a prefix, tags or dependencies these routers
    do not add: a quarter of a second of every start.)"""
    app.router.routes.extend(router.routes)


def build_sessions(
    home: Home,
    settings: Settings,
    journal: Journal | None,
    clock: Clock = utc_now,
    *,
    memory_doc: MemoryDoc | None = None,
) -> Built:
    """The sessions service and its parts: the catalog worker (its own thread), the
    transcript store that tells it of every change, the committer that is the store's
    single writer thread, and the blob store."""
    vectors = reranker = None
    if settings.semantic:  # numpy and the model come with the extra, checked at start
        from .index import encoder
        from .index.rerank import Reranker
        from .index.semantic import Vectors

        model = encoder.load(settings.semantic_model, quick=settings.rerank)
        vectors = Vectors(model, settings.semantic_weight)
        reranker = Reranker(model) if settings.rerank else None

    def locate(slug: str, session_id: str) -> Path:
        return store.path_of(slug, session_id)  # in the form it is in now

    def changed_form(session_id: str, op: str, slug: str, detail: dict[str, Any]) -> None:
        if journal is not None:
            journal.record(op, scope=f"project:{slug}", session=session_id, detail=detail)

    catalog = CatalogWorker(
        home.index, locate, memory_doc=memory_doc, vectors=vectors, reranker=reranker
    )
    store = TranscriptStore(
        home,
        durability=settings.durability,
        clock=clock,
        max_event_bytes=settings.max_event_bytes,
        open_files=settings.open_files,
        on_change=catalog.mark,
        on_remove=catalog.forget,
        on_form=changed_form,
    )
    committer = GroupCommitter(store, sync_interval=settings.sync_interval_ms / 1000)
    sessions = Sessions(
        Parts(
            home,
            store=store,
            committer=committer,
            catalog=catalog,
            blobs=BlobStore(home.root / "blobs", settings.blob_threshold),
            journal=journal,
        ),
        compress_after_days=settings.compress_after_days,
        project_keys=ProjectKeys() if settings.team_url else None,
    )
    return Built(sessions, store, committer, catalog, journal)
