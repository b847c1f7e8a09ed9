"""``AsterStore``: LangGraph's long-term memory store (``BaseStore``) kept as aster-persist
memory blocks, through the daemon's HTTP API (`aster_persist.client`).

Scopes: a namespace whose first label is ``"global"`` is kept in the global scope
(``<home>/memory/``), any other in the project scope of the store's ``repo_root``
(``<home>/memory/projects/<slug>/``; the global scope when it is None). A store sees an
item only in the scope it maps the item's namespace to.

Blocks: one per item, named ``lg-<readable>-<hash>`` (the labels but a leading
``global``, and the key, cut to a-z, 0-9 and '-'; then 16 hex digits of the SHA-256 of
``[namespace, key]`` as compact ASCII JSON), so items never share a block. The
frontmatter keeps ``x_langgraph: {namespace, key, value}`` exactly as put (the daemon
keeps a client's ``x_`` keys), the tag ``langgraph`` and a description
``LangGraph <namespace>/<key>: <first line>``. The body, for people, the prompt index
and search, is the value's ``content``, ``text`` or ``memory`` string, else the value as
fenced JSON, then a comment naming the block (so the daemon never merges two items that
say the same). ``get`` returns the frontmatter's value with the block's times.

Ops run in order. A put is one atomic block write; ``None`` forgets the block (journaled:
``POST /v1/journal/{id}/revert`` brings it back); a get is not counted as a recall; an
archived block is no item. A search lists the ``langgraph`` blocks of its scopes, newest
first, or with a query asks the daemon's memory search (its words only; BM25 raised by
recency; the best 100 hits; the daemon's score). Filters: equality, nested, ``$eq $ne
$gt $gte $lt $lte``. Blocks read are cached by ETag. A batch's values are all checked
first (JSON: 64-bit integers, finite floats, UTF-8 text); a refusal (a secret, a bad
``repo_root``, an archived block in the way) or no daemon raises ``AsterStoreError``,
the item left as it was; puts before a refused one stay written.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import json
import math
import os
import re
import unicodedata
from collections.abc import Generator, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import orjson
import yaml
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from ..client import ApiError, AsyncClient, Call, Client, NotFoundError, ServiceError
from ..client.endpoints import Endpoints
from ..schemas.memory import Block, BlockList, BlockRead, SavedBlock
from ..schemas.search import MemoryHits

__all__ = ["AsterStore", "AsterStoreError", "block_name"]

GLOBAL = "global"  # a namespace's first label that names the global scope
TAG = "langgraph"  # the tag of every block this store writes
PREFIX = "lg-"  # and the start of their names
FIELD = "x_langgraph"  # the frontmatter key: {namespace, key, value}
TEXT_KEYS = ("content", "text", "memory")  # a value's text, made the block's body
HITS = 100  # the most hits the daemon's memory search gives
PAGE = 1000  # the largest page of a block listing

T = TypeVar("T")
Root = str | None  # the repo_root a scope is named by; None for the global scope
Steps = Generator[Call[Any], Any, T]  # requests to send; each reply is sent back in


class AsterStoreError(Exception):
    """A refusal: ``code`` is the daemon's (``secret_detected``, ``invalid_name``,
    ``name_taken``…, with its HTTP ``status``), ``unavailable`` (no daemon) or
    ``invalid_value`` (not JSON); the client's error, if any, is the ``__cause__``."""

    def __init__(self, message: str, *, code: str, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class AsterStore(BaseStore):
    """A LangGraph store over aster-persist memory blocks (see the module's docstring).

    ``repo_root`` names the project whose scope every namespace not starting with
    ``"global"`` goes to (None: the global scope). ``url`` and ``token`` reach the daemon
    as the client does (ASTER_URL, ASTER_TOKEN, the home's token file); ``client`` and
    ``async_client`` are used instead when given (and not closed by ``close``).
    """

    def __init__(
        self,
        repo_root: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        timeout: float = 60,
        client: Client | None = None,
        async_client: AsyncClient | None = None,
    ) -> None:
        self.repo_root: Root = None if repo_root is None else os.fspath(repo_root)
        self._url, self._token, self._timeout = url, token, timeout
        self._client = client
        self._own_client = client is None
        self._given_async = async_client
        self._async: tuple[asyncio.AbstractEventLoop, AsyncClient] | None = None
        self._seen: dict[tuple[Root, str], tuple[str, Item | None]] = {}  # by ETag

    # -- BaseStore ----------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order with the blocking client."""
        steps, reply, error = self._batch(ops), None, None
        while isinstance(call := _advance(steps, reply, error), Call):
            try:
                reply, error = self._sync().run(call), None
            except ServiceError as exc:
                reply, error = None, exc
        return call

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order with the asyncio client."""
        steps, reply, error = self._batch(ops), None, None
        while isinstance(call := _advance(steps, reply, error), Call):
            try:
                reply, error = await self._asynchronous().run(call), None
            except ServiceError as exc:
                reply, error = None, exc
        return call

    # -- clients ------------------------------------------------------------------------

    def _sync(self) -> Client:
        if self._client is None:
            self._client = Client(self._url, self._token, timeout=self._timeout)
        return self._client

    def _asynchronous(self) -> AsyncClient:
        """The given async client, else one of this store's own for the running loop
        (an httpx client cannot move from one event loop to another)."""
        if self._given_async is not None:
            return self._given_async
        loop = asyncio.get_running_loop()
        if self._async is None or self._async[0] is not loop:
            self._async = (loop, AsyncClient(self._url, self._token, timeout=self._timeout))
        return self._async[1]

    def close(self) -> None:
        """Close the blocking client this store made (one given is left open)."""
        if self._client is not None and self._own_client:
            self._client.close()
            self._client = None

    async def aclose(self) -> None:
        """Close the asyncio client this store made for the running loop, and the
        blocking one."""
        if self._async is not None and self._async[0] is asyncio.get_running_loop():
            await self._async[1].close()
        self._async = None
        self.close()

    def __enter__(self) -> AsterStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> AsterStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the operations, written once: each yields the calls it needs ---------------

    def _batch(self, ops: Iterable[Op]) -> Steps[list[Result]]:
        ops = list(ops)
        values = [_checked(op) for op in ops]  # every value, before anything is sent
        results: list[Result] = []
        for op, value in zip(ops, values, strict=True):
            try:
                if isinstance(op, GetOp):
                    results.append((yield from self._get(tuple(op.namespace), op.key)))
                elif isinstance(op, PutOp):
                    yield from self._put(tuple(op.namespace), op.key, value)
                    results.append(None)
                elif isinstance(op, SearchOp):
                    results.append((yield from self._search(op)))
                else:
                    results.append((yield from self._namespaces(op)))
            except ServiceError as exc:
                raise _refused(exc, op) from exc
        return results

    def _root(self, namespace: tuple[str, ...]) -> Root:
        """The scope a namespace is kept in, as the repo_root that names it."""
        return None if namespace[:1] == (GLOBAL,) else self.repo_root

    def _roots(self, prefix: tuple[str, ...]) -> list[Root]:
        """The scopes that can hold a namespace starting with ``prefix`` ("*": any label)."""
        if self.repo_root is None:
            return [None]
        if not prefix or prefix[0] == "*":
            return [None, self.repo_root]
        return [self._root(prefix)]

    def _get(self, namespace: tuple[str, ...], key: str) -> Steps[Item | None]:
        root, name = self._root(namespace), block_name(namespace, key)
        item = yield from self._item(root, name, None)
        if item is None or item.namespace != namespace or item.key != key:
            return None
        return copy.deepcopy(item)  # the caller may change it; the cache keeps its own

    def _put(
        self, namespace: tuple[str, ...], key: str, value: dict[str, Any] | None
    ) -> Steps[None]:
        root, name = self._root(namespace), block_name(namespace, key)
        self._seen.pop((root, name), None)
        if value is None:
            with contextlib.suppress(NotFoundError):  # what is not there is deleted
                yield Endpoints.forget.build(name, root)
            return None
        text = render(namespace, key, value)
        saved: SavedBlock = yield Endpoints.put_block.build(name, text, root)
        self._seen[(root, name)] = (saved.etag, _item_in(saved, namespace, key, value))
        return None

    def _search(self, op: SearchOp) -> Steps[list[SearchItem]]:
        prefix = tuple(op.namespace_prefix)
        words = " ".join(w.lower() for w in re.findall(r"\w+", op.query or ""))
        found: list[tuple[Item, float | None]] = []
        if words:
            hits: MemoryHits = yield Endpoints.search_memory.build(words, self.repo_root, k=HITS)
            for hit in hits.items:
                root = None if hit.scope == GLOBAL else self.repo_root
                if hit.kind == "block" and hit.name.startswith(PREFIX):
                    item = yield from self._item(root, hit.name, hit.etag)
                    if item is not None and self._root(item.namespace) == root:
                        found.append((item, hit.score))
        else:
            for item in (yield from self._items(self._roots(prefix))):
                found.append((item, None))
            found.sort(key=lambda f: (f[0].updated_at, f[0].namespace, f[0].key), reverse=True)
        matched = [
            (item, score)
            for item, score in found
            if item.namespace[: len(prefix)] == prefix and _matches(item.value, op.filter or {})
        ]
        return [
            SearchItem(i.namespace, i.key, copy.deepcopy(i.value), i.created_at, i.updated_at, s)
            for i, s in matched[op.offset : op.offset + op.limit]
        ]

    def _namespaces(self, op: ListNamespacesOp) -> Steps[list[tuple[str, ...]]]:
        conditions = op.match_conditions or ()
        prefix = next((tuple(c.path) for c in conditions if c.match_type == "prefix"), ())
        spaces = {
            item.namespace
            for item in (yield from self._items(self._roots(prefix)))
            if all(_does_match(c, item.namespace) for c in conditions)
        }
        if op.max_depth is not None:
            spaces = {namespace[: op.max_depth] for namespace in spaces}
        return sorted(spaces)[op.offset : op.offset + op.limit]

    def _items(self, roots: list[Root]) -> Steps[list[Item]]:
        """Every item this store sees in the scopes of ``roots``."""
        items: list[Item] = []
        for root in roots:
            for block in (yield from self._blocks(root)):
                item = yield from self._item(root, block.name, block.etag)
                if item is not None and self._root(item.namespace) == root:
                    items.append(item)
        return items

    def _blocks(self, root: Root) -> Steps[list[Block]]:
        """The live blocks of a scope that this store wrote (by tag and name)."""
        blocks: list[Block] = []
        cursor: str | None = None
        while True:
            page: BlockList = yield Endpoints.blocks.build(root, tag=TAG, limit=PAGE, cursor=cursor)
            blocks += [b for b in page.items if b.name.startswith(PREFIX)]
            if not page.next_cursor:
                return blocks
            cursor = page.next_cursor

    def _item(self, root: Root, name: str, etag: str | None) -> Steps[Item | None]:
        """The item a block holds (None when it is not one): from the cache while its
        ETag is ``etag``, else read (not counted as a recall) and cached."""
        seen = self._seen.get((root, name))
        if seen is not None and seen[0] == etag:
            return seen[1]
        try:
            block: BlockRead = yield Endpoints.recall.build(name, root, track=False)
        except NotFoundError:  # not there, or forgotten since it was listed
            self._seen.pop((root, name), None)
            return None
        self._seen[(root, name)] = (block.etag, item_of(block))
        return self._seen[(root, name)][1]


# -- blocks: names, documents, items ------------------------------------------------------


def block_name(namespace: tuple[str, ...], key: str) -> str:
    """The block an item is kept in: ``lg-<readable>-<hash>`` (see the module)."""
    ident = json.dumps([list(namespace), key], ensure_ascii=True, separators=(",", ":"))
    digest = hashlib.sha256(ident.encode()).hexdigest()[:16]
    labels = namespace[1:] if namespace[:1] == (GLOBAL,) else namespace
    text = unicodedata.normalize("NFKD", "-".join((*labels, key))).encode("ascii", "ignore")
    readable = re.sub(r"[^a-z0-9]+", "-", text.decode().lower()).strip("-")[:44].strip("-")
    return f"{PREFIX}{readable}-{digest}" if readable else f"{PREFIX}{digest}"


def render(namespace: tuple[str, ...], key: str, value: dict[str, Any]) -> str:
    """The markdown file of an item: frontmatter with the item, a body for people."""
    text = next((v for k in TEXT_KEYS if isinstance(v := value.get(k), str) and v.strip()), None)
    if text is None:
        dumped = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
        fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", dumped)), default=0))
        body = f"{fence}json\n{dumped}\n{fence}"
    else:
        body = text.rstrip("\n")
    lines = (text or "").splitlines()
    first = next((ln.strip().lstrip("#").strip() for ln in lines if ln.strip()), "")
    where = "/".join((*namespace, key))
    meta = {
        "description": " ".join(f"LangGraph {where}{': ' if first else ''}{first}"[:200].split()),
        "type": "semantic",
        "tags": [TAG],
        FIELD: {"namespace": list(namespace), "key": key, "value": value},
    }
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=10_000)
    return f"---\n{front}---\n{body}\n\n<!-- langgraph item {block_name(namespace, key)} -->\n"


def item_of(block: BlockRead) -> Item | None:
    """The item a block holds, or None when its frontmatter does not name the item the
    block's name is made from (a block of someone else's, a copy, a broken hand edit)."""
    kept = block.metadata.get(FIELD)
    if not isinstance(kept, dict):
        return None
    namespace, key, value = kept.get("namespace"), kept.get("key"), kept.get("value")
    if not (
        isinstance(namespace, list)
        and all(isinstance(label, str) for label in namespace)
        and isinstance(key, str)
        and isinstance(value, dict)
        and block.name == block_name(tuple(namespace), key)
    ):
        return None
    return _item_in(block, namespace, key, value)


def _item_in(block: Block, namespace: Iterable[str], key: str, value: dict[str, Any]) -> Item:
    """An item with the times of the block it is kept in (UTC when they name no zone)."""
    times = {"created_at": _time(block.created_at), "updated_at": _time(block.updated_at)}
    return Item(value=value, key=key, namespace=tuple(namespace), **times)


def _advance(
    steps: Steps[list[Result]], reply: Any, error: Exception | None
) -> Call[Any] | list[Result]:
    """Send a reply (or throw a refusal) into the steps: the next call, or the results."""
    try:
        return steps.send(reply) if error is None else steps.throw(error)
    except StopIteration as done:
        results: list[Result] = done.value
        return results


def _time(text: str) -> datetime:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return datetime.fromtimestamp(0, UTC)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


# -- checks, before anything is sent ------------------------------------------------------


def _checked(op: Op) -> dict[str, Any] | None:
    """A put's value as plain JSON (None for any other op; labels are checked by the
    BaseStore methods, and any label is safe here: namespaces are kept verbatim)."""
    if not isinstance(op, GetOp | PutOp | SearchOp | ListNamespacesOp):
        raise ValueError(f"not a store operation: {type(op).__name__}")
    if not isinstance(op, PutOp) or op.value is None:
        return None
    if op.ttl is not None:
        raise NotImplementedError("AsterStore keeps items until they are deleted: no TTL")
    where = "/".join(map(str, (*op.namespace, op.key)))
    if not op.namespace or not isinstance(op.value, Mapping):
        raise AsterStoreError(f"{where}: an item is a mapping in a namespace", code="invalid_value")
    _plain([*op.namespace, op.key], where)
    value: dict[str, Any] = _plain(op.value, where)
    return value


def _plain(value: Any, where: str) -> Any:
    """``value`` as JSON (tuples become lists); AsterStoreError for anything else."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and _utf8(value):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**64:
        return int(value)
    if isinstance(value, float) and math.isfinite(value):
        return float(value)
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {k: _plain(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    why = f"{value!r:.60} is not JSON text, a 64-bit integer, a finite float, a list or a mapping"
    raise AsterStoreError(f"{where}: {why}", code="invalid_value")


def _utf8(text: str) -> bool:
    """False for text holding lone surrogates, which no file can carry."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _refused(exc: ServiceError, op: Op) -> AsterStoreError:
    """The store's error for a refusal (or an absence) of the daemon during ``op``."""
    doing = "list namespaces"
    if isinstance(op, GetOp | PutOp):
        verb = "get" if isinstance(op, GetOp) else "put" if op.value is not None else "delete"
        doing = f"{verb} {'/'.join((*op.namespace, op.key))}"
    elif isinstance(op, SearchOp):
        doing = f"search {'/'.join(op.namespace_prefix) or 'every namespace'}"
    if not isinstance(exc, ApiError):
        return AsterStoreError(f"could not {doing}: {exc}", code="unavailable")
    hint = ""
    if exc.code == "name_taken" and isinstance(op, PutOp):
        hint = f" (`aster-persist memory restore {block_name(tuple(op.namespace), op.key)}`)"
    message = f"aster-persist refused to {doing}: {exc.detail or exc.title}{hint}"
    return AsterStoreError(message, code=exc.code, status=exc.status)


def _matches(value: Any, wanted: Mapping[str, Any]) -> bool:
    """Whether a value has every key of a filter (see ``_compare``)."""
    return isinstance(value, dict) and all(_compare(value.get(k), w) for k, w in wanted.items())


def _compare(found: Any, wanted: Any) -> bool:
    """Equality, nested mappings key by key, lists element by element, and the operators
    ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte`` (as LangGraph's own stores)."""
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(found, str(k), v) for k, v in wanted.items())
        return _matches(found, wanted)
    if isinstance(wanted, list | tuple):
        return (
            isinstance(found, list)
            and len(found) == len(wanted)
            and all(_compare(f, w) for f, w in zip(found, wanted, strict=True))
        )
    return bool(found == wanted)


def _operator(found: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(found == operand)
    if operator == "$ne":
        return bool(found != operand)
    if operator not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"unsupported filter operator: {operator}")
    try:
        a, b = float(found), float(operand)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric value is not in any range
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[operator]


def _does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether a namespace starts (``prefix``) or ends (``suffix``) with a path, "*"
    matching any one label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "suffix":
        namespace, path = namespace[::-1], path[::-1]
    elif condition.match_type != "prefix":
        raise ValueError(f"unsupported match type: {condition.match_type}")
    return all(p in ("*", label) for label, p in zip(namespace, path, strict=False))
