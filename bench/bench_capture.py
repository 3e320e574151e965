"""Capture throughput and seal latency of a real `stratagate serve` subprocess, driven over stdio JSON-RPC.

Run from the repo root:  .venv/bin/python bench/bench_capture.py [--turns 1000 10000] [--cold-starts 10]

The host side answers host.llm.complete at once, so block summaries run during the capture stream, as in
real use. Captures are sent one at a time (the shim sends a session's turns in order) and pipelined
(a burst of turns, e.g. a spool replay). Prints Markdown tables and the command that produced them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "sidecar"))

from conftest import summary_arguments  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402

TOOL_RESULT = "\n".join(f"src/module_{i}.py:{i * 7}: def handler_{i}(event, context):" for i in range(40))


def make_turn(i: int) -> dict:
    return {
        "namespace": "bench",
        "session": "s1",
        "receipt": f"bench:s1:turn:{i}",
        "user": f"Turn {i}: please check why the deploy of service-{i % 17} failed and fix the retry logic. " * 3,
        "assistant": f"I looked at service-{i % 17}. The retry loop used a fixed 1 s delay; I changed it to "
        f"exponential backoff capped at 60 s and added a test. ok.\n" * 2,
        "tools": [
            {"name": "grep", "arguments": {"pattern": "def handler_", "path": "src/"}, "result": TOOL_RESULT},
            {"name": "bash", "arguments": {"command": f"pytest tests/test_retry.py -k case_{i}"},
             "result": {"exit_code": 0, "stdout": "1 passed in 0.12s"}},
        ],
        "started_at": "2026-05-01T10:00:00Z",
        "ended_at": "2026-05-01T10:00:30Z",
        "end_reason": "stop",
    }


async def host(method: str, params: dict) -> dict:
    tool = params["tool"]
    args = summary_arguments(tool["name"], {"messages": params["messages"]})
    call = {"name": tool["name"], "arguments": json.dumps(args)}
    return {"text": "", "finish_reason": "tool_calls", "tool_calls": [call]}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run_capture(turns: int, workdir: Path) -> dict:
    client = await SidecarClient.start(workdir / f"capture-{turns}.db", host_handler=host)
    try:
        latencies, seal_latencies = [], []
        t0 = time.perf_counter()
        for i in range(1, turns + 1):
            s = time.perf_counter()
            result = await client.call("turn.capture", make_turn(i))
            took = time.perf_counter() - s
            (seal_latencies if result["sealed_block_ids"] else latencies).append(took)
        sequential_s = time.perf_counter() - t0

        # Pipelined: a burst of captures in flight at once (new session so blocks seal the same way).
        t0 = time.perf_counter()
        futures = []
        for i in range(1, turns + 1):
            params = make_turn(i) | {"session": "burst", "receipt": f"bench:burst:turn:{i}"}
            futures.append(await client.request("turn.capture", params))
        await asyncio.gather(*futures)
        pipelined_s = time.perf_counter() - t0

        rss = psutil.Process(client.proc.pid).memory_info().rss
        info = await client.call("system.info")
        size = sum(p.stat().st_size for p in workdir.glob(f"capture-{turns}.db*"))
        return {
            "turns": turns,
            "sequential_turns_per_s": turns / sequential_s,
            "pipelined_turns_per_s": turns / pipelined_s,
            "p50_ms": pct(latencies, 0.5) * 1000,
            "p99_ms": pct(latencies, 0.99) * 1000,
            "seal_p50_ms": pct(seal_latencies, 0.5) * 1000,
            "seal_p99_ms": pct(seal_latencies, 0.99) * 1000,
            "rss_mb": rss / 2**20,
            "db_mb": size / 2**20,
            "blocks": info["counts"]["blocks"],
        }
    finally:
        await client.close()


async def cold_start(workdir: Path, n: int) -> list[float]:
    times = []
    for k in range(n):
        t0 = time.perf_counter()
        client = await SidecarClient.start(workdir / f"cold-{k}.db")
        times.append(time.perf_counter() - t0)
        await client.close()
    return times


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--cold-starts", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        starts = await cold_start(workdir, args.cold_starts)
        results = [await run_capture(n, workdir) for n in args.turns]
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}\n")
    print("| turns | sequential turns/s | pipelined turns/s | capture p50 ms | capture p99 ms "
          "| sealing capture p50 ms | sealing capture p99 ms | sidecar RSS MB | db MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['turns']} | {r['sequential_turns_per_s']:.0f} | {r['pipelined_turns_per_s']:.0f} "
              f"| {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['seal_p50_ms']:.2f} | {r['seal_p99_ms']:.2f} "
              f"| {r['rss_mb']:.0f} | {r['db_mb']:.1f} |")
    print(f"\nCold start to first `system.ping` reply (spawn included), {len(starts)} runs: "
          f"median {statistics.median(starts) * 1000:.0f} ms, min {min(starts) * 1000:.0f} ms, "
          f"max {max(starts) * 1000:.0f} ms")
    print(f"\nCommand: `{shlex.join([Path(sys.executable).name, *sys.argv])}`")


if __name__ == "__main__":
    asyncio.run(main())
