"""Before/after table of two bench_scale.py JSON files (the issue-14 summary in docs/benchmarks.md).

Run from the repo root:  .venv/bin/python bench/scale_table.py before.json after.json [--peer bench-peer.json]
Rows are matched by goal; "met?" and the floors are the after run's (floors are re-measured in every run).
``--peer`` appends bench_peer.py's table (StrataGate against ours, with that run's floors) from its JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import Sizes, goal_rows


def rows_of(path: Path) -> tuple[dict, dict[str, tuple]]:
    raw = json.loads(path.read_text())
    sizes = Sizes(**raw["sizes"])
    return raw, {row[0]: row for row in goal_rows(raw, sizes)}


def main() -> None:
    args = sys.argv[1:]
    peer = None
    if "--peer" in args:
        at = args.index("--peer")
        peer = Path(args[at + 1])
        del args[at : at + 2]
    before_raw, before = rows_of(Path(args[0]))
    after_raw, after = rows_of(Path(args[1]))
    met = {True: "yes", False: "**no**", None: "—"}
    print(f"Before: {before_raw['date']} (load {before_raw['load_start']} → {before_raw['load_end']}); "
          f"after: {after_raw['date']} (load {after_raw['load_start']} → {after_raw['load_end']}).\n")
    print("| goal | target | before | after | met? (after) | floor (after run) |")
    print("|---|---|---|---|---|---|")
    for goal in dict.fromkeys([*after, *before]):
        b, a = before.get(goal), after.get(goal)
        row = a or b
        assert row is not None
        print(f"| {goal} | {row[1]} | {b[2] if b else '—'} | {a[2] if a else '—'} | {met[a[3]] if a else '—'} "
              f"| {row[4]} |")
    if peer:
        import bench_peer

        print("\nStrataGate, from the peer bench's run:\n")
        print(bench_peer.markdown(json.loads(peer.read_text())), end="")


if __name__ == "__main__":
    main()
