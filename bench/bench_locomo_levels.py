"""LoCoMo recall@10 by memory level, zero-model, in one sidecar: raw messages, events, graph nodes (expansion off
and on).

Run from the repo root:

    .venv/bin/python bench/bench_locomo_levels.py ../shared/data/locomo/26.json [more.json …] [--json out.json]

Each conversation is captured through `turn.capture` into an in-process sidecar in zero-model mode
(STRATAGATE_MODEL_ROUTE=none, dense off: events come from the rule extractor, the graph from their claims), as
bench/bench_locomo.py captures it; then every session's open tail is sealed (`session.seal_idle` past the idle
time, as a user who stops for ten minutes gets) and the jobs run to the end. Every question of categories 1–4 then
goes to three tools, limit 10, and each hit becomes the dialogue ids of the messages behind it, in hit order:

- `memory_search_raw`: the message itself;
- `memory_search_events`: the event's source messages (``event_sources``);
- `memory_search_graph` (``expand`` false and true): the source messages of the events supporting each current
  fact shown.

recall@10 is the share of the question's evidence ids among the first 10 distinct dialogue ids. Reported per
category and over all questions, with the counts of events and graph nodes the rules made.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "sidecar"))
sys.path.insert(0, str(REPO / "bench"))

from bench_locomo import CATEGORY, NAMESPACE, capture_plan, load  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402

ZERO_MODEL = {"STRATAGATE_MODEL_ROUTE": "none", "STRATAGATE_DENSE": "off"}
LEVELS = ("raw", "events", "graph", "graph+hop")


def _sources(db: Path, where: dict[tuple[str, int, str], str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(evt_N → dialogue ids of its source messages, fct_N → those of its supporting events' sources)."""
    con = sqlite3.connect(db)
    base = (" JOIN messages m ON m.id = es.message_id JOIN turns t ON t.id = m.turn_id"
            " JOIN sessions s ON s.id = m.session_id")
    events = con.execute("SELECT es.event_id, s.key, t.seq, m.role FROM event_sources es" + base +
                         " ORDER BY es.event_id, m.id").fetchall()
    facts = con.execute("SELECT fe.fact_id, s.key, t.seq, m.role FROM graph_fact_events fe"
                        " JOIN event_sources es ON es.event_id = fe.event_id" + base +
                        " WHERE fe.role = 'supports' ORDER BY fe.fact_id, m.id").fetchall()
    con.close()
    out: tuple[dict[str, list[str]], dict[str, list[str]]] = ({}, {})
    for table, prefix, rows in ((out[0], "evt_", events), (out[1], "fct_", facts)):
        for key, session, seq, role in rows:
            dia = where.get((session, seq, role))
            if dia is not None:
                table.setdefault(f"{prefix}{key}", []).append(dia)
    return out


async def _ranked(client: SidecarClient, level: str, query: str, where: dict[tuple[str, int, str], str],
                  events: dict[str, list[str]], facts: dict[str, list[str]]) -> list[str]:
    if level == "raw":
        hits = (await client.tool(NAMESPACE, "bench", "memory_search_raw", {"query": query, "limit": 10}))["hits"]
        dias = [where.get((h["session"], h["turn"], h["role"])) for h in hits]
    elif level == "events":
        hits = (await client.tool(NAMESPACE, "bench", "memory_search_events", {"query": query, "limit": 10}))["hits"]
        dias = [d for h in hits for d in events.get(h["id"], [])]
    else:
        hits = (await client.tool(NAMESPACE, "bench", "memory_search_graph",
                                  {"query": query, "limit": 10, "expand": level == "graph+hop"}))["hits"]
        dias = [d for h in hits for f in h["current_state"] for d in facts.get(f["id"], [])]
    return list(dict.fromkeys(d for d in dias if d is not None))[:10]


async def conversation(path: Path) -> dict[str, Any]:
    conv = load(path)
    turns, where = capture_plan(conv)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memory.db"
        client = await SidecarClient.start(db, env=ZERO_MODEL)
        try:
            for params in turns:
                await client.call("turn.capture", params)
            now = (datetime.now(UTC) + timedelta(minutes=11)).isoformat()
            await client.call("session.seal_idle", {"now": now})
            await client.settled(failed=True, timeout=900)
            info = await client.call("system.info")
            events, facts = _sources(db, where)
            result: dict[str, Any] = {
                "file": path.name, "questions": len(conv.questions),
                "event_count": sum(info["counts"]["events"].values()), "graph_nodes": info["counts"].get("graph_nodes"),
            }
            for level in LEVELS:
                per: dict[int, list[float]] = {}
                for q in conv.questions:
                    ranked = await _ranked(client, level, q.text, where, events, facts)
                    per.setdefault(q.category, []).append(len(q.evidence & set(ranked)) / len(q.evidence))
                every = [v for values in per.values() for v in values]
                result[level] = {"all": {"n": len(every), "r@10": round(sum(every) / len(every), 3)}} | {
                    CATEGORY[c]: {"n": len(v), "r@10": round(sum(v) / len(v), 3)} for c, v in sorted(per.items())
                }
        finally:
            await client.close()
    return result


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| conversation | questions | events | graph nodes | " + " | ".join(LEVELS) + " | multi-hop: "
             + " / ".join(LEVELS) + " |", "|---|---:|---:|---:|" + "---:|" * (len(LEVELS) + 1)]
    for r in results:
        multi = " / ".join(f"{r[level].get('1 multi-hop', {}).get('r@10', 0):.3f}" for level in LEVELS)
        lines.append(f"| {Path(r['file']).stem} | {r['questions']} | {r['event_count']} | {r['graph_nodes']} | "
                     + " | ".join(f"{r[level]['all']['r@10']:.3f}" for level in LEVELS) + f" | {multi} |")
    if len(results) > 1:
        def pooled(level: str, cat: str) -> float:
            parts = [r[level][cat] for r in results if cat in r[level]]
            n = sum(p["n"] for p in parts)
            return sum(p["r@10"] * p["n"] for p in parts) / n if n else 0.0

        lines.append(f"| **all questions** | {sum(r['questions'] for r in results)} | "
                     f"{sum(r['event_count'] for r in results)} | {sum(r['graph_nodes'] or 0 for r in results)} | "
                     + " | ".join(f"**{pooled(level, 'all'):.3f}**" for level in LEVELS) + " | "
                     + " / ".join(f"{pooled(level, '1 multi-hop'):.3f}" for level in LEVELS) + " |")
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    results = []
    for path in args.files:
        one = await conversation(path)
        print(json.dumps(one, ensure_ascii=False), flush=True)
        results.append(one)
    print(table(results))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
