"""Print the table of the last proof run (test-artifacts/proof.jsonl) as markdown."""

from __future__ import annotations

import json

from .scale import RESULTS


def main() -> None:
    rows = (
        [json.loads(line) for line in RESULTS.read_text().splitlines()] if RESULTS.exists() else []
    )
    print("| test | rounds | faults injected | checked | lost | figure |")
    print("|---|---:|---:|---:|---:|---|")
    for row in rows:
        print(
            f"| {row['test']} | {row['rounds']:,} | {row['faults']:,} | {row['checked']:,} "
            f"| {row['lost']} | {row.get('figure', '')} |"
        )
    lost = sum(row["lost"] for row in rows)
    print(f"\n{len(rows)} runs, {sum(r['checked'] for r in rows):,} checks, {lost} lost")
    if lost:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
