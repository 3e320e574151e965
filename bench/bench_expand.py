"""Latency of `memory_expand_block` at level 5 of a huge block (one turn with 2,000 tool calls), page by page, and
how long a `system.ping` sent right behind a page waits for its reply, over stdio JSON-RPC.

Run from the repo root:  .venv/bin/python bench/bench_expand.py [--tools 2000] [--rounds 3]

A real `stratagate serve` (block size 1) on a fresh database captures one turn with --tools tool calls (a ~300 B
grep result each); then every page of level 5 is read with the default limit, --rounds times over. Reports the
median and p99 ms per page, pages per read, and the median ping reply time while a page renders.
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

NS, SESSION = "proj", "s1"


def huge_turn(tools: int) -> dict:
    records = [
        {"name": "bash", "arguments": {"command": f"grep -rn pattern{i} src/"}, "call_id": f"call_{i}",
         "result": {"stdout": "\n".join(f"src/file{j}.py:{j}: pattern{i} here" for j in range(8)), "code": 0}}
        for i in range(tools)
    ]
    return turn(1, session=SESSION, tools=records)


async def run(tools: int, rounds: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        client = await SidecarClient.start(Path(tmp) / "memory.db", env={"STRATAGATE_DENSE": "off"},
                                           args=["--block-turns", "1"])
        try:
            await client.call("turn.capture", huge_turn(tools), timeout=600)
            pages: list[float] = []
            pings: list[float] = []
            per_read = 0
            for _ in range(rounds):
                offset, per_read = 0, 0
                while offset is not None:
                    start = time.perf_counter()
                    page = await client.request("tools.call", {
                        "namespace": NS, "session": SESSION, "name": "memory_expand_block",
                        "arguments": {"id": "blk_1", "level": 5, "offset": offset}})
                    ping = await client.call("system.ping")
                    pings.append((time.perf_counter() - start) * 1000)
                    reply = await page
                    pages.append((time.perf_counter() - start) * 1000)
                    offset = reply["result"]["page"]["next_offset"]
                    per_read += 1
                    assert ping["pong"]
        finally:
            await client.close()
    pages.sort()
    return {
        "tools": tools,
        "pages_per_read": per_read,
        "page_p50_ms": round(statistics.median(pages), 1),
        "page_p99_ms": round(pages[min(len(pages) - 1, int(len(pages) * 0.99))], 1),
        "ping_p50_ms": round(statistics.median(pings), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, nargs="+", default=[2000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("| tool calls | pages per read | page p50 ms | page p99 ms | ping behind a page p50 ms |")
    print("|---:|---:|---:|---:|---:|")
    for tools in args.tools:
        r = asyncio.run(run(tools, args.rounds))
        cells = (r["tools"], r["pages_per_read"], r["page_p50_ms"], r["page_p99_ms"], r["ping_p50_ms"])
        print("| " + " | ".join(str(c) for c in cells) + " |")


if __name__ == "__main__":
    main()
