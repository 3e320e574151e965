"""Activation's relevance floor on tests/fixtures/recall/floor_corpus.json: what unrelated and related prompts recall.

Run from the repo root:  .venv/bin/python bench/bench_recall_floor.py [--scores]

A real in-process sidecar stores the corpus's memory with memory_remember, then renders `activation.render` for every
prompt (a fresh session: no recent turns). Reported per split (calibration / held-out) and language: the share of
unrelated prompts that get any long-term event or node, the share of related prompts whose expected event is
recalled, and the other events they bring along. ``--scores`` prints, for the calibration prompts, the shared
specificity (activation/relevance.py) of each related prompt with its expected event and of each unrelated prompt
with its best-matching event: the floor sits between the two.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "sidecar"))

from support.sidecar import SidecarClient  # noqa: E402

NS = "project:shop:0123456789abcdef"
CORPUS = json.loads((REPO / "tests/fixtures/recall/floor_corpus.json").read_text(encoding="utf-8"))


def _table(rows: list[dict[str, Any]]) -> None:
    print("| split | lang | unrelated prompts | with any event or node | related prompts | expected event recalled "
          "| other events per related prompt |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for split in ("calibration", "held-out"):
        for lang in ("en", "zh"):
            un = [r for r in rows if r["kind"] == "unrelated" and r["split"] == split and r["lang"] == lang]
            rel = [r for r in rows if r["kind"] == "related" and r["split"] == split and r["lang"] == lang]
            noisy = sum(r["injected"] for r in un)
            hit = sum(r["hit"] for r in rel)
            extra = sum(r["extra"] for r in rel) / len(rel) if rel else 0.0
            print(f"| {split} | {lang} | {len(un)} | {noisy} | {len(rel)} | {hit} | {extra:.2f} |")


def _scores(db: Path, keys: dict[str, str]) -> None:
    from stratagate.activation import relevance
    from stratagate.events.models import EventRow

    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    events = {f"evt_{r['id']}": EventRow.from_row(r) for r in con.execute("SELECT * FROM events")}
    con.close()
    for kind in ("related", "unrelated"):
        for p in (p for p in CORPUS[kind] if p["split"] == "calibration"):
            q = relevance.text_terms(p["prompt"])
            if kind == "related":
                score = relevance.score(q, relevance.event_terms(events[keys[p["expect"]]]))
            else:
                score = max(relevance.score(q, relevance.event_terms(ev)) for ev in events.values())
            print(f"{kind:9} {score:5.2f}  {p['prompt']}")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scores", action="store_true")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memory.db"
        client = await SidecarClient.start(db)
        try:
            keys: dict[str, str] = {}
            for item in CORPUS["memory"]:
                stored = await client.tool(NS, "s1", "memory_remember", {"text": item["text"], "type": item["type"]})
                keys[item["key"]] = stored["id"]
            await client.settled(failed=True)
            for kind in ("related", "unrelated"):
                for p in CORPUS[kind]:
                    out = await client.call("activation.render", {"namespace": NS, "session": "s2",
                                                                  "query": p["prompt"]})
                    expected = keys.get(p.get("expect", ""))
                    rows.append({"kind": kind, "split": p["split"], "lang": p["lang"],
                                 "injected": bool(out["event_ids"] or out["node_ids"]),
                                 "hit": expected in out["event_ids"],
                                 "extra": len([e for e in out["event_ids"] if e != expected])})
        finally:
            await client.close()
        _table(rows)
        if args.scores:
            _scores(db, keys)


if __name__ == "__main__":
    asyncio.run(main())
