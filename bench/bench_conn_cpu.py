"""Sidecar CPU per capture and per render for two checkouts in one run (the database connection's cost).

Run from the repo root:  nice -n 10 .venv/bin/python bench/bench_conn_cpu.py --code /tmp/base/sidecar sidecar
    [--captures 300] [--renders 200] [--events 10000] [--rounds 2]

For each ``--code`` folder, alternating ``--rounds`` times (so machine load falls on both alike), a real
`stratagate serve` child (dense off):
- ``--captures`` sequential turn.capture round trips of a fresh session on a fresh database (one warm-up first);
- ``--renders`` activation.render round trips on a copy of bench_scale's cached ``--events`` database (built by
  bench/scale_build.py; a reading session of 12 captured turns first).
Each request's cost is the child's CPU time over all its threads (bench_scale.cpu_ms: /proc/PID/task/*/schedstat),
not wall time. Prints p50/p99 per checkout, pooled over the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "sidecar"))

from bench_capture import make_turn  # noqa: E402
from bench_scale import BYTECODE, DENSE_OFF, copy_db, cpu_ms, reader_session  # noqa: E402
from scale_build import NS, cache_path, summary_host  # noqa: E402
from scale_floors import pct  # noqa: E402
from scale_workload import queries  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402


async def _client(db: Path, code: Path) -> SidecarClient:
    env = BYTECODE | DENSE_OFF | {"PYTHONPATH": str(code.resolve())}
    return await SidecarClient.start(db, env=env, host_handler=summary_host, process=True)


async def captures(code: Path, workdir: Path, n: int) -> list[float]:
    client = await _client(workdir / "capture.db", code)
    cpu: list[float] = []
    try:
        await client.call("turn.capture", make_turn(0, "warm") | {"namespace": NS}, timeout=120)
        for i in range(1, n + 1):
            before = cpu_ms(client)
            await client.call("turn.capture", make_turn(i, "live") | {"namespace": NS}, timeout=120)
            cpu.append(cpu_ms(client) - before)
    finally:
        await client.close()
    return cpu


async def renders(code: Path, workdir: Path, events: int, n: int) -> list[float]:
    path = copy_db(cache_path("events", events), workdir, "events.db")
    client = await _client(path, code)
    qs = queries(n)
    cpu: list[float] = []
    try:
        await reader_session(client)
        await client.call("activation.render", {"namespace": NS, "session": "reader", "query": "warm up"}, 120)
        for q in qs[:n]:
            before = cpu_ms(client)
            await client.call("activation.render", {"namespace": NS, "session": "reader", "query": q}, 120)
            cpu.append(cpu_ms(client) - before)
    finally:
        await client.close()
    return cpu


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--code", type=Path, nargs="+", required=True, help="sidecar package folders to compare")
    parser.add_argument("--captures", type=int, default=300)
    parser.add_argument("--renders", type=int, default=200)
    parser.add_argument("--events", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    figures: dict[str, dict[str, list[float]]] = {str(c): {"capture": [], "render": []} for c in args.code}
    for _ in range(args.rounds):
        for code in args.code:
            with tempfile.TemporaryDirectory() as tmp:
                figures[str(code)]["capture"] += await captures(code, Path(tmp), args.captures)
                figures[str(code)]["render"] += await renders(code, Path(tmp), args.events, args.renders)
    print("| code | capture CPU p50 ms | capture CPU p99 ms | render CPU p50 ms (events) | render CPU p99 ms |")
    print("|---|---:|---:|---:|---:|")
    for code, fig in figures.items():
        cap, ren = fig["capture"], fig["render"]
        print(f"| {code} | {statistics.median(cap):.2f} | {pct(cap, 0.99):.2f} | {statistics.median(ren):.2f} "
              f"({args.events}) | {pct(ren, 0.99):.2f} |")
    print(f"\nCommand: `{shlex.join([Path(sys.executable).name, *sys.argv])}`")


if __name__ == "__main__":
    asyncio.run(main())
