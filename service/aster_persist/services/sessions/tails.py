"""What session tails read from a transcript (worker threads): a piece of acknowledged
lines, the line a tail starts from, and where the acknowledged lines end."""

from __future__ import annotations

from typing import Any

from ...errors import SessionNotFound
from ...storage import fs
from ...storage.blobs import BlobStore
from ...storage.home import Home
from ...storage.transcripts import TranscriptStore

TAIL_STEP = 16 * 1024  # bytes a session tail reads back at a time to find where it starts


class TailReads:
    """The reads of one data home's transcripts that live session tails make."""

    def __init__(self, home: Home, store: TranscriptStore, blobs: BlobStore) -> None:
        self.home = home
        self.store = store
        self.blobs = blobs

    def check(self, session_id: str) -> None:
        """Refuse a tail of a session that is not live (``SessionNotFound``) or whose
        transcript is a link (``UnsafePath``), before its stream starts."""
        fs.check(self.store.live_path(session_id))

    def read_piece(
        self, session_id: str, offset: int, until: int
    ) -> tuple[list[dict[str, Any]], int]:
        """The acknowledged lines from byte ``offset`` to ``until``, large contents put
        back, and the offset after them."""
        lines, end = self.store.read_tail(session_id, offset, until)
        return self.blobs.inline(lines)[0], end

    def line_before(self, session_id: str, seq: int, before: int) -> int:
        """A line boundary, at most ``before``, that no event past ``seq`` comes before:
        pieces are read back from ``before`` in doubling steps, so what is read is about
        twice what follows that line, not the transcript."""
        step = TAIL_STEP
        while True:
            start = max(0, before - step)
            lines, end = self.store.read_tail(session_id, start, min(before, start + TAIL_STEP))
            seqs = [s for line in lines if isinstance(s := line.get("seq"), int)]
            if seqs and seqs[-1] <= seq:
                return end
            if start == 0:
                return 0
            step *= 2

    def tail_end(self, session_id: str) -> tuple[int, int]:
        """The offset past the last acknowledged line, and the seq of the last event
        (-1: none), read back from the end of the file."""
        found = self.store.content_size(session_id)  # what a compressed one holds
        if found is None:
            raise SessionNotFound(f"no session {session_id}")
        size = found[0]
        step = TAIL_STEP
        while True:
            lines, end = self.store.read_tail(session_id, max(0, size - step), size)
            seqs = [s for line in lines if isinstance(s := line.get("seq"), int)]
            if seqs or step >= size:
                return end, seqs[-1] if seqs else -1
            step *= 2
