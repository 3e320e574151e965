"""One-hop graph expansion, with and without: multi-hop project questions and LoCoMo's multi-hop questions.

Run from the repo root:

    .venv/bin/python bench/bench_graph_hops.py                      # the project questions only
    .venv/bin/python bench/bench_graph_hops.py --locomo ../shared/data/locomo/26.json [more.json …]

1. Project questions (tests/fixtures/recall/multihop.json): a small graph stored with memory_remember and explicit
   claims (people → projects → tools → places/values); each question's answer is a fact on a node that shares no
   word with the question. Reported: the share of questions whose answer fact is shown by `activation.render` (≤ 4
   nodes, 900 tokens) and by `memory_search_graph` (limit 4 and 10), expansion off and on.
2. LoCoMo (`--locomo`): each conversation is captured through `turn.capture` into an in-process sidecar in
   zero-model mode (STRATAGATE_MODEL_ROUTE=none: events come from the rule extractor, the graph from their claims),
   as bench/bench_locomo.py captures it. Each question's `memory_search_graph` hits (limit 10) are turned into the
   dialogue ids of the messages behind their current facts (fact → supporting events → their source messages), in
   hit order; recall@10 is the share of the question's evidence ids among the first 10, per category, off and on.
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
sys.path.insert(0, str(REPO / "bench"))

from bench_locomo import CATEGORY, NAMESPACE, capture_plan, load  # noqa: E402
from stratagate.activation import nodes  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402

NS = "project:shop:0123456789abcdef"

ZERO_MODEL = {"STRATAGATE_MODEL_ROUTE": "none", "STRATAGATE_DENSE": "off"}


def _shows(statements: list[str], answer: str) -> bool:
    return any(answer.casefold() == s.casefold() for s in statements)


async def project_questions() -> dict[str, Any]:
    corpus = json.loads((REPO / "tests/fixtures/recall/multihop.json").read_text(encoding="utf-8"))
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        client = await SidecarClient.start(Path(tmp) / "memory.db", env=ZERO_MODEL)
        try:
            for item in corpus["memory"]:
                await client.tool(NS, "s1", "memory_remember", {"text": item["text"], "claims": item["claims"]})
            await client.settled(failed=True)
            for expand in (False, True):
                nodes.EXPAND = expand
                shown = {"activation": 0, "search@4": 0, "search@10": 0, "nodes": 0, "tokens": 0}
                for q in corpus["questions"]:
                    render = await client.call("activation.render", {"namespace": NS, "session": "s2",
                                                                     "query": q["question"]})
                    lines = [line.removeprefix("│ ").split(" (since ")[0] for line in render["text"].splitlines()]
                    shown["activation"] += _shows(lines, q["answer"])
                    shown["nodes"] += len(render["node_ids"])
                    shown["tokens"] += render["longterm_tokens"]
                    for limit in (4, 10):
                        hits = (await client.tool(NS, "s2", "memory_search_graph",
                                                  {"query": q["question"], "limit": limit, "expand": expand}))["hits"]
                        facts = [f["statement"] for h in hits for f in h["current_state"]]
                        shown[f"search@{limit}"] += _shows(facts, q["answer"])
                n = len(corpus["questions"])
                out["on" if expand else "off"] = {k: round(v / n, 3) for k, v in shown.items()} | {"questions": n}
        finally:
            nodes.EXPAND = True
            await client.close()
    return out


def _dia_ids(db: Path, where: dict[tuple[str, int, str], str]) -> dict[str, list[str]]:
    """fct_N → the dialogue ids of the messages behind its supporting events, in message order."""
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT fe.fact_id, s.key, t.seq, m.role FROM graph_fact_events fe"
        " JOIN event_sources es ON es.event_id = fe.event_id JOIN messages m ON m.id = es.message_id"
        " JOIN turns t ON t.id = m.turn_id JOIN sessions s ON s.id = m.session_id"
        " WHERE fe.role = 'supports' ORDER BY fe.fact_id, m.id"
    ).fetchall()
    con.close()
    out: dict[str, list[str]] = {}
    for fact_id, session, seq, role in rows:
        dia = where.get((session, seq, role))
        if dia is not None:
            out.setdefault(f"fct_{fact_id}", []).append(dia)
    return out


async def locomo(path: Path) -> dict[str, Any]:
    conv = load(path)
    turns, where = capture_plan(conv)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memory.db"
        client = await SidecarClient.start(db, env=ZERO_MODEL)
        try:
            for params in turns:
                await client.call("turn.capture", params)
            await client.settled(failed=True, timeout=600)
            info = await client.call("system.info")
            sources = _dia_ids(db, where)
            result: dict[str, Any] = {"file": path.name, "counts": {k: info["counts"].get(k) for k in
                                                                     ("events", "graph_nodes", "graph_facts")}}
            for expand in (False, True):
                per: dict[int, list[float]] = {}
                for q in conv.questions:
                    hits = (await client.tool(NAMESPACE, "bench", "memory_search_graph",
                                              {"query": q.text, "limit": 10, "expand": expand}))["hits"]
                    ranked = list(dict.fromkeys(d for h in hits for f in h["current_state"]
                                                for d in sources.get(f["id"], [])))[:10]
                    per.setdefault(q.category, []).append(len(q.evidence & set(ranked)) / len(q.evidence))
                result["on" if expand else "off"] = {
                    CATEGORY[c]: {"n": len(v), "r@10": round(sum(v) / len(v), 3)} for c, v in sorted(per.items())
                }
        finally:
            await client.close()
    return result


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--locomo", type=Path, nargs="*", default=[])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    report: dict[str, Any] = {"project": await project_questions()}
    print(json.dumps(report["project"], indent=1))
    report["locomo"] = []
    for path in args.locomo:
        one = await locomo(path)
        print(json.dumps(one, ensure_ascii=False))
        report["locomo"].append(one)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
