"""Memory across a team: a shared project's ``ASTER.md`` and blocks are one version on
every machine, kept in the key-value bucket ``ASTER_MEMORY`` (bucket.py). A key's
revision is the version's number; the bytes are the same on every machine, so are the
ETags.

A write made here (``writing``, on the writer thread) is set in the bucket first, at the
revision this machine last agreed on (the stream's expected last subject sequence): of
two machines writing one version, one is set and the other answers 412 with nothing
written. When the cluster cannot be reached within ``WAIT``, the write is made here and
marked pending. A change made without ``writing`` (by hand, a revert) is pending too.

Settling a key (on the loop, each write of another machine, each pending one, every key
on connecting and every ``SWEEP`` seconds, ``AGAIN`` while something waits): when the
team has nothing new, what changed here is set in the bucket at the agreed revision; when the team has a new version and
nothing changed here, it is put in place (``actor`` team, the owner in ``detail``); when
both changed, the team's version is put in place as ``memory.conflict`` whose ``before``
keeps this machine's version: never a silent overwrite. It is listed in
``/v1/memory/review``, and reverting it (or accepting it there) sets this machine's
version in the team again. The revision each file was last agreed at is kept in
``team.json`` in the home; lost, every file is settled again and nothing is overwritten.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import AsterError, PreconditionFailed
from ..secrets import found_in
from ..storage import fs
from ..storage.memory import CORE
from ..storage.memory.sharing import ARCHIVED, Version
from .bucket import GLOBAL, Bucket, Moved, Remote, envelope, key_for, scope_for
from .link import Link

if TYPE_CHECKING:
    from ..services.memory import Memory
    from ..storage.memory.versions import Versions
    from .projects import ProjectKeys

log = logging.getLogger("aster_persist")

WAIT = 2.0  # seconds a write waits for the cluster before it is made here, pending
SWEEP = 30.0  # seconds between two settlings of every key
AGAIN = 2.0  # the same, while something waits to be set or the last settling failed


class MemoryShare:
    """This machine's shared memory and the versions it agreed on with the team."""

    def __init__(
        self,
        link: Link,
        memory: Memory,
        machine: str,
        *,
        keys: ProjectKeys,
        shared: Callable[[str], bool],
        state: Path,
        share_global: bool = False,
    ) -> None:
        self.link = link
        self.bucket = Bucket(link)
        self.machine = machine
        self._memory = memory
        self._keys = keys
        self._shared = shared
        self._state = state
        self._lock = threading.Lock()
        self._scopes: dict[str, str] = {}  # scope: project key
        self._where: dict[str, tuple[str, str]] = {}  # bucket key: (scope, name)
        self._agreed_at: dict[str, tuple[int, str]] = {}  # bucket key: (revision, token)
        self.pending: set[str] = set()
        self.problems: dict[str, str] = {}  # bucket key: why it is not taken in as it is
        self.sent = self.applied = self.conflicts = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = False
        self._queue: asyncio.Queue[str] | None = None
        self._settling: dict[str, asyncio.Lock] = {}
        self._wake = asyncio.Event()
        self._load()
        self._global = share_global
        if share_global:
            self._scopes[GLOBAL] = GLOBAL
        else:  # (shared once, maybe): what is global here is this machine's alone now
            self._scopes.pop(GLOBAL, None)

    # -- what was agreed, kept in team.json ------------------------------------------

    def _load(self) -> None:
        try:
            data = fs.read_or_none(self._state)
            saved = orjson.loads(data) if data else {}
        except Exception as exc:  # lost or unreadable: every file is settled again
            log.warning("team: %s is not readable (%s); memory is settled again", self._state, exc)
            saved = {}
        for scope, project in (saved.get("scopes") or {}).items():
            self._scopes[str(scope)] = str(project)
        for key, (revision, token, scope, name) in (saved.get("memory") or {}).items():
            self._agreed_at[key] = (int(revision), str(token))
            self._where[key] = (str(scope), str(name))

    def _save(self) -> None:
        """Under the lock."""
        memory = {
            key: [revision, token, *self._where[key]]
            for key, (revision, token) in self._agreed_at.items()
            if key in self._where
        }
        fs.atomic_write(self._state, orjson.dumps({"scopes": self._scopes, "memory": memory}))

    def _agree(self, key: str, revision: int, token: str) -> None:
        with self._lock:
            if revision < self._agreed_at.get(key, (0, ""))[0]:
                return  # a later version was agreed meanwhile
            self._agreed_at[key] = (revision, token)
            self.pending.discard(key)
            self.problems.pop(key, None)
            self._save()

    # -- what memory's files ask (any thread) ------------------------------------------

    def scope_of(self, repo_root: str) -> str | None:
        if not self._shared(repo_root):
            return None
        # a project named in the settings that is no repository here: known by its path
        project = self._keys.of(repo_root) or f"path:{repo_root}"
        scope = scope_for(project)
        with self._lock:
            if self._scopes.get(scope) != project:
                self._scopes[scope] = project
                self._save()
        return scope

    def _key(self, scope: str, name: str) -> str | None:
        project = self._scopes.get(scope)
        if project is None:
            return None
        key = key_for(project, name)
        self._where[key] = (scope, name)
        return key

    def changed(self, scope: str, name: str) -> None:
        key = self._key(scope, name)
        if key is not None:
            self._pend(key)

    @contextlib.contextmanager
    def writing(self, scope: str, name: str, before: Version, after: Version) -> Iterator[None]:
        key = self._key(scope, name)
        revision = None if key is None else self._set_first(key, scope, name, after)
        try:
            yield
        except BaseException:
            if key is not None and revision is not None:  # not made here: the team's back
                back = self._set_first(key, scope, name, before, last=revision, strict=False)
                if back is not None:
                    self._agree(key, back, before.token)
                else:  # the team holds it still: what is here is set again when it can be
                    self._agree(key, revision, after.token)
                    self._pend(key)
            raise
        if key is None:
            return
        if revision is None:
            self._pend(key)
        else:
            self._agree(key, revision, after.token)

    def _set_first(
        self,
        key: str,
        scope: str,
        name: str,
        version: Version,
        *,
        last: int | None = None,
        strict: bool = True,
    ) -> int | None:
        """Set ``version`` in the bucket at the agreed revision (writer thread); its
        revision, or None when the cluster does not answer in time (pending)."""
        loop = self._loop
        if loop is None or not self._ready or not self.link.connected:
            return None
        with contextlib.suppress(RuntimeError):
            if asyncio.get_running_loop() is loop:
                return None  # never wait on the loop from the loop
        if _secret(version):  # a file edited by hand with a secret: never sent
            return None
        if last is None:
            last = self._agreed_at.get(key, (0, ""))[0]
        call = self._publish(key, scope, name, version, last)
        future = asyncio.run_coroutine_threadsafe(call, loop)
        try:
            return future.result(WAIT)
        except Moved as exc:
            if not strict:
                return None
            where = f"on {exc.machine}" if exc.machine else "by another machine"
            what = CORE if name == CORE else f"block {name!r}"
            raise PreconditionFailed(
                f"{what} was changed {where} since the version this machine holds; "
                "read it again (the team's version arrives here in a moment)"
            ) from None
        except Exception as exc:
            future.cancel()
            log.warning("team: %s not set in the team yet (%s); pending", key, exc)
            return None

    def _pend(self, key: str) -> None:
        self.pending.add(key)
        loop, queue = self._loop, self._queue
        if loop is not None and queue is not None:
            loop.call_soon_threadsafe(queue.put_nowait, key)

    async def _publish(self, key: str, scope: str, name: str, version: Version, last: int) -> int:
        project = self._scopes[scope]
        value = envelope(project, name, self.machine, version)
        return await self.bucket.put(key, value, last, removed=not version.state)

    async def run(self) -> None:
        """Once connected: the bucket, the notices of other machines' writes, then every
        key settled, and again on each reconnect and every ``SWEEP`` seconds."""
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        await self.link.retrying(self.bucket.ensure)
        await self.bucket.watch(self._noticed)
        self._ready = True
        self.link.reconnected.append(self._sweep_soon)
        for key in list(self.pending):
            self._queue.put_nowait(key)
        worker = asyncio.get_running_loop().create_task(self._work())
        try:
            while True:  # soon again while something waits or the last pass failed
                settled = await self._quietly(self.settle_all())
                with contextlib.suppress(TimeoutError):
                    wait = SWEEP if settled and not self.pending else AGAIN
                    await asyncio.wait_for(self._wake.wait(), wait)
                self._wake.clear()
        finally:
            self._ready = False
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker

    async def _sweep_soon(self) -> None:
        self._wake.set()

    async def _noticed(self, key: str, machine: str | None) -> None:
        if machine == self.machine:
            return  # this machine's own write: agreed when it was set
        if self._queue is not None:
            self._queue.put_nowait(key)
            # the notice can outrun the stream's copy: looked at once more a moment later
            asyncio.get_running_loop().call_later(0.3, self._queue.put_nowait, key)

    async def _work(self) -> None:
        assert self._queue is not None
        while True:
            key = await self._queue.get()
            await self._quietly(self.settle(key))

    async def _quietly(self, work: Any) -> bool:
        try:
            await work
            return True
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the cluster away: settled again in a moment
            log.warning("team: memory not settled yet (%s)", exc)
            return False

    async def settle_all(self) -> None:
        """Settle every key the bucket or this machine has."""
        keys = await self.link.retrying(self.bucket.keys)
        scopes = set(self._scopes)
        here = await self._memory.with_versions(lambda versions: versions.names(scopes))
        for scope, name in here:
            key = self._key(scope, name)
            if key is not None:
                keys.add(key)
        failed = None
        for key in sorted(keys | set(self._agreed_at)):
            try:  # one key's trouble holds up no other
                await self.settle(key)
            except Exception as exc:
                failed = exc
        if failed is not None:
            raise failed

    async def settle(self, key: str) -> None:
        """Make this machine and the team agree on one key: see the module's text."""
        async with self._settling.setdefault(key, asyncio.Lock()):
            for _ in range(5):
                try:
                    if await self._settle_once(key):
                        return
                except AsterError as exc:  # never taken as it is (a secret in it): said
                    where = self._where.get(key, ("", key))
                    self.problems[key] = f"{where[1]} of {where[0]}: {exc.detail}"
                    return

    async def _settle_once(self, key: str) -> bool:
        """One try; False when the team moved while this machine's change was sent."""
        remote = await self.link.retrying(partial(self.bucket.get, key), within=5)
        if remote.project_key == GLOBAL and not self._global:
            return True  # another machine's global memory: not taken in here
        if remote.readable and remote.project_key is not None and remote.name is not None:
            scope = scope_for(remote.project_key)
            with self._lock:
                if scope not in self._scopes:
                    self._scopes[scope] = remote.project_key
                    self._save()
            self._where[key] = (scope, remote.name)
        where = self._where.get(key)
        if where is None:
            return True  # removed before this machine ever had it
        push = await self._memory.with_versions(partial(self._settle_here, key, where, remote))
        if push is None:
            return True
        version, last = push
        try:
            publish = partial(self._publish, key, where[0], where[1], version, last)
            revision = await self.link.retrying(publish, within=5)
        except Moved:
            return False  # settled again, on the team's version
        self._agree(key, revision, version.token)
        self.sent += 1
        return True

    def _settle_here(
        self, key: str, where: tuple[str, str], remote: Remote, versions: Versions
    ) -> tuple[Version, int] | None:
        """Writer thread: put the team's new version in place (a conflict when this
        machine changed the file too), or say what to set in the team."""
        scope, name = where
        here = versions.of(scope, name)
        revision, token = self._agreed_at.get(key, (0, ""))
        if here.token != token and _secret(here):  # edited by hand: it stays here, whole
            self.problems[key] = f"{name} of {scope} holds a secret: kept here, not shared"
            with self._lock:
                self.pending.discard(key)
            return None
        if not remote.readable and remote.revision > revision:  # not ours: written over
            if here.token != token:
                return here, remote.revision
            self._agree(key, remote.revision, here.token)
            self.problems[key] = f"{name} of {scope}: the team holds a value that is not ours"
            return None
        if remote.revision <= revision:  # nothing new from the team
            if here.token == token:
                with self._lock:
                    self.pending.discard(key)
                return None
            return here, revision
        if here.token == remote.version.token:
            self._agree(key, remote.revision, here.token)
            return None
        detail: dict[str, Any] = {"machine": remote.machine, "revision": remote.revision}
        if here.token != token:  # changed here too: the team's wins, this one kept
            op = "memory.conflict"
            detail["reason"] = (
                f"changed here and on {remote.machine or 'another machine'}; this machine's "
                "version is this entry's before: revert it to keep that one"
            )
            self.conflicts += 1
        else:
            op = _op(here, remote.version)
        versions.put(scope, name, remote.version, op=op, actor="team", detail=detail)
        self._agree(key, remote.revision, remote.version.token)
        self.applied += 1
        return None

    def status(self) -> dict[str, Any]:
        return {
            "shared_projects": len(set(self._scopes.values())),
            "pending": len(self.pending),
            "conflicts": self.conflicts,
            "sent": self.sent,
            "applied": self.applied,
            "problems": sorted(self.problems.values()),
        }


def _secret(version: Version) -> bool:
    return version.data is not None and bool(found_in(version.data))


def _op(here: Version, there: Version) -> str:
    """The journal's name for putting ``there`` in the place of ``here``."""
    if not there.state:
        return "memory.delete"
    if not here.state:
        return "memory.write"
    if here.state != there.state:
        return "memory.archive" if there.state == ARCHIVED else "memory.restore"
    return "memory.edit"
