"""One-hop graph expansion, with and without, on multi-hop project questions.

Run from the repo root:

    .venv/bin/python bench/bench_graph_hops.py [--json out.json]

Project questions (tests/fixtures/recall/multihop.json): a small graph stored with memory_remember and explicit
   claims (people → projects → tools → places/values); each question's answer is a fact on a node that shares no
   word with the question. Reported: the share of questions whose answer fact is shown by `activation.render` (≤ 4
   nodes, 900 tokens) and by `memory_search_graph` (limit 4 and 10), expansion off and on.

LoCoMo's multi-hop questions through the graph, expansion off and on, are measured by bench/bench_locomo_levels.py,
beside raw messages and events in the same sidecar.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "sidecar"))

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


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    report: dict[str, Any] = {"project": await project_questions()}
    print(json.dumps(report["project"], indent=1))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
