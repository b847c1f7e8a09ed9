"""An approximate nearest-neighbour index over the documents' vectors: usearch's HNSW
graph (the ``semantic`` extra installs it), so that a search by meaning at a million
documents looks at a few thousand of them, not at every one.

It is derived data like the vectors it is built from: built on the catalog thread a step
at a time once there are ``SMALLEST`` vectors, kept beside the catalog
(``index/vectors.ann``, with a stamp naming the catalog and the vectors it holds), taken
up again at the next start when the stamp still matches, and built again otherwise.
Searches use it only once it holds every vector; until then, and for a search inside one
session, the exact search answers.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import orjson

from ..storage import fs

log = logging.getLogger("aster_persist")

SMALLEST = 200_000  # vectors below which the exact search is as fast (and exact): make bench
STEP = 20_000  # vectors added to the graph at a time, so the catalog thread is never long held
CONNECTIVITY = 16  # edges a node keeps: memory against recall
EXPANSION_ADD = 128  # candidates weighed when a node is linked in
EXPANSION_SEARCH = 256  # candidates weighed by a search: recall against time
WIDEST = 16_384  # candidates asked of the graph at most; past them the exact search answers


class Ann:
    """The graph over the vectors of documents numbered ``rowid`` (cosine similarity of
    unit vectors: the inner product)."""

    def __init__(self, dim: int) -> None:
        from usearch.index import Index

        self.dim = dim
        self.index = Index(
            ndim=dim,
            metric="ip",
            dtype="f16",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )

    def __len__(self) -> int:
        return len(self.index)

    def add(self, rowids: np.ndarray, vectors: np.ndarray) -> None:
        self.index.add(rowids.astype(np.uint64), vectors.astype(np.float32), threads=0)

    def search(self, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``count`` documents nearest ``query`` as the graph finds them, best first:
        their numbers and their similarity."""
        found = self.index.search(query.astype(np.float32), min(count, len(self.index)))
        return found.keys.astype(np.int64), 1.0 - found.distances.astype(np.float32)

    def save(self, path: Path, stamp: dict[str, object]) -> None:
        """Kept beside the catalog, with what it was built from (no sync: derived data)."""
        try:
            fs.check(path.parent)  # a link on the way is refused, as everywhere in the home
            self.index.save(str(path))
            fs.atomic_write(_stamp_path(path), orjson.dumps(stamp), sync=False)
        except Exception as exc:
            log.warning("the semantic search graph cannot be kept in %s (%s)", path, exc)

    def load(self, path: Path, stamp: dict[str, object]) -> bool:
        """Take up the graph kept at ``path`` when it was built from what ``stamp``
        names; False (nothing taken) otherwise."""
        try:
            kept = fs.read_or_none(_stamp_path(path))
            if kept is None or orjson.loads(kept) != stamp or fs.lstat(path) is None:
                return False
            self.index.load(str(path))
        except Exception as exc:  # unreadable, a link, another version's: built again
            log.warning("the semantic search graph in %s is built again (%s)", path, exc)
            self.index.reset()  # type: ignore[no-untyped-call]
            return False
        return len(self.index) == stamp.get("size")


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")
