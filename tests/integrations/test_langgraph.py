"""``AsterStore``, LangGraph's ``BaseStore`` over memory blocks, against a real daemon on
loopback (the ``daemon`` fixture: ``aster-persist serve`` with a temporary data home).

Every scenario runs twice, through the blocking methods (``put``, ``get``…) and through
the asyncio ones (``aput``, ``aget``…); the files the daemon writes are read from disk.
A real ``StateGraph`` compiled with the store remembers between two runs.
"""

from __future__ import annotations

import math
import operator
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import InvalidNamespaceError, PutOp

from aster_persist.client import Client
from aster_persist.integrations.langgraph import AsterStore, AsterStoreError, block_name
from aster_persist.schemas import frontmatter

from ..conftest import Daemon, free_port

pytestmark = pytest.mark.anyio

SECRET = "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7nP9rS1"  # an OpenAI key's shape


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Store:
    """One ``AsterStore``, driven through its blocking or its asyncio methods."""

    store: AsterStore
    mode: str

    async def __call__(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self.mode == "sync":
            return getattr(self.store, method)(*args, **kwargs)
        return await getattr(self.store, "a" + method)(*args, **kwargs)


Make = Callable[..., Store]


@pytest.fixture(params=["sync", "async"])
async def make(request: pytest.FixtureRequest, daemon: Daemon) -> AsyncIterator[Make]:
    made: list[AsterStore] = []

    def store(repo_root: str | None = None, **options: Any) -> Store:
        made.append(AsterStore(repo_root, **{"url": daemon.url, **options}))
        return Store(made[-1], request.param)

    yield store
    for each in made:
        await each.aclose()


@pytest.fixture
def aster(daemon: Daemon) -> Any:
    with Client(daemon.url) as client:
        yield client


@pytest.fixture
def repo(tmp_path: Path) -> str:
    (tmp_path / "repo").mkdir()
    return str(tmp_path / "repo")


def block_file(daemon: Daemon, namespace: tuple[str, ...], key: str, slug: str = "") -> Path:
    folder = daemon.home / "memory" / ("projects/" + slug if slug else "")
    return folder / f"{block_name(namespace, key)}.md"


def md_files(daemon: Daemon) -> list[Path]:
    return sorted((daemon.home / "memory").rglob("lg-*.md"))


async def test_a_value_comes_back_exactly_with_the_blocks_times(
    make: Make, daemon: Daemon, aster: Client
) -> None:
    store = make()
    ns = ("users", "ann")
    value = {
        "content": "Ann drinks green tea.\nNo sugar.",
        "none": None,
        "date_like": "2024-01-01",
        "bools": [True, False, "yes", "null"],
        "numbers": [0.1, -0.0, 1e300, 2**62, -(2**63)],
        "empty": {"list": [], "map": {}, "text": ""},
        "odd": "ünï \x85 \u2028 \x00 --- ``` \n---\n",
        "nested": {"a": [1, {"b": None}], "keys": {"1": "one", "true": "t"}},
    }
    assert await store("put", ns, "prefs", value) is None
    item = await store("get", ns, "prefs")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (ns, "prefs", value)
    block = aster.recall(block_name(ns, "prefs"), track=False)
    assert item.created_at == datetime.fromisoformat(block.created_at)
    assert item.updated_at == datetime.fromisoformat(block.updated_at)
    assert item.created_at.tzinfo is not None and item.created_at.year >= 2024

    item.value["content"] = "changed by the caller"  # a copy: the store keeps its own
    assert [i.value for i in await store("search", ns)] == [value]
    [found] = await store("search", ns)
    found.value["content"] = "changed again"
    assert [i.value for i in await store("search", ns)] == [value]
    assert (await store("get", ns, "prefs")).value == value

    newer = {"content": "Ann drinks black tea now.", "tags": ["tea"]}
    await store("put", ns, "prefs", newer)
    again = await store("get", ns, "prefs")
    assert again.value == newer
    assert again.created_at == item.created_at and again.updated_at >= item.updated_at

    path = block_file(daemon, ns, "prefs")  # no repo_root: the global scope
    assert md_files(daemon) == [path]
    document = frontmatter.parse(path.read_text())
    assert document.meta["x_langgraph"] == {
        "namespace": ["users", "ann"],
        "key": "prefs",
        "value": newer,
    }
    assert document.meta["tags"] == ["langgraph"]
    assert document.meta["description"] == "LangGraph users/ann/prefs: Ann drinks black tea now."
    assert document.body.startswith("Ann drinks black tea now.\n")
    assert f"<!-- langgraph item {block_name(ns, 'prefs')} -->" in document.body
    assert await store("get", ns, "other") is None
    assert await store("get", ("users",), "prefs") is None
    assert list(aster.journal(op="memory.recall")) == []  # a get is not a recall


async def test_a_value_without_text_is_a_fenced_json_block(make: Make, daemon: Daemon) -> None:
    store = make()
    value = {"score": 3, "code": "```py\nx = 1\n```", "text": "   "}
    await store("put", ("scores",), "ann", value)
    body = frontmatter.parse(block_file(daemon, ("scores",), "ann").read_text()).body
    assert body.startswith("````json\n{\n") and '  "score": 3' in body
    assert "\n````\n" in body
    assert (await store("get", ("scores",), "ann")).value == value


async def test_delete_forgets_the_block_and_the_journal_brings_it_back(
    make: Make, daemon: Daemon, aster: Client
) -> None:
    store = make()
    ns, value = ("users", "bob"), {"content": "Bob is on call on Mondays."}
    await store("put", ns, "rota", value)
    path = block_file(daemon, ns, "rota")
    assert path.exists()
    await store("delete", ns, "rota")
    assert not path.exists() and await store("get", ns, "rota") is None
    await store("delete", ns, "rota")  # deleting what is not there is done
    await store("put", ns, "never-put", None)
    assert md_files(daemon) == []

    [entry] = [e for e in aster.journal(op="memory.delete") if e.name == path.stem]
    assert entry.revertible
    aster.revert(entry.id)
    assert (await store("get", ns, "rota")).value == value
    await store("put", ns, "rota", {"content": "Bob is on call on Fridays."})
    assert (await store("get", ns, "rota")).value == {"content": "Bob is on call on Fridays."}


async def test_items_in_different_namespaces_never_share_a_block(
    make: Make, daemon: Daemon
) -> None:
    store = make()
    places = [(("a", "b"), "c"), (("a-b",), "c"), (("a",), "b-c"), (("A", "B"), "C")]
    same = {"content": "The same words, everywhere."}  # the daemon merges equal bodies
    for ns, key in places:
        await store("put", ns, key, same)
    names = {block_name(ns, key) for ns, key in places}
    assert len(names) == 4 and all(n.startswith("lg-a-b-c-") for n in names)
    assert [p.stem for p in md_files(daemon)] == sorted(names)
    for ns, key in places:
        item = await store("get", ns, key)
        assert (item.namespace, item.key, item.value) == (ns, key, same)
    await store("delete", ("a", "b"), "c")
    assert await store("get", ("a", "b"), "c") is None
    assert (await store("get", ("a-b",), "c")).value == same
    assert len(md_files(daemon)) == 3


async def test_search_lists_filters_and_pages(make: Make, aster: Client) -> None:
    store = make()
    await store("put", ("docs", "a"), "k1", {"kind": "report", "score": 5})
    await store("put", ("docs", "a"), "k2", {"kind": "note", "score": 1})
    await store("put", ("docs", "b"), "k3", {"kind": "report", "score": 9, "meta": {"v": 2}})
    await store("put", ("docsx",), "k4", {"kind": "report", "score": 7})
    aster.remember("A block of someone else's, about docs.", name="docs")  # not an item

    async def keys(prefix: tuple[str, ...], **options: Any) -> list[str]:
        items = await store("search", prefix, **options)
        assert all(item.score is None for item in items)
        return [item.key for item in items]

    assert await keys(("docs",)) == ["k3", "k2", "k1"]  # newest first
    assert await keys(()) == ["k4", "k3", "k2", "k1"]
    assert await keys(("docs", "a")) == ["k2", "k1"]
    assert await keys(("docs",), filter={"kind": "report"}) == ["k3", "k1"]
    assert await keys(("docs",), filter={"score": {"$gt": 5}}) == ["k3"]
    assert await keys(("docs",), filter={"score": {"$gte": 5, "$lt": 9}}) == ["k1"]
    assert await keys((), filter={"kind": "report", "score": {"$lte": 7}}) == ["k4", "k1"]
    assert await keys((), filter={"kind": {"$ne": "report"}}) == ["k2"]
    assert await keys((), filter={"meta": {"v": 2}}) == ["k3"]
    assert await keys((), filter={"missing": 1}) == []
    assert await keys((), limit=2) == ["k4", "k3"]
    assert await keys((), limit=2, offset=2) == ["k2", "k1"]
    assert await keys((), offset=4) == []
    [item] = await store("search", ("docs", "b"))
    assert (item.namespace, item.value) == (
        ("docs", "b"),
        {"kind": "report", "score": 9, "meta": {"v": 2}},
    )


async def test_a_query_asks_the_daemons_memory_search(make: Make, aster: Client) -> None:
    store = make()
    await store("put", ("notes",), "tea", {"content": "Ann drinks green tea every morning."})
    await store("put", ("notes",), "deploy", {"content": "Deploys go through staging first."})
    await store("put", ("other",), "tea2", {"text": "Bob prefers tea too.", "n": 2})
    aster.remember("Tea is served at four.", name="tea-time")  # not an item

    hits = await store("search", ("notes",), query="What tea does Ann drink?")
    assert [hit.key for hit in hits] == ["tea"]
    assert hits[0].score is not None and hits[0].score > 0
    assert hits[0].value == {"content": "Ann drinks green tea every morning."}
    everywhere = await store("search", (), query="tea")
    assert sorted(hit.key for hit in everywhere) == ["tea", "tea2"]
    assert [h.key for h in await store("search", (), query="tea", filter={"n": 2})] == ["tea2"]
    assert len(await store("search", (), query="tea", limit=1)) == 1
    assert [h.key for h in await store("search", (), query="staging")] == ["deploy"]
    odd = await store("search", (), query='"unclosed AND ( NOT kind:nothing')  # never a 422
    assert odd == []
    assert len(await store("search", (), query="?!")) == 3  # no word: no query


async def test_list_namespaces_matches_prefixes_suffixes_and_depth(make: Make) -> None:
    store = make()
    spaces = [("users", "ann", "prefs"), ("users", "bob", "prefs"), ("users", "bob", "notes")]
    for ns in [*spaces, ("teams", "core")]:
        await store("put", ns, "k", {"v": 1})
    everything = sorted([*spaces, ("teams", "core")])
    assert await store("list_namespaces") == everything
    assert await store("list_namespaces", prefix=("users",)) == sorted(spaces)
    assert await store("list_namespaces", prefix=("users", "*", "prefs")) == sorted(spaces[:2])
    assert await store("list_namespaces", suffix=("prefs",)) == sorted(spaces[:2])
    assert await store("list_namespaces", suffix=("bob", "*")) == sorted(spaces[1:])
    assert await store("list_namespaces", max_depth=1) == [("teams",), ("users",)]
    assert await store("list_namespaces", prefix=("users",), max_depth=2) == [
        ("users", "ann"),
        ("users", "bob"),
    ]
    assert await store("list_namespaces", limit=2, offset=1) == everything[1:3]
    assert await store("list_namespaces", prefix=("nobody",)) == []


async def test_global_and_project_scopes_land_where_the_home_keeps_them(
    make: Make, daemon: Daemon, aster: Client, repo: str
) -> None:
    project, shared = make(repo), make()
    await project("put", ("global", "team"), "style", {"content": "Tabs, never spaces."})
    await project("put", ("users", "ann"), "prefs", {"content": "Ann likes tea."})
    await shared("put", ("users", "ann"), "prefs", {"content": "Ann likes coffee."})

    # by tag, a project's recall takes in global memory too: the project's own block
    [listed] = [b for b in aster.blocks(repo, tag="langgraph").items if b.scope != "global"]
    slug = listed.scope.removeprefix("project:")
    assert listed.scope.startswith("project:") and slug
    assert md_files(daemon) == sorted(
        [
            block_file(daemon, ("global", "team"), "style"),
            block_file(daemon, ("users", "ann"), "prefs"),  # the global store's
            block_file(daemon, ("users", "ann"), "prefs", slug),  # the project's
        ]
    )
    assert (await project("get", ("users", "ann"), "prefs")).value["content"] == "Ann likes tea."
    assert (await shared("get", ("users", "ann"), "prefs")).value["content"] == "Ann likes coffee."
    for store in (project, shared):
        team = await store("get", ("global", "team"), "style")
        assert team.value == {"content": "Tabs, never spaces."}
        assert await store("list_namespaces") == [("global", "team"), ("users", "ann")]
    [mine] = await project("search", ("users",))
    assert mine.value == {"content": "Ann likes tea."}
    assert [i.key for i in await project("search", ("global",))] == ["style"]
    assert sorted(i.value["content"] for i in await project("search", ())) == [
        "Ann likes tea.",
        "Tabs, never spaces.",
    ]
    assert [i.value["content"] for i in await shared("search", (), query="likes")] == [
        "Ann likes coffee."
    ]
    context = aster.context(repo).content  # what an agent of the project is given
    assert "LangGraph users/ann/prefs: Ann likes tea." in context
    assert "LangGraph global/team/style: Tabs, never spaces." in context


async def test_a_secret_is_refused_and_nothing_is_written(make: Make, daemon: Daemon) -> None:
    store = make()
    ns = ("users", "ann")
    await store("put", ns, "prefs", {"content": "Ann likes tea."})
    path = block_file(daemon, ns, "prefs")
    before = path.read_bytes()
    with pytest.raises(AsterStoreError) as refused:
        await store("put", ns, "prefs", {"content": "Ann likes tea.", "key": SECRET})
    assert refused.value.code == "secret_detected" and refused.value.status == 422
    assert "put users/ann/prefs" in str(refused.value) and SECRET not in str(refused.value)
    assert path.read_bytes() == before
    assert (await store("get", ns, "prefs")).value == {"content": "Ann likes tea."}
    with pytest.raises(AsterStoreError, match="secret"):
        await store("put", ns, "new", {"content": f"the key is {SECRET}"})
    assert md_files(daemon) == [path]


async def test_a_value_that_is_not_json_is_refused_before_anything_is_sent(
    make: Make, daemon: Daemon
) -> None:
    store = make()
    for bad in (datetime.now(UTC), 2**70, math.nan, {1: "int key"}, "\ud800", {"s": {1, 2}}):
        ops = [PutOp(("ok",), "first", {"v": 1}), PutOp(("ok",), "second", {"v": bad})]
        with pytest.raises(AsterStoreError) as refused:
            await store("batch", ops)
        assert refused.value.code == "invalid_value" and "ok/second" in str(refused.value)
    with pytest.raises(InvalidNamespaceError):
        await store("put", ("a.b",), "k", {"v": 1})
    with pytest.raises(NotImplementedError):
        await store("batch", [PutOp(("ok",), "k", {"v": 1}, ttl=5.0)])
    assert md_files(daemon) == []
    await store("put", ("ok",), "tuple", {"v": (1, 2)})  # a tuple is a JSON list
    assert (await store("get", ("ok",), "tuple")).value == {"v": [1, 2]}


async def test_a_bad_repo_root_or_no_daemon_is_a_clear_error(make: Make) -> None:
    with pytest.raises(AsterStoreError) as refused:
        await make("relative/repo")("put", ("users",), "k", {"v": 1})
    assert refused.value.code == "invalid_name" and refused.value.status == 422
    assert "repo_root" in str(refused.value)
    gone = make(url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(AsterStoreError) as unavailable:
        await gone("get", ("users",), "k")
    assert unavailable.value.code == "unavailable" and unavailable.value.status is None
    assert "could not get users/k" in str(unavailable.value)


async def test_an_archived_item_is_gone_and_in_the_way_until_restored(
    make: Make, aster: Client
) -> None:
    store = make()
    ns, value = ("users", "ann"), {"content": "Ann likes tea."}
    await store("put", ns, "prefs", value)
    name = block_name(ns, "prefs")
    aster.archive(name)
    assert await store("get", ns, "prefs") is None
    assert await store("search", ()) == [] and await store("list_namespaces") == []
    with pytest.raises(AsterStoreError) as refused:
        await store("put", ns, "prefs", {"content": "Ann likes coffee."})
    assert refused.value.code == "name_taken" and refused.value.status == 409
    assert f"aster-persist memory restore {name}" in str(refused.value)
    aster.restore(name)
    assert (await store("get", ns, "prefs")).value == value


async def test_a_change_made_elsewhere_is_seen(make: Make, aster: Client) -> None:
    mine, theirs = make(), make()
    await mine("put", ("users",), "ann", {"content": "Ann likes tea."})
    assert [i.value for i in await mine("search", ("users",))] == [{"content": "Ann likes tea."}]
    await theirs("put", ("users",), "ann", {"content": "Ann likes coffee."})
    assert [i.value for i in await mine("search", ("users",))] == [{"content": "Ann likes coffee."}]
    aster.put_block(block_name(("users",), "ann"), "---\ntags: [langgraph]\n---\nBy hand.\n")
    assert await mine("search", ("users",)) == []  # no longer names an item
    assert await mine("get", ("users",), "ann") is None


class Visit(TypedDict):
    user: str
    said: str
    seen: Annotated[list[str], operator.add]


def remembered(previous: Any, said: str) -> tuple[dict[str, Any], list[str]]:
    """What a visit stores, and what it saw of the visits before."""
    before = previous.value if previous is not None else {"count": 0, "said": []}
    value = {"count": before["count"] + 1, "said": [*before["said"], said]}
    return value, [f"visit {value['count']} after {before['said']}"]


async def test_a_graph_remembers_between_runs(
    make: Make, daemon: Daemon, aster: Client, repo: str
) -> None:
    handle = make(repo)

    def visit(state: Visit, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is not None
        ns = ("users", state["user"])
        value, seen = remembered(runtime.store.get(ns, "visits"), state["said"])
        runtime.store.put(ns, "visits", value)
        return {"seen": seen}

    async def avisit(state: Visit, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is not None
        ns = ("users", state["user"])
        value, seen = remembered(await runtime.store.aget(ns, "visits"), state["said"])
        await runtime.store.aput(ns, "visits", value)
        return {"seen": seen}

    graph = StateGraph(Visit)
    graph.add_node("visit", visit if handle.mode == "sync" else avisit)
    graph.add_edge(START, "visit")
    graph.add_edge("visit", END)
    app = graph.compile(store=handle.store)

    async def run(said: str) -> list[str]:
        state: Visit = {"user": "ann", "said": said, "seen": []}
        out = app.invoke(state) if handle.mode == "sync" else await app.ainvoke(state)
        return list(out["seen"])

    assert await run("hello") == ["visit 1 after []"]
    assert await run("again") == ["visit 2 after ['hello']"]
    item = await handle("get", ("users", "ann"), "visits")
    assert item.value == {"count": 2, "said": ["hello", "again"]}
    [block] = aster.blocks(repo, tag="langgraph").items
    assert block.name == block_name(("users", "ann"), "visits")
    assert md_files(daemon)[0].parent.parent.name == "projects"
