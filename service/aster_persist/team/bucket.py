"""The memory bucket on the wire (docs/TEAM.md): its keys, its values, and the four
things a machine does with it.

``ASTER_MEMORY`` is a JetStream key-value bucket. A key is
``p.<first 24 hex of sha256(project key)>.<block name>`` (``_core`` for ``ASTER.md``); a
value is the file as JSON (``project_key``, ``name``, ``machine``, ``state`` live or
archived, ``text`` or ``base64``); a removal is the bucket's delete marker carrying the
same fields without the bytes. ``Bucket`` sets a value only over the revision given
(``Moved`` otherwise), reads a key's last value, lists the keys, and tells of every
value set by anyone.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from ..schemas.names import NAME_RE, project_slug
from ..storage.memory import CORE
from ..storage.memory.sharing import ARCHIVED, LIVE, NONE, Version
from .link import Link

BUCKET = "ASTER_MEMORY"
PREFIX = f"$KV.{BUCKET}."
CORE_KEY = "_core"
_WRONG_LAST = (10071, 10164)  # JetStream: the subject's last sequence is not the expected


class Moved(Exception):
    """The team's version is no longer the one this machine agreed on."""

    def __init__(self, machine: str | None) -> None:
        super().__init__(machine)
        self.machine = machine


@dataclass(frozen=True)
class Remote:
    """A key's last version in the bucket (revision 0: never set)."""

    revision: int = 0
    version: Version = NONE
    machine: str | None = None
    project_key: str | None = None
    name: str | None = None
    readable: bool = True  # False: a value not of this contract (left alone, written over)


def key_for(project_key: str, name: str) -> str:
    digest = hashlib.sha256(project_key.encode("utf-8")).hexdigest()[:24]
    return f"p.{digest}.{CORE_KEY if name == CORE else name}"


GLOBAL = "global"  # the key of global memory, shared only when the settings say so


def scope_for(project_key: str) -> str:
    """A shared project's memory scope: named by its key, the same on every machine."""
    return GLOBAL if project_key == GLOBAL else "project:" + project_slug(project_key)


def envelope(project_key: str, name: str, machine: str, version: Version) -> bytes:
    value: dict[str, Any] = {"project_key": project_key, "name": name, "machine": machine}
    if version.state and version.data is not None:
        value["state"] = version.state
        try:
            value["text"] = version.data.decode("utf-8")
        except UnicodeDecodeError:
            value["base64"] = base64.b64encode(version.data).decode("ascii")
    return orjson.dumps(value)


def remote_of(revision: int, data: bytes, deleted: bool, key: str | None = None) -> Remote:
    """What a message of the bucket (under ``key``) says. A value that is not of this
    contract, or names another key than its own, is not readable."""
    try:
        value = orjson.loads(data) if data else {}
        if not isinstance(value, dict):
            value = {}
    except orjson.JSONDecodeError:
        value = {}
    name = value.get("name")
    name = name if isinstance(name, str) and (name == CORE or NAME_RE.fullmatch(name)) else None
    project = value.get("project_key")
    project = project if isinstance(project, str) and project else None
    machine = value.get("machine") if isinstance(value.get("machine"), str) else None
    version = NONE
    state = value.get("state")
    if not deleted and state in (LIVE, ARCHIVED):
        if isinstance(value.get("text"), str):
            version = Version(state, value["text"].encode("utf-8"))
        elif isinstance(value.get("base64"), str):
            with contextlib.suppress(ValueError):
                version = Version(state, base64.b64decode(value["base64"], validate=True))
    readable = deleted or bool(version.state)
    if readable and key is not None and project is not None and name is not None:
        readable = key_for(project, name) == key
    elif not deleted:
        readable = False
    return Remote(revision, version, machine, project, name, readable)


class Bucket:
    """The team's memory bucket, through one connection (loop)."""

    def __init__(self, link: Link) -> None:
        self.link = link

    async def ensure(self) -> None:
        await self.link.bucket(BUCKET)

    async def put(self, key: str, value: bytes, last: int, *, removed: bool = False) -> int:
        """Set ``value`` (or the delete marker carrying it) over revision ``last`` (0: a key
        never set); its revision. ``Moved`` (naming who set the one there) otherwise."""
        from nats.js.errors import APIError

        headers = {"Nats-Expected-Last-Subject-Sequence": str(last)}
        if removed:
            headers["KV-Operation"] = "DEL"
        try:
            ack = await self.link.js.publish(PREFIX + key, value, headers=headers)
        except APIError as exc:
            if exc.err_code in _WRONG_LAST:
                raise Moved((await self.get(key)).machine) from None
            raise
        return int(ack.seq)

    async def get(self, key: str) -> Remote:
        from nats.js.errors import NotFoundError

        try:
            msg = await self.link.js.get_last_msg(f"KV_{BUCKET}", PREFIX + key)
        except NotFoundError:
            return Remote()
        operation = (msg.headers or {}).get("KV-Operation")
        return remote_of(int(msg.seq), msg.data or b"", operation in ("DEL", "PURGE"), key)

    async def keys(self) -> set[str]:
        info = await self.link.js.stream_info(f"KV_{BUCKET}", subjects_filter=PREFIX + ">")
        return {subject[len(PREFIX) :] for subject in (info.state.subjects or {})}

    async def watch(self, noticed: Callable[[str, str | None], Awaitable[None]]) -> None:
        """``noticed(key, machine)`` for every value set from now on, by anyone."""

        async def told(msg: Any) -> None:
            machine = remote_of(0, msg.data or b"", False).machine
            await noticed(msg.subject[len(PREFIX) :], machine)

        await self.link.nc.subscribe(PREFIX + ">", cb=told)
