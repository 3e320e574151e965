"""Summarise several bench_locomo.py --json results (one per conversation) as one markdown table of recall@10.

    for c in 30 41 42; do .venv/bin/python bench/bench_locomo.py --skip-ablation --file DIR/$c.json \
        --json out/$c.json; done
    .venv/bin/python bench/locomo_table.py out/*.json
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def main(paths: list[str]) -> None:
    runs = [json.loads(Path(p).read_text()) for p in sorted(paths)]
    names = [s["name"] for s in runs[0]["systems"]]
    print("| conversation | questions | " + " | ".join(names) + " |")
    print("|---|---:|" + "---:|" * len(names))
    per_system: dict[str, list[float]] = {n: [] for n in names}
    for path, run in zip(sorted(paths), runs, strict=True):
        by_name = {s["name"]: s for s in run["systems"]}
        row = [f"{by_name[n]['all']['r@10']:.3f}" for n in names]
        for n in names:
            per_system[n].append(by_name[n]["all"]["r@10"])
        first = by_name[names[0]]["all"]["n"]
        print(f"| {Path(path).stem} | {first} | " + " | ".join(row) + " |")
    print("| **median** | | " + " | ".join(f"**{statistics.median(v):.3f}**" for v in per_system.values()) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
