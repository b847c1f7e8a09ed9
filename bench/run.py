"""make bench: the daemon against baselines measured in the same run, printed as a table.

Each area is a module of bench/ (appends, listing with search, memory, live with
readers, imports, learning, retrieval quality, the walk of a request), on what bench/harness.py shares; ``--only`` runs one of
them. docs/BENCHMARKS.md says what each row measures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: import bench.*

from bench.ann import bench_ann
from bench.appends import bench_appends
from bench.following import bench_follow, bench_tree
from bench.footprint import bench_copies, bench_footprint
from bench.harness import fsync_probe, print_table
from bench.imports import bench_import
from bench.learning import bench_learning
from bench.listing import bench_listing
from bench.live import bench_live, bench_readers
from bench.memory import bench_memory
from bench.recall import bench_recall
from bench.sequential import bench_sequential
from bench.team import bench_team
from bench.walk import bench_walk


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--blocks", type=int, default=10_000)
    parser.add_argument("--tree-mb", type=int, default=1000, help="size of the import tree")
    parser.add_argument("--vectors", type=int, default=1_000_000, help="for --only ann")
    parser.add_argument(
        "--only",
        choices=[
            "appends",
            "sequential",
            "listing",
            "memory",
            "live",
            "readers",
            "import",
            "tree",
            "learning",
            "recall",
            "walk",
            "footprint",
            "ann",
            "team",
        ],
        default=None,
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed: apt-get install wrk (make bench does it)")
    work = Path(tempfile.mkdtemp(prefix="aster-bench-", dir=os.environ.get("BENCH_DIR")))
    try:
        print(f"fsync probe at start: {fsync_probe(work):.2f} ms", flush=True)
        if args.only in (None, "appends"):
            bench_appends(work, args.seconds, args.reps)
        if args.only in (None, "sequential"):
            bench_sequential(work, args.reps)
        if args.only in (None, "listing"):
            bench_listing(work, args.sessions, args.events)
        if args.only in (None, "memory"):
            bench_memory(work, args.blocks)
        if args.only in (None, "live"):
            bench_live(work, args.seconds)
        if args.only in (None, "readers"):
            bench_readers(work, args.seconds, args.reps)
        if args.only in (None, "import"):
            bench_import(work)
        if args.only in (None, "footprint"):
            bench_footprint(work)
            bench_copies(work)
        if args.only in (None, "tree"):
            bench_tree(work, args.tree_mb)
            bench_follow(work)
        if args.only in (None, "learning"):
            bench_learning(work)
        if args.only in (None, "recall"):
            bench_recall(work)
        if args.only in (None, "walk"):
            bench_walk()
        if args.only in (None, "ann"):
            bench_ann(args.vectors)
        if args.only in (None, "team"):
            bench_team(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print_table()


if __name__ == "__main__":
    main()
