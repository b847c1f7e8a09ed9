"""The team's connection to NATS JetStream: one client connection, the stream the
machines publish their sessions to, and publishing that survives a leader's failover.

Subjects and headers (the team's contract, docs/TEAM.md):

- ``aster.sessions.<session id>``: every line of a shared session, header (seq 0) first,
  in order, on the stream ``ASTER_SESSIONS`` (file storage, as many replicas as the
  cluster has nodes, up to 3);
- ``Nats-Msg-Id: <session id>:<seq>``: the stream drops a line published twice;
- ``Nats-Expected-Last-Subject-Sequence``: the stream's sequence of the session's line
  before it, so no line is ever out of order or published by two machines;
- ``Aster-Machine``: the machine that owns the session; ``Aster-Seq``: the line's seq.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

log = logging.getLogger("aster_persist")

STREAM = "ASTER_SESSIONS"
SUBJECTS = "aster.sessions"
MACHINE = "Aster-Machine"
SEQ = "Aster-Seq"
# After a leader dies, JetStream answers "no responders" for several seconds (about 8
# here) while a new one is elected: a publish is retried, the same message id each time.
RETRY_FOR = 30.0
WRONG_LAST_SEQUENCE = 10071  # JetStream's error code: the subject's last sequence moved

T = TypeVar("T")


def subject_of(session_id: str) -> str:
    return f"{SUBJECTS}.{session_id}"


def connect_options(urls: list[str], credentials: Path | None) -> dict[str, Any]:
    """What ``nats.connect`` is given: the servers, and a credentials file (a user's JWT
    and seed, ``.creds``) or a token file; TLS comes from ``tls://`` addresses."""
    options: dict[str, Any] = {
        "servers": urls,
        "allow_reconnect": True,
        "max_reconnect_attempts": -1,  # a machine offline for a week comes back
        "reconnect_time_wait": 0.5,
        "connect_timeout": 2,
        "name": "aster-persist",
    }
    if credentials is not None:
        text = credentials.read_text(encoding="utf-8")
        if "BEGIN NATS USER JWT" in text:
            options["user_credentials"] = str(credentials)
        else:
            options["token"] = text.strip()
    return options


class Link:
    """One connection to the cluster and what the team keeps in it."""

    def __init__(self, urls: list[str], credentials: Path | None) -> None:
        self.urls = urls
        self.credentials = credentials
        self.nc: Any = None
        self.js: Any = None
        self.replicas = 0
        # called (on the loop) each time the connection is back after it was lost
        self.reconnected: list[Callable[[], Awaitable[None]]] = []

    @property
    def max_payload(self) -> int:
        """The largest message the servers take (1 MB unless they say otherwise)."""
        return int(getattr(self.nc, "max_payload", 0) or 1024 * 1024)

    @property
    def connected(self) -> bool:
        return self.nc is not None and bool(self.nc.is_connected)

    async def connect(self) -> None:
        """Connect (retrying until the cluster answers) and make sure the stream exists."""
        import nats

        options = connect_options(self.urls, self.credentials)
        self.nc = await nats.connect(**options, reconnected_cb=self._reconnected)
        self.js = self.nc.jetstream()
        await self.retrying(self._ensure_stream)

    async def _ensure_stream(self) -> None:
        from nats.js.api import StorageType, StreamConfig
        from nats.js.errors import NotFoundError

        try:
            info = await self.js.stream_info(STREAM)
            self.replicas = info.config.num_replicas or 1
            return
        except NotFoundError:
            pass
        for replicas in (3, 2, 1):  # as many as the cluster has nodes for
            config = StreamConfig(
                name=STREAM,
                subjects=[f"{SUBJECTS}.>"],
                storage=StorageType.FILE,
                num_replicas=replicas,
                duplicate_window=600.0,  # a retry after a failover is still a duplicate
            )
            try:
                await self.js.add_stream(config)
                self.replicas = replicas
                return
            except Exception as exc:
                refused = str(exc).lower()
                if replicas == 1 or not ("insufficient" in refused or "replicas" in refused):
                    raise  # only too few nodes for the replicas asked makes it try fewer
                log.warning("team: a stream of %d replicas was refused (%s)", replicas, exc)

    async def _reconnected(self) -> None:
        for call in self.reconnected:
            try:
                await call()
            except Exception:
                log.exception("team: after reconnecting")

    async def bucket(self, name: str) -> None:
        """Make sure the key-value bucket ``name`` exists, replicated as the stream is."""
        from nats.js.api import KeyValueConfig, StorageType
        from nats.js.errors import BucketNotFoundError

        try:
            await self.js.key_value(name)
        except BucketNotFoundError:
            config = KeyValueConfig(
                bucket=name, history=1, storage=StorageType.FILE, replicas=self.replicas or 1
            )
            await self.js.create_key_value(config)

    async def retrying(self, call: Callable[[], Awaitable[T]], within: float = RETRY_FOR) -> T:
        """``call()``, again while the cluster has no leader to answer (failover)."""
        from nats.errors import ConnectionClosedError, NoRespondersError
        from nats.errors import TimeoutError as NatsTimeout
        from nats.js.errors import NoStreamResponseError, ServiceUnavailableError

        deadline = time.monotonic() + within
        wait = 0.1
        while True:
            try:
                return await call()
            except (
                NoRespondersError,
                NoStreamResponseError,  # what js.publish makes of "no responders"
                NatsTimeout,
                ServiceUnavailableError,
                ConnectionClosedError,
                TimeoutError,
            ):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(wait)
                wait = min(wait * 2, 1.0)

    async def publish(
        self, session_id: str, seq: int, after: int, payload: bytes, machine: str
    ) -> int:
        """Publish a session's line ``seq`` after the subject's stream sequence ``after``;
        its own stream sequence (the same on a duplicate)."""
        headers = {
            "Nats-Msg-Id": f"{session_id}:{seq}",
            "Nats-Expected-Last-Subject-Sequence": str(after),
            MACHINE: machine,
            SEQ: str(seq),
        }
        subject = subject_of(session_id)
        ack = await self.retrying(lambda: self.js.publish(subject, payload, headers=headers))
        return int(ack.seq)

    async def last(self, session_id: str) -> tuple[int, int] | None:
        """The stream sequence and seq of a session's last line published, or None."""
        from nats.js.errors import NotFoundError

        try:
            msg = await self.retrying(lambda: self.js.get_last_msg(STREAM, subject_of(session_id)))
        except NotFoundError:
            return None
        return int(msg.seq), int((msg.headers or {}).get(SEQ, -1))

    async def close(self) -> None:
        if self.nc is not None:
            try:  # what is in flight is sent, for a moment at most
                await asyncio.wait_for(self.nc.drain(), 5)
            except Exception:  # closing: what could not be said is said on the next start
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.nc.close(), 2)
            self.nc = self.js = None
