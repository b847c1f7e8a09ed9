"""Optional semantic search: a small local embedding model ranks documents by meaning,
and that ranking is fused with BM25's by weight (reciprocal rank fusion).

The model is a sentence-embedding transformer run by ONNX Runtime (``encoder.py``),
read from files on disk; nothing is downloaded at run time. Vectors live in memory,
owned by the catalog thread like the database they are derived from: built in the
background from the transcript documents (by their never-reused number) and kept beside
the catalog for the next start (``Vectors``); for memory, from each file's text, kept by
its ETag. numpy arrives with the extra; this module is imported only when the setting is
on.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ..errors import UnsafePath
from ..storage import fs
from . import ann
from .ann import Ann
from .encoder import Encoder
from .sqlite import sqlite3

log = logging.getLogger("aster_persist")

MAX_CHARS = 2000  # of a document embedded (the model reads its first 256 tokens)
# Cosine similarity below which a document is not taken as near in meaning: related texts
# score 0.3 and more with the default model, unrelated ones around 0 to 0.15.
MIN_SIMILARITY = 0.2


class Vectors:
    """Vectors of the catalog's documents; used on the catalog thread only.

    They are kept beside the catalog in ``vectors.bin`` (derived data, like it): a line
    naming the catalog they belong to (its generation, made when it was created) and the
    format, then one record a document: its number and its vector in half precision,
    appended as documents are embedded, rewritten when removed ones are dropped. A file
    of another catalog or format, or out of order, is started again; a record cut short
    is left out."""

    def __init__(self, embedder: Encoder, weight: float) -> None:
        self.embedder = embedder
        self.weight = weight  # of the semantic ranking in the fusion; BM25's is 1 - weight
        self.rowids = np.zeros(0, dtype=np.int64)
        self.matrix = np.zeros((0, embedder.dim), dtype=np.float32)
        self.size = 0  # rows of the arrays in use (they grow by doubling)
        self.last = 0  # the highest document number embedded
        self.epoch = 0  # changed each time they are started again (numbers mean others)
        self.memory: dict[tuple[str, str], tuple[str, np.ndarray]] = {}  # by ETag
        self.memory_checked = 0  # how many were kept when removed blocks were last let go
        self.path: Path | None = None  # where they are kept, once attached
        self.header = b""
        self.generation = ""  # the catalog's they were made for
        # the graph for searches by meaning at scale (``ann.py``), once there are enough
        # vectors; ``linked``: how many of them (in order) it holds
        self.ann: Ann | None = None
        self.linked = 0
        self.record = np.dtype([("rowid", "<i8"), ("vector", "<f2", (embedder.dim,))])

    def attach(self, db: sqlite3.Connection, path: Path) -> int:
        """Take up the vectors kept at ``path`` for this catalog; how many there were."""
        generation = db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]
        self.path = path
        self.generation = str(generation)
        self.header = orjson.dumps(
            {
                "format": 2,
                "generation": generation,
                "model": self.embedder.identity,
                "dim": self.embedder.dim,
                "dtype": "<f2",
            }
        )
        self.header += b"\n"
        try:
            data = fs.read_or_none(path) or b""
        except UnsafePath as exc:  # a link or a pipe: it holds nothing of ours
            log.warning("%s; it is removed and made again", exc.detail)
            fs.unlink(path)  # the name only: a link's target is untouched
            data = b""
        except Exception as exc:  # unreadable: started again
            log.warning("semantic vectors in %s cannot be read (%s)", path, exc)
            data = b""
        body = data[len(self.header) :] if data.startswith(self.header) else b""
        whole = len(body) // self.record.itemsize * self.record.itemsize
        records = np.frombuffer(body[:whole], dtype=self.record)
        ids = records["rowid"]
        newest = self._newest(db)
        if len(ids) and (np.any(np.diff(ids) <= 0) or ids[0] <= 0 or ids[-1] > newest):
            records = records[:0]  # not this catalog's numbers after all
        self.size = self.last = 0
        self.epoch += 1
        self._append(records["rowid"].copy(), records["vector"].astype(np.float32))
        self.last = int(records["rowid"][-1]) if len(records) else 0
        if len(records) * self.record.itemsize != len(data) - len(self.header):
            self._rewrite()  # started again, or a record cut short left out
        self.ann, self.linked = None, 0
        if self.size >= ann.SMALLEST:  # the graph kept beside them, if it is theirs
            graph = ann.Ann(self.embedder.dim)
            if graph.load(self._graph_path(), self._stamp()):
                self.ann, self.linked = graph, self.size
        return len(records)

    def _graph_path(self) -> Path:
        assert self.path is not None
        return self.path.with_name("vectors.ann")

    def _stamp(self) -> dict[str, object]:
        """What the graph is built from: this catalog's vectors, up to the last one."""
        return {"generation": self.generation, "last": self.last, "size": self.size}

    def link(self) -> int:
        """Add the next vectors to the graph (made once there are enough of them), a step
        at a time; how many were added (0: it holds them all, or none is needed). Kept
        beside the catalog once it holds them all."""
        if self.size < ann.SMALLEST or self.linked >= self.size:
            return 0
        if self.ann is None:
            self.ann, self.linked = ann.Ann(self.embedder.dim), 0
        end = min(self.size, self.linked + ann.STEP)
        self.ann.add(self.rowids[self.linked : end], self.matrix[self.linked : end])
        added, self.linked = end - self.linked, end
        if self.linked == self.size and self.path is not None:
            self.ann.save(self._graph_path(), self._stamp())
        return added

    def _newest(self, db: sqlite3.Connection) -> int:
        row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'docs'").fetchone()
        return int(row[0]) if row else 0

    def _keep(self, rowids: np.ndarray, vectors: np.ndarray) -> None:
        """Append records to the file (no sync: derived data, checked when read)."""
        if self.path is None:
            return
        records = np.empty(len(rowids), dtype=self.record)
        records["rowid"], records["vector"] = rowids, vectors
        try:
            fd = fs.open_file(self.path, os.O_WRONLY | os.O_APPEND)
            try:
                fs.write_all(fd, records.tobytes())
            finally:
                os.close(fd)
        except Exception as exc:  # a link refused, a full disk: search goes on from memory,
            log.warning("semantic vectors cannot be kept in %s (%s)", self.path, exc)
            self.path = None  # and the next start embeds again

    def _rewrite(self) -> None:
        """The file again, with the vectors in memory."""
        if self.path is None:
            return
        records = np.empty(self.size, dtype=self.record)
        records["rowid"], records["vector"] = self.rowids[: self.size], self.matrix[: self.size]
        try:
            fs.atomic_write(self.path, self.header + records.tobytes(), sync=False)
        except Exception as exc:
            log.warning("semantic vectors cannot be kept in %s (%s)", self.path, exc)
            self.path = None

    def pending(self, db: sqlite3.Connection) -> int:
        """Documents not embedded yet."""
        self._check_numbers(db)
        return int(
            db.execute("SELECT count(*) FROM docs WHERE rowid > ?", (self.last,)).fetchone()[0]
        )

    def step(
        self,
        db: sqlite3.Connection,
        texts: Callable[[list[int]], dict[int, str]],
        batch: int = 32,
        *,
        compact: bool = True,
        link: bool = True,
    ) -> int:
        """Embed the next ``batch`` documents in order (their ``texts`` read back from the
        transcripts); how many there were. With none left, drop the vectors of removed
        documents if ``compact``, then (if ``link``) add the next vectors to the graph."""
        epoch, numbers, found = self.next_batch(db, texts, batch)
        if not numbers:
            return self.settle(db, compact=compact, link=link)
        return self.add(db, epoch, numbers, self.embedder.embed(found))

    def settle(self, db: sqlite3.Connection, *, compact: bool, link: bool = True) -> int:
        """With every document embedded: drop the vectors of removed documents if
        ``compact``, then (if ``link``) add the next vectors to the graph; how many."""
        if compact:
            self._compact(db)
        return self.link() if link else 0

    def catch_up(
        self, db: sqlite3.Connection, texts: Callable[[list[int]], dict[int, str]], budget: float
    ) -> None:
        """Embed documents waiting, a few at a time, for at most ``budget`` seconds."""
        deadline, took = time.monotonic() + budget, 0.0
        while True:
            started = time.monotonic()
            if started + took > deadline:  # the next few would end past it
                return
            if not self.step(db, texts, 4, compact=False, link=False):
                return
            took = time.monotonic() - started

    def next_batch(
        self, db: sqlite3.Connection, texts: Callable[[list[int]], dict[int, str]], batch: int
    ) -> tuple[int, list[int], list[str]]:
        """The next ``batch`` documents to embed, in order, and their texts, with the
        vectors' epoch (it changes when they are started again)."""
        self._check_numbers(db)
        numbers = [
            int(r)
            for (r,) in db.execute(
                "SELECT rowid FROM docs WHERE rowid > ? ORDER BY rowid LIMIT ?",
                (self.last, batch),
            )
        ]
        found = texts(numbers) if numbers else {}
        return self.epoch, numbers, [found.get(r, "")[:MAX_CHARS] for r in numbers]

    def add(
        self, db: sqlite3.Connection, epoch: int, numbers: list[int], vectors: np.ndarray
    ) -> int:
        """Take the ``vectors`` of the documents ``numbers`` (a batch ``next_batch`` gave
        in ``epoch``, embedded meanwhile); those taken already, or numbered before the
        vectors were started again, are let go. How many were taken."""
        self._check_numbers(db)
        if epoch != self.epoch:
            return 0
        rowids = np.array(numbers, dtype=np.int64)
        wanted = rowids > self.last
        rowids, vectors = rowids[wanted], vectors[wanted]
        if not len(rowids):
            return 0
        self._append(rowids, vectors)
        if self.ann is not None and self.linked == self.size - len(rowids):
            self.ann.add(rowids, vectors)  # (a graph being built takes them in its turn)
            self.linked = self.size
        self.last = int(rowids[-1])
        self._keep(rowids, vectors)
        return len(rowids)

    def _check_numbers(self, db: sqlite3.Connection) -> None:
        """A catalog rebuilt from the files numbers its documents from 1 again."""
        if self._newest(db) < self.last:
            self.size, self.last = 0, 0
            self.epoch += 1
            self.ann, self.linked = None, 0
            self._rewrite()

    def _append(self, rowids: np.ndarray, vectors: np.ndarray) -> None:
        need = self.size + len(rowids)
        if need > len(self.rowids):
            capacity = max(need, 2 * len(self.rowids), 1024)
            grown_ids = np.zeros(capacity, dtype=np.int64)
            grown = np.zeros((capacity, self.embedder.dim), dtype=np.float32)
            grown_ids[: self.size] = self.rowids[: self.size]
            grown[: self.size] = self.matrix[: self.size]
            self.rowids, self.matrix = grown_ids, grown
        self.rowids[self.size : need] = rowids
        self.matrix[self.size : need] = vectors
        self.size = need

    def _compact(self, db: sqlite3.Connection) -> None:
        """Drop the vectors of removed documents once they are a fifth of them."""
        if self.size < 1024:
            return
        live = int(db.execute("SELECT count(*) FROM docs").fetchone()[0])
        if live >= 0.8 * self.size:
            return
        kept = np.isin(
            self.rowids[: self.size],
            np.fromiter((r for (r,) in db.execute("SELECT rowid FROM docs")), dtype=np.int64),
        )
        count = int(kept.sum())
        self.rowids[:count] = self.rowids[: self.size][kept]
        self.matrix[:count] = self.matrix[: self.size][kept]
        self.size = count
        self.ann, self.linked = None, 0  # made again from those kept
        self._rewrite()

    def nearest(
        self,
        text: str,
        keep: Callable[[list[int]], set[int]],
        *,
        only: set[int] | None = None,
        pool: int,
        batch: int,
    ) -> list[int]:
        """The ``pool`` documents nearest ``text`` (at least ``MIN_SIMILARITY``) that
        ``keep`` keeps (it is asked for ``batch`` candidates at a time, best first), of
        ``only`` when given."""
        query = self.embedder.ask(text)
        if self.size == 0 or not query.any():
            return []
        if only is None and self.ann is not None and self.linked == self.size:
            near = self._nearest_in_graph(query, keep, pool=pool, batch=batch)
            if near is not None:
                return near
        rowids = self.rowids[: self.size]
        similarity = self.matrix[: self.size] @ query
        mask = similarity >= MIN_SIMILARITY
        if only is not None:
            mask &= np.isin(rowids, np.fromiter(only, dtype=np.int64))
        rowids, similarity = rowids[mask], similarity[mask]
        found: list[int] = []
        for order in self._best_first(similarity, 4 * pool):
            for start in range(0, len(order), batch):
                asked = [int(r) for r in rowids[order[start : start + batch]]]
                kept = keep(asked)
                found.extend(r for r in asked if r in kept)
                if len(found) >= pool:
                    return found[:pool]
        return found

    def _nearest_in_graph(
        self, query: np.ndarray, keep: Callable[[list[int]], set[int]], *, pool: int, batch: int
    ) -> list[int] | None:
        """``nearest`` through the graph: its best candidates, four times as many as asked
        and more while ``keep`` lets too few through; None (search them all) past
        ``ann.WIDEST`` candidates, when the filters keep almost nothing."""
        assert self.ann is not None
        count = 4 * pool
        while True:
            rowids, similarity = self.ann.search(query, count)
            wanted = rowids[similarity >= MIN_SIMILARITY]
            found: list[int] = []
            for start in range(0, len(wanted), batch):
                asked = [int(r) for r in wanted[start : start + batch]]
                kept = keep(asked)
                found.extend(r for r in asked if r in kept)
                if len(found) >= pool:
                    return found[:pool]
            if len(wanted) < len(rowids) or len(rowids) < count:
                return found  # every candidate as near as asked for was weighed
            if count >= ann.WIDEST:
                return None
            count *= 4

    @staticmethod
    def _best_first(similarity: np.ndarray, first: int) -> Iterator[np.ndarray]:
        """Positions by similarity, best first: the ``first`` best sorted (without
        sorting them all), then, if asked for, the rest."""
        if first >= len(similarity):
            yield np.argsort(-similarity, kind="stable")
            return
        best = np.argpartition(-similarity, first - 1)[:first]
        yield best[np.argsort(-similarity[best], kind="stable")]
        rest = np.ones(len(similarity), dtype=bool)
        rest[best] = False
        others = np.flatnonzero(rest)
        yield others[np.argsort(-similarity[others], kind="stable")]

    def memory_order(
        self,
        text: str,
        docs: list[tuple[tuple[str, str], str, str]],
        present: Callable[[], set[tuple[str, str]]],
    ) -> list[Any]:
        """Memory documents ``(key, etag, text)`` nearest ``text`` first (their keys);
        each document's vector is kept until its ETag changes, or until it is no longer
        ``present`` (asked once a thousand more are kept)."""
        query = self.embedder.ask(text)
        if not docs or not query.any():
            return []
        stale = [d for d in docs if self.memory.get(d[0], ("",))[0] != d[1]]
        for (key, etag, _), vector in zip(
            stale, self.embedder.embed([t for _, _, t in stale]), strict=True
        ):
            self.memory[key] = (etag, vector)
        if len(self.memory) > self.memory_checked + 1024:  # forget removed blocks
            there = present()
            self.memory = {k: v for k, v in self.memory.items() if k in there}
            self.memory_checked = len(self.memory)
        similarity = np.stack([self.memory[key][1] for key, _, _ in docs]) @ query
        order = np.argsort(-similarity, kind="stable")
        return [docs[i][0] for i in order if similarity[i] >= MIN_SIMILARITY]
