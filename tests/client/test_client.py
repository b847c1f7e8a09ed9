"""The Python client against a real daemon: the API tests' scenarios, sync and async.

Each scenario is written once; ``call`` awaits what the async client returns and passes
the sync client's results through, so both clients run the very same steps.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from aster_persist.client import (
    ApiError,
    AsyncClient,
    Client,
    ConflictError,
    DaemonUnavailable,
    InvalidRequestError,
    NotFoundError,
    PreconditionFailedError,
)
from aster_persist.schemas.journal import JournalEntry
from aster_persist.schemas.memory import Note, SavedBlock

from ..conftest import Daemon, assistant, call, free_port, serving, tool, user, wait_until

FIXTURES = Path(__file__).parent.parent / "fixtures"
T = TypeVar("T")
AnyClient = Client | AsyncClient

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    yield from serving(tmp_path_factory, "client")


@pytest.fixture(params=["sync", "async"])
async def aster(request: pytest.FixtureRequest, server: Daemon) -> AsyncIterator[AnyClient]:
    if request.param == "sync":
        with Client(server.url) as sync:
            yield sync
    else:
        async with AsyncClient(server.url) as asynchronous:
            yield asynchronous


async def run(value: T | Awaitable[T]) -> T:
    """A sync client's result as it is; an async client's, awaited."""
    if inspect.isawaitable(value):
        return await value
    return value


async def refused(kind: type[ApiError], step: Callable[[], Any]) -> ApiError:
    with pytest.raises(kind) as caught:
        await run(step())
    return caught.value


def repo(request: pytest.FixtureRequest) -> str:
    """A project of the test's own, so tests sharing the daemon never see each other."""
    return f"/srv/{request.node.name.replace('[', '-').rstrip(']')}"


async def test_a_session_from_creation_to_restore(
    aster: AnyClient, request: pytest.FixtureRequest
) -> None:
    root = repo(request)
    header = await run(aster.create_session(root, title="Fix the build", model="m-1"))
    sid = header.id
    assert header.repo_root == root and header.model == "m-1"

    one = await run(aster.append(sid, user("why does the build fail?")))
    assert (one.first_seq, one.last_seq, one.count) == (1, 1, 1)
    batch = await run(
        aster.append(
            sid,
            [
                assistant(calls=[call("c1", "run", '{"cmd": "make"}')]),
                tool("c1", "error: missing header"),
                assistant("The header is missing."),
            ],
        )
    )
    assert (batch.first_seq, batch.last_seq) == (2, 4)

    detail = await run(aster.get_session(sid))
    assert detail.events == 4 and detail.title == "Fix the build" and detail.state == "ok"
    page = await run(aster.events(sid, after=1, limit=2))
    assert [e["seq"] for e in page.events] == [2, 3] and page.next_cursor == "3"
    tools_only = await run(aster.events(sid, type=["message"], limit=10))
    assert len(tools_only.events) == 4
    history = await run(aster.messages(sid))
    assert [m["content"] for m in history.messages] == [
        "why does the build fail?",
        "The header is missing.",
    ]
    context = await run(aster.messages(sid, view="context"))
    assert [m["role"] for m in context.messages] == ["user", "assistant", "tool", "assistant"]
    assert context.messages[1]["tool_calls"][0]["function"]["name"] == "run"

    renamed = await run(aster.rename_session(sid, "Missing header"))
    assert renamed.title == "Missing header"
    listed = await run(aster.list_sessions(root))
    assert [s.id for s in listed.items] == [sid]
    assert (await run(aster.latest_session(root))).id == sid
    assert sid in [s.id for s in (await run(aster.running_sessions())).items]  # just written
    projects = await run(aster.projects())
    assert any(p.repo_root == root and p.sessions == 1 for p in projects.items)

    exported = await run(aster.export(sid))
    assert exported.count(b"\n") == 6 and b"missing header" in exported  # + the title event
    chat = await run(aster.export_openai(sid))
    assert chat[0] == {"role": "user", "content": "why does the build fail?"}

    await run(aster.delete_session(sid))
    gone = await refused(NotFoundError, lambda: aster.get_session(sid))
    assert gone.status == 404 and gone.code == "session_not_found" and sid in gone.detail
    assert (await run(aster.restore_session(sid))).id == sid
    assert (await run(aster.get_session(sid))).events == 5  # four turns and the title


async def test_retries_guards_and_refusals_are_typed(
    aster: AnyClient, request: pytest.FixtureRequest
) -> None:
    sid = (await run(aster.create_session(repo(request)))).id
    first = await run(aster.append(sid, user("once"), idempotency_key="k-1"))
    again = await run(aster.append(sid, user("once"), idempotency_key="k-1"))
    assert not first.replayed and again.replayed  # the retry says so; nothing written
    assert again.model_dump(exclude={"replayed"}) == first.model_dump(exclude={"replayed"})
    assert (await run(aster.get_session(sid))).events == 1

    stale = await refused(
        PreconditionFailedError, lambda: aster.append(sid, user("x"), if_match='"0"')
    )
    assert stale.status == 412
    assert (await run(aster.append(sid, user("next"), if_match='"1"'))).first_seq == 2

    bad = await refused(
        InvalidRequestError, lambda: aster.append(sid, {"type": "message", "role": "robot"})
    )
    assert bad.status == 422 and bad.errors and "role" in str(bad.errors)
    assert (await run(aster.get_session(sid))).events == 2  # nothing written

    await refused(InvalidRequestError, lambda: aster.get_session("not-a-session-id"))
    missing = await refused(NotFoundError, lambda: aster.events("01J0000000000000000000ABCD"))
    assert missing.code == "session_not_found"
    again = await run(aster.create_session(repo(request), id=sid))  # a retry: that session
    assert again.id == sid
    await refused(ConflictError, lambda: aster.create_session(repo(request), id=sid, title="other"))


async def test_memory_from_remember_to_revert(
    aster: AnyClient, request: pytest.FixtureRequest
) -> None:
    root = repo(request)
    saved = await run(
        aster.remember(
            "Run the tests with make test.", root, name="testing", tags=["ci"], importance=0.6
        )
    )
    assert (saved.name, saved.merged, saved.tags) == ("testing", False, ["ci"])
    merged = await run(aster.remember("run the tests  with make test.", root, name="other"))
    assert merged.merged and merged.name == "testing"
    taken = await refused(
        ConflictError, lambda: aster.remember("Something else.", root, name="testing")
    )
    assert "testing" in taken.detail

    read = await run(aster.recall("testing", root))
    assert read.body == "Run the tests with make test.\n" and "name: testing" in read.content
    assert read.metadata["name"] == "testing" and read.metadata["tags"] == ["ci"]
    assert "---" not in read.body and read.metadata["importance"] == read.importance
    await refused(
        PreconditionFailedError,
        lambda: aster.put_block(
            "testing", "---\ndescription: x\n---\nNew.\n", root, if_match='"' + "0" * 64 + '"'
        ),
    )
    replaced = await run(
        aster.put_block(
            "testing", "---\ndescription: how\n---\nUse make test.\n", root, if_match=read.etag
        )
    )
    assert replaced.description == "how" and replaced.etag != read.etag
    patched = await run(aster.patch_block("testing", root, pinned=True, tags=["ci", "make"]))
    assert patched.pinned and patched.tags == ["ci", "make"]
    assert [b.name for b in (await run(aster.blocks(root, tag="make"))).items] == ["testing"]
    assert [b.name for b in (await run(aster.recent(root, n=5))).items] == ["testing"]

    assert (await run(aster.archive("testing", root))).archived
    assert (await run(aster.blocks(root))).items == []
    assert not (await run(aster.restore("testing", root))).archived

    await run(aster.forget("testing", root))
    await refused(NotFoundError, lambda: aster.recall("testing", root))
    entries = [
        e
        for e in (await run(aster.journal_page(op="memory.delete", limit=500))).items
        if e.name == "testing" and e.scope != "global"
    ]
    reverted = await run(aster.revert(entries[-1].id))
    assert reverted.op == "memory.revert"
    assert (await run(aster.recall("testing", root, track=False))).body == "Use make test.\n"

    secret = await refused(
        InvalidRequestError,
        lambda: aster.remember("token ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a", root),
    )
    assert secret.code == "secret_detected" and "16C7e42F" not in str(secret.problem)


async def test_core_memory_context_search_and_tools(
    aster: AnyClient, request: pytest.FixtureRequest
) -> None:
    root = repo(request)
    core = await run(aster.core(root))
    written = await run(aster.put_core("# Project\n- Uses uv.\n", root, if_match=core.etag))
    await refused(
        PreconditionFailedError, lambda: aster.put_core("# Lost\n", root, if_match=core.etag)
    )
    noted = await run(aster.remember_tool("Ship on green.", root))
    assert isinstance(noted, Note) and noted.scope.startswith("project:") and not noted.duplicate
    tool_block = await run(aster.remember_tool("Lint with ruff.", root, title="Linting"))
    assert isinstance(tool_block, SavedBlock) and tool_block.name == "linting"
    note = await run(aster.add_note("Deploys on Fridays are frozen.", root))
    assert not note.duplicate and note.etag != written.etag
    assert (await run(aster.add_note("deploys on fridays are frozen.", root))).duplicate
    await run(aster.remember("Postgres runs on port 5433 here.", root, name="database"))
    done = await run(
        aster.remember_procedure("success", "release", root, tools=["make"], result="tagged")
    )
    assert done.type == "procedural"

    context = await run(aster.context(root, query="postgres port"))
    assert "Uses uv." in context.content and "database" in context.content
    assert context.order == "relevance"
    hits = await run(aster.search_memory("postgres", root))
    assert hits.items[0].name == "database" and hits.items[0].highlights

    tools = await run(aster.tools())
    assert {t["function"]["name"] for t in tools.tools} >= {"remember", "recall", "forget"}
    result = await run(aster.call_tool("recall", {"name": "database"}, repo_root=root))
    assert "5433" in result.content

    pruned = await run(aster.prune_memory(root, max_age_days=0, max_importance=1))
    assert pruned.dry_run and {i.name for i in pruned.archived} >= {"database"}
    assert (await run(aster.recall("database", root, track=False))).archived is False


async def test_search_import_and_ops(aster: AnyClient, request: pytest.FixtureRequest) -> None:
    root = repo(request)
    sid = (await run(aster.create_session(root))).id
    await run(aster.append(sid, user("the flaky websocket test times out")))
    page = await run(aster.search("websocket timeouts", repo_root=root))
    assert page.items[0].session_id == sid and page.items[0].seq == 1
    assert page.items[0].highlights
    both = await run(aster.search("websocket", kind="all", session_id=sid, limit=5))
    assert {h.session_id for h in both.items} == {sid}
    syntax = await refused(InvalidRequestError, lambda: aster.search('"unclosed phrase'))
    assert syntax.status == 422

    data = (FIXTURES / "openai-chat" / "tau-bench" / "gpt-4o-airline.json").read_bytes()
    first = await run(aster.import_file(data, repo_root=root))  # (or by the other client)
    assert first.format == "openai-chat" and len(first.sessions) == 200
    second = await run(aster.import_file(data, repo_root=root))
    assert second.imported == 0 and second.already_imported == 200
    await refused(
        InvalidRequestError, lambda: aster.import_file(b"not a transcript", format="codex")
    )

    assert (await run(aster.health())).status == "ok"
    assert (await run(aster.ready())).status == "ready"
    assert (await run(aster.info()))["version"]
    assert "aster_appends_total" in await run(aster.metrics())
    await run(aster.create_session(root))
    listing = await run(aster.list_sessions(root, limit=1))
    assert len(listing.items) == 1 and listing.next_cursor


async def test_follow_replays_then_streams_live(
    aster: AnyClient, server: Daemon, request: pytest.FixtureRequest
) -> None:
    root = repo(request)
    # an entry to follow after, whatever ran first on this daemon (after=None is live only)
    await run(aster.remember("Zeroth fact.", root, name="zeroth"))
    after = (await run(aster.journal_page(name="zeroth"))).items[-1].id  # the newest
    await run(aster.remember("First fact.", root, name="first"))

    def later() -> None:  # a change made by someone else once the feed is open
        with httpx.Client() as other:
            other.post(
                f"{server.url}/v1/memory/blocks",
                params={"repo_root": root},
                json={"name": "second", "content": "Second fact."},
            )

    seen: list[JournalEntry] = []
    timer = threading.Timer(0.5, later)
    timer.start()
    if isinstance(aster, Client):
        for item in aster.follow(after=after, op="memory"):
            assert isinstance(item, JournalEntry)
            seen.append(item)
            if item.name == "second":
                break
    else:
        feed = aster.follow(after=after, op="memory")
        try:
            async for item in feed:
                assert isinstance(item, JournalEntry)
                seen.append(item)
                if item.name == "second":
                    break
        finally:
            await feed.aclose()
    timer.join()
    names = [e.name for e in seen if e.scope != "global"]
    assert names[-2:] == ["first", "second"]


async def test_follow_session_tails_a_transcript(
    aster: AnyClient, request: pytest.FixtureRequest
) -> None:
    sid = (await run(aster.create_session(repo(request)))).id
    await run(aster.append(sid, [user("one"), assistant("two")]))
    events: list[dict[str, Any]] = []
    if isinstance(aster, Client):
        for event in aster.follow_session(sid, after=1):
            events.append(event)
            break
    else:
        feed = aster.follow_session(sid, after=1)
        events.append(await feed.__anext__())
        await feed.aclose()
    assert events[0]["seq"] == 2 and events[0]["content"] == "two"


async def test_an_absent_daemon_is_its_own_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with Client(url) as sync, pytest.raises(DaemonUnavailable, match="not running"):
        sync.health()
    async with AsyncClient(url) as asynchronous:
        with pytest.raises(DaemonUnavailable, match="not running"):
            await asynchronous.list_sessions()


async def test_a_feed_with_no_daemon_backs_off_then_gives_up() -> None:
    """Following an address nothing answers at: tries again with growing pauses, then
    raises after the bounded time instead of blocking forever."""
    url = f"http://127.0.0.1:{free_port()}"
    loop = asyncio.get_running_loop()
    with Client(url) as sync:
        started = loop.time()
        with pytest.raises(DaemonUnavailable, match="has not answered for"):
            next(iter(sync.follow(retry=0.05, give_up_after=0.6)))
        assert 0.5 <= loop.time() - started < 5
    async with AsyncClient(url) as asynchronous:
        feed = asynchronous.follow_session("01J0000000000000000000ABCD", give_up_after=0.3)
        with pytest.raises(DaemonUnavailable, match="aster-persist serve"):
            await feed.__anext__()


def test_a_busy_daemon_is_tried_again_not_given_up(tmp_path: Path) -> None:
    """A 503 (every subscriber slot taken) is a drop: tried again until a slot frees."""
    daemon = Daemon(tmp_path / "home", env={"ASTER_MAX_SUBSCRIBERS": "1"}).start()
    got: list[Any] = []

    def follow() -> None:
        with Client(daemon.url) as sync:
            got.append(next(iter(sync.follow(retry=0.1, give_up_after=30))))

    try:
        follower = threading.Thread(target=follow)
        with httpx.stream("GET", f"{daemon.url}/v1/events", timeout=30) as holding:
            assert holding.status_code == 200
            assert httpx.get(f"{daemon.url}/v1/events", timeout=5).status_code == 503
            follower.start()
            time.sleep(1.0)  # refused meanwhile, and trying again
        wait_until(lambda: daemon_subscribers(daemon) == 1)
        httpx.post(f"{daemon.url}/v1/memory/blocks", json={"name": "n", "content": "A fact."})
        follower.join(30)
        assert isinstance(got[0], JournalEntry) and got[0].name == "n"
    finally:
        daemon.kill()


def daemon_subscribers(daemon: Daemon) -> int:
    return int(httpx.get(f"{daemon.url}/v1/info").json()["streams"]["open"])


def test_the_pauses_grow_and_start_over_after_a_connection() -> None:
    from aster_persist.client.sse import MAX_PAUSE, Feed

    feed = Feed("/v1/events", None, {}, retry=0.5, give_up_after=None)
    base, lost = httpx.URL("http://127.0.0.1:1"), httpx.ConnectError("refused")
    pauses = [feed.dropped(base, lost) for _ in range(7)]
    assert pauses == [0.5, 1.0, 2.0, 4.0, 8.0, MAX_PAUSE, MAX_PAUSE]
    feed.connected()
    assert feed.dropped(base, lost) == 0.5  # a connection in between: from the start
    assert feed.dropped(base, None) == 0.5 and feed.out_since is None  # a clean end


def test_the_token_comes_from_the_environment_or_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "secured"
    daemon = Daemon(home, env={"ASTER_AUTH": "token"}).start()
    try:
        monkeypatch.delenv("ASTER_TOKEN", raising=False)
        monkeypatch.setenv("ASTER_HOME", str(home))
        with Client(daemon.url) as aster:  # the home's token file
            assert aster.list_sessions().items == []
        with Client(daemon.url, token="wrong") as aster:
            with pytest.raises(ApiError) as caught:
                aster.list_sessions()
            assert caught.value.status == 401
        monkeypatch.setenv("ASTER_TOKEN", (home / "token").read_text().strip())
        monkeypatch.setenv("ASTER_HOME", str(tmp_path / "elsewhere"))
        assert asyncio.run(_list(daemon.url)) == 0
    finally:
        daemon.kill()


async def _list(url: str) -> int:
    async with AsyncClient(url) as aster:
        return len((await aster.list_sessions()).items)


def test_every_endpoint_has_a_method() -> None:
    """Each operation of the OpenAPI document is a method of both clients (the feeds
    as `follow` and `follow_session`), named in its docstring as ``METHOD path``."""
    doc = json.loads((Path(__file__).parents[2] / "openapi" / "openapi.json").read_text())
    found: set[tuple[str, str]] = set()
    for cls in (Client, AsyncClient):
        for name in dir(cls):
            if not name.startswith("_"):
                found |= set(
                    re.findall(
                        r"``(GET|POST|PUT|PATCH|DELETE) ([^`?]+)", getattr(cls, name).__doc__ or ""
                    )
                )
    documented = {f"{m} {p}" for m, p in found}
    streams = {"GET /v1/events", "GET /v1/sessions/{session_id}/events/stream"}
    wanted = {
        f"{method.upper()} {path.replace('{session_id}', '{id}').replace('{entry_id}', '{id}')}"
        for path, methods in doc["paths"].items()
        for method in methods
        if f"{method.upper()} {path}" not in streams
    }
    assert wanted <= documented, sorted(wanted - documented)
    assert callable(Client.follow) and callable(AsyncClient.follow_session)


async def test_learning_endpoints_without_a_model(
    aster: AnyClient, request: pytest.FixtureRequest
) -> None:
    state = await run(aster.extraction())
    assert state.enabled is False and state.queued == 0
    sid = (await run(aster.create_session(repo(request)))).id
    off = await refused(ConflictError, lambda: aster.extract(sid))
    assert "ASTER_LLM_BASE_URL" in off.detail and off.code == "learning_off"
    off = await refused(ConflictError, lambda: aster.consolidate(repo(request)))
    assert off.code == "learning_off"


async def test_the_journal_s_operations_are_read_as_a_model(aster: AnyClient) -> None:
    from aster_persist.schemas.journal import OPS

    found = await run(aster.journal_operations())
    assert [o.op for o in found.operations] == list(OPS) and "cli" in found.actors


def test_an_idle_connection_is_let_go_before_the_daemon_closes_it() -> None:
    """A connection the daemon is closing (its keep-alive over) is never reused: that
    request would fail unread ("Server disconnected without sending a response")."""
    import uvicorn

    from aster_persist.client import AsyncClient, Client

    served = uvicorn.Config(app=None).timeout_keep_alive  # what `serve` leaves as it is
    for client in (Client("http://127.0.0.1:9"), AsyncClient("http://127.0.0.1:9")):
        pool = client.http._transport._pool  # httpx keeps it there
        assert pool._keepalive_expiry is not None and pool._keepalive_expiry < served
