"""Latency of `activation.render` (run before every model step) as long-term memory grows, over stdio JSON-RPC.

Run from the repo root:  .venv/bin/python bench/bench_activation.py [--events 100 1000] [--renders 200]

A real `stratagate serve` on a fresh database; events are stored with `memory_remember` (each also projected into
the graph), one session captures turns so the session clock runs, and renders alternate between a handful of step
queries. Reports p50/p99 per size and the share of renders that would miss the shim's 1500 ms deadline.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "sidecar"))

from conftest import turn  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402

NS = "project:bench:0123456789abcdef"
TOOLS = ["npm", "pnpm", "yarn", "vite", "webpack", "jest", "vitest", "docker", "redis", "postgresql", "ruff"]
QUERIES = [
    "which package manager do we install with?",
    "why did the deploy of service-3 fail last week?",
    "what did we decide about the retry backoff for the billing worker?",
    "remind me who works on the checkout rewrite",
    "does the API still depend on redis for sessions?",
]


def memory_text(i: int) -> str:
    tool = TOOLS[i % len(TOOLS)]
    return (
        f"Decision {i}: service-{i % 37} uses {tool}; the retry backoff for worker-{i % 13} is capped at "
        f"{30 + i % 90} s because the billing API rate-limits bursts. Owner: team-{i % 7}."
    )


async def run(events: int, renders: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        client = await SidecarClient.start(Path(tmp) / "memory.db", env={"STRATAGATE_DENSE": "off"})
        try:
            for i in range(events):
                await client.tool(NS, "writer", "memory_remember", {"text": memory_text(i)})
            for i in range(1, 13):
                await client.call("turn.capture", turn(i, namespace=NS, session="reader", user=f"step {i}"))
            await client.call("activation.render", {"namespace": NS, "session": "reader", "query": "warm up"})
            times = []
            for i in range(renders):
                query = QUERIES[i % len(QUERIES)]
                start = time.perf_counter()
                out = await client.call("activation.render", {"namespace": NS, "session": "reader", "query": query})
                times.append((time.perf_counter() - start) * 1000)
                assert out["longterm_tokens"] <= 900 and len(out["event_ids"]) <= 4
        finally:
            await client.close()
    times.sort()
    return {
        "p50": statistics.median(times),
        "p99": times[min(len(times) - 1, int(len(times) * 0.99))],
        "late": sum(t > 1500 for t in times) / len(times),
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--renders", type=int, default=200)
    args = parser.parse_args()
    print(f"Command: .venv/bin/python bench/bench_activation.py --events {' '.join(map(str, args.events))} "
          f"--renders {args.renders}\n")
    print("| events (each projected) | renders | p50 ms | p99 ms | over the 1500 ms deadline |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for n in args.events:
        r = await run(n, args.renders)
        print(f"| {n} | {args.renders} | {r['p50']:.1f} | {r['p99']:.1f} | {r['late']:.1%} |")


if __name__ == "__main__":
    asyncio.run(main())
