"""The Server-Sent Events the live streams send: each feed item and each transcript
event is encoded once, and a tail's reads of a transcript are kept as blocks of
encoded events that every follower of the session shares."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate, pairwise
from typing import Any

import orjson


class Item:
    """One event of the feed; encoded as a Server-Sent Event once, when first sent."""

    __slots__ = ("_encoded", "data", "event_id", "kind")

    def __init__(self, kind: str, data: dict[str, Any], event_id: str | None = None) -> None:
        self.kind = kind
        self.data = data
        self.event_id = event_id
        self._encoded: bytes | None = None

    @property
    def encoded(self) -> bytes:
        if self._encoded is None:
            self._encoded = encode(self.kind, self.data, self.event_id)
        return self._encoded


def encode(kind: str, data: dict[str, Any], event_id: str | None = None) -> bytes:
    head = f"id: {event_id}\r\n" if event_id is not None else ""
    return f"{head}event: {kind}\r\ndata: ".encode() + orjson.dumps(data) + b"\r\n\r\n"


@dataclass(eq=False)
class Block:
    """The events of one read of a transcript, ``start`` to ``end``, encoded and joined."""

    start: int
    end: int
    seqs: list[int]
    joined: bytes
    cuts: list[int]  # where each event ends in ``joined``
    rising: bool  # each seq above the one before

    def after(self, sent: int) -> tuple[list[bytes], int]:
        """The events past seq ``sent``, each above the one before, and the last seq."""
        out, begin = [], 0
        for seq, cut in zip(self.seqs, self.cuts, strict=True):
            if seq > sent:
                sent = seq
                out.append(self.joined[begin:cut])
            begin = cut
        return out, sent


def block_of(lines: list[dict[str, Any]], start: int, end: int) -> Block:
    """The events among ``lines`` (the header and lines without a seq left out)."""
    seqs, events = [], []
    for line in lines:
        seq = line.get("seq")
        if isinstance(seq, int) and line.get("type") != "session":
            seqs.append(seq)
            events.append(encode("event", line, str(seq)))
    rising = all(a < b for a, b in pairwise(seqs))
    cuts = list(accumulate(len(event) for event in events))
    return Block(start, end, seqs, b"".join(events), cuts, rising)


def events_after(lines: list[dict[str, Any]], sent: int) -> tuple[bytes, int]:
    """``lines``' events past seq ``sent``, each above the one before, and the last seq."""
    out = []
    for line in lines:
        seq = line.get("seq")
        if isinstance(seq, int) and seq > sent and line.get("type") != "session":
            sent = seq
            out.append(encode("event", line, str(seq)))
    return b"".join(out), sent
