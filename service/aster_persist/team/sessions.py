"""Sessions across a team: this machine publishes the sessions it owns in shared
projects, every line in order and exactly once, after it is durable here; and keeps a
read-only copy of every other machine's, under the same id and seqs.

Publishing. Each append to an owned, shared session marks it; a task publishes what
the stream does not have yet, line by line after the last one it has (asked of the
stream once a run for each session, then followed from the acknowledgements), with the
line's id as the message id and the subject's last sequence as a precondition: a line
is never published twice or out of order, even by a daemon restarted mid-way or by two
daemons that both think they own a session. Secrets found in a line are redacted in
what is published (the owner keeps the exact transcript).

Copies. One durable consumer per machine (``aster-<machine>``) reads the stream from
where this machine left off: a session's header makes its copy (its ``machine`` the
owner's), its next line is appended to it, a line it already holds is skipped; each
message is acknowledged once what it brought is durable here. A machine back from a week
offline, or new, catches up from the stream in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import AsterError, SessionExists, SessionOwnedElsewhere
from ..secrets.redact import redacted
from .link import MACHINE, STREAM, SUBJECTS, Link

if TYPE_CHECKING:
    from ..services.sessions import Sessions
    from ..services.sessions.parts import Appended

log = logging.getLogger("aster_persist")

BATCH = 256  # messages fetched at once
MAX_DELIVER = 30  # times a message is offered before it is given up (reported in the status)
RETRY_DELAY = 5.0  # seconds before a message that could not be taken yet is offered again
_TOKEN = re.compile(r"[^A-Za-z0-9_-]")
# fields of a header that the copy's create takes by name; the rest go as they are
_NAMED = ("repo_root", "cwd", "model", "aster_version", "title", "created_at", "project_key")
# (an alias names one live session of a machine: a copy does not take it there)
# what a line too large to share keeps, beside a note where it is kept: still a valid event
_STUB = ("type", "seq", "ts", "role", "tool_call_id", "name")
_NOT_APPENDED = ("seq", "batch_size", "idempotency_key")  # what the copy's writer sets
_NOT_COPIED = {
    "type",
    "seq",
    "id",
    "v",
    "idempotency_key",
    "batch_size",
    "base",
    "machine",
    "alias",
}


def durable_name(machine: str) -> str:
    """A consumer's name for a machine (letters, digits, ``-`` and ``_`` only)."""
    return "aster-" + _TOKEN.sub("_", machine)


class SessionShare:
    """Publishes this machine's shared sessions and applies the others'."""

    def __init__(
        self,
        link: Link,
        sessions: Sessions,
        machine: str,
        shared: Callable[[str], bool],
        key_of: Callable[[str], str | None],
    ) -> None:
        self.link = link
        self.sessions = sessions
        self.machine = machine
        self.shared = shared  # whether a repository root's sessions are shared
        self.key_of = key_of  # a repository root's project key (team/projects.py)
        self._marked: set[str] = set()
        self._wake = asyncio.Event()
        self._after: dict[str, tuple[int, int]] = {}  # session: (stream seq, seq) published
        self._decided: dict[str, bool] = {}  # session: its project shared
        self._offset: dict[str, int] = {}  # session: bytes of its file published
        self.published = 0  # lines published by this run
        self.applied = 0  # lines of other machines' sessions taken into copies
        self.machines: dict[str, float] = {}  # machine: when a line of it was last seen
        self.lag_ms: list[float] = []  # the last few: published there to applied here
        self.waiting_out = 0  # sessions with lines not yet published
        self.problems: dict[str, str] = {}  # session: why it is not shared on (the status)

    # -- publishing ----------------------------------------------------------------------

    def appended(self, notice: Appended) -> None:
        """A listener of durable appends (event loop)."""
        if notice.machine is not None:
            return  # another machine's lines, copied here: never published again
        self._marked.add(notice.session_id)
        self._wake.set()

    def mark(self, session_ids: list[str]) -> None:
        self._marked.update(session_ids)
        self._wake.set()

    async def publish_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            marked, self._marked = self._marked, set()
            self.waiting_out = len(marked)
            for sid in sorted(marked):
                try:
                    await self._publish(sid)
                except AsterError:
                    continue  # gone meanwhile (deleted, purged): nothing to publish
                except Exception as exc:  # the cluster away too long: again later
                    log.warning("team: could not publish session %s yet (%s)", sid, exc)
                    self._marked.add(sid)
                    self._after.pop(sid, None)  # asked of the stream again next time
                    self._offset.pop(sid, None)  # and read whole
                    await asyncio.sleep(1)
                    self._wake.set()
                self.waiting_out = max(0, self.waiting_out - 1)

    async def _shared(self, sid: str, repo_root: str) -> bool:
        decided = self._decided.get(sid)
        if decided is None:
            decided = await asyncio.to_thread(self.shared, repo_root)
            self._decided[sid] = decided
        return decided

    async def _publish(self, sid: str) -> None:
        """Publish what the stream does not have of ``sid``: read whole the first time in
        a run (a copy of another session's start is read with it), then only the bytes
        acknowledged since."""
        offset = self._offset.get(sid)
        held = self.sessions.open_summary(sid)
        whole = offset is None or held is None or held[0] < offset
        if not whole and held is not None and offset is not None:
            if held[1].machine not in (None, self.machine):
                return  # another machine's, copied here
            lines, end = await asyncio.to_thread(
                self.sessions.read_span, sid, offset, held[0], inline=True
            )
            root = held[1].repo_root
        else:
            lines, _raw, info = await self.sessions.read(sid)
            end, root = info.offset, info.repo_root
            header = lines[0] if lines else {}
            if header.get("machine") not in (None, self.machine):
                return  # another machine's, copied here
        if not await self._shared(sid, root):
            return
        after = self._after.get(sid)
        if after is None:
            after = await self.link.last(sid) or (0, -1)
        stream_seq, seq = after
        numbered = [line for line in lines if isinstance(line.get("seq"), int)]
        if whole and numbered and seq > numbered[-1]["seq"]:
            # the stream holds lines this file no longer has (a restored backup, a power
            # loss in interval mode): publishing on would part the copies from it
            self.problems[sid] = (
                f"the team holds up to line {seq}, this machine's transcript only up to "
                f"{numbered[-1]['seq']}: not published further"
            )
            return
        for line in numbered:
            if line["seq"] <= seq:
                continue
            if line["seq"] != seq + 1:  # a hole (lines set aside by a repair): stop there
                self.problems[sid] = f"line {seq + 1} is missing here: not published further"
                return
            if line["seq"] == 0:  # the header says its project, for every machine's paths
                key = await asyncio.to_thread(self.key_of, str(line.get("repo_root") or ""))
                line = {**line, "project_key": key} if key else line
            payload = orjson.dumps(redacted(line))
            if len(payload) > self.link.max_payload:  # larger than the servers take: what
                note = f"[{len(payload)} bytes: too large to share; kept on {self.machine}]"
                kept = {k: line[k] for k in _STUB if k in line}  # a valid event says so
                payload = orjson.dumps({**kept, "content": note})
            stream_seq = await self.link.publish(
                sid, line["seq"], stream_seq, payload, self.machine
            )
            seq = line["seq"]
            self._after[sid] = (stream_seq, seq)
            self.published += 1
        self._offset[sid] = end
        self.problems.pop(sid, None)  # all of it is published

    # -- copies ------------------------------------------------------------------------

    async def consume_forever(self) -> None:
        from nats.errors import TimeoutError as FetchTimeout
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

        config = ConsumerConfig(
            durable_name=durable_name(self.machine),
            deliver_policy=DeliverPolicy.ALL,
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=60,
            max_ack_pending=40 * BATCH,  # those waiting to be offered again count too
            # a message that cannot be taken is tried again a while later, a bounded number
            # of times, so one session never holds up the rest
            max_deliver=MAX_DELIVER,
        )
        sub = await self.link.retrying(
            lambda: self.link.js.pull_subscribe(
                f"{SUBJECTS}.>", durable=config.durable_name, stream=STREAM, config=config
            )
        )
        while True:
            try:
                messages = await sub.fetch(BATCH, timeout=1)
            except (TimeoutError, FetchTimeout):
                continue
            except Exception as exc:  # the cluster away: keep asking
                log.debug("team: fetch failed (%s)", exc)
                await asyncio.sleep(0.5)
                continue
            await self._apply(messages)

    async def _apply(self, messages: list[Any]) -> None:
        """Take a fetched batch into copies, each session's run of lines in one append;
        acknowledge each message once what it brought is durable (or held already), end
        one that can never be taken, and ask again later for one that cannot be yet."""
        runs: dict[str, list[tuple[dict[str, Any], Any]]] = {}
        arrived: dict[str, float] = {}  # session: when its run's last line reached the stream
        for msg in messages:
            try:
                owner = (msg.headers or {}).get(MACHINE)
                if owner is None or owner == self.machine:
                    await msg.ack()
                    continue
                line = orjson.loads(msg.data)
                if not isinstance(line, dict) or not isinstance(line.get("seq"), int):
                    raise ValueError("not a line of a transcript")
            except Exception as exc:  # not ours to read: never delivered again
                log.warning("team: a message on %s was ended (%s)", msg.subject, exc)
                with contextlib.suppress(Exception):
                    await msg.term()
                continue
            self.machines[owner] = time.time()
            sid = msg.subject.rsplit(".", 1)[-1]
            runs.setdefault(sid, []).append((line, msg))
            with contextlib.suppress(Exception):  # the stream's own time of arrival
                arrived[sid] = msg.metadata.timestamp.timestamp()
        for sid, run in runs.items():
            run.sort(key=lambda pair: int(pair[0]["seq"]))
            owner = str((run[0][1].headers or {})[MACHINE])
            try:
                held = await self._take(sid, owner, [line for line, _ in run])
            except SessionOwnedElsewhere as exc:  # the id is another machine's here: never
                self.problems[sid] = f"not copied from {owner}: {exc.detail}"
                for _line, msg in run:
                    with contextlib.suppress(Exception):
                        await msg.term()
                continue
            except Exception as exc:  # a disk full, a header not taken yet: again later
                log.warning("team: could not copy session %s from %s (%s)", sid, owner, exc)
                self.problems[sid] = f"not copied from {owner} yet: {exc}"
                held = -1
            for line, msg in run:
                with contextlib.suppress(Exception):
                    if line["seq"] <= held:
                        await msg.ack()
                    else:  # after a line not here yet: delivered again a while later
                        await msg.nak(delay=RETRY_DELAY)
            if held >= run[-1][0]["seq"]:
                self.problems.pop(sid, None)
            elif sid not in self.problems:  # lines after one that has not come
                self.problems[sid] = (
                    f"line {held + 1} of {owner}'s session has not come: the lines after it "
                    "are offered again for a while"
                )
            if sid in arrived:
                self.lag_ms = [*self.lag_ms[-99:], (time.time() - arrived[sid]) * 1000]

    async def _take(self, sid: str, owner: str, lines: list[dict[str, Any]]) -> int:
        """Append to the copy of ``sid`` the lines that follow on from what it holds;
        the seq it holds up to after (-1: none, not even its header)."""
        header = next((line for line in lines if line["seq"] == 0), None)
        if header is not None and await self.sessions.last_seq(sid) is None:
            with contextlib.suppress(SessionExists):  # made meanwhile (a redelivery)
                await self.sessions.create(
                    actor="team",
                    session_id=sid,
                    machine=owner,
                    **{k: header[k] for k in _NAMED if header.get(k) is not None},
                    extra={
                        k: v for k, v in header.items() if k not in _NOT_COPIED and k not in _NAMED
                    },
                )
        have = await self.sessions.last_seq(sid)
        if have is None:
            return -1
        events: list[dict[str, Any]] = []
        for line in lines:
            seq = line["seq"]
            if seq <= have + len(events):
                continue  # held already
            if seq != have + len(events) + 1:
                break  # a line before it has not come yet
            events.append({k: v for k, v in line.items() if k not in _NOT_APPENDED})
        if events:
            await self.sessions.append(sid, events, learn=False, machine=owner)
            self.applied += len(events)
        return have + len(events)

    @property
    def pending_out(self) -> int:
        """Sessions of this machine with lines still to publish (as far as is known)."""
        return self.waiting_out + len(self._marked)
