"""Sidecar CPU of each sequential capture by its place in the session's block: what bench_capture's plain p50 holds.

Run from the repo root:  .venv/bin/python bench/bench_capture_positions.py [--captures 600] [--code PATH ...]

A block seals every ``block_turns`` (6) captures and queues its summary job, which runs on the sidecar while the
next captures are handled; a capture's CPU (every thread of the child, read around its reply as bench_capture does)
then includes that background work. Grouping the captures by their place after the last seal shows the capture's
own cost (the last places, where the job is done) apart from the captures that share the CPU with the job. Each
``--code`` (a sidecar package folder, e.g. a checkout of main's) gets its own child, in turn, on a fresh database.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from bench_capture import cpu_seconds, host, make_turn  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402

BLOCK_TURNS = 6


async def by_place(code: str | None, captures: int, workdir: Path) -> dict[int, tuple[bool, list[float], list[float]]]:
    env = {"STRATAGATE_DENSE": "0", "STRATAGATE_BLOCK_TURNS": str(BLOCK_TURNS)}
    if code:
        env["PYTHONPATH"] = str(Path(code).resolve())
    client = await SidecarClient.start(workdir / "positions.db", host_handler=host, env=env, process=True)
    out: dict[int, tuple[bool, list[float], list[float]]] = {}
    try:
        for i in range(captures):
            c0, l0 = cpu_seconds(client.proc.pid)
            result = await client.call("turn.capture", make_turn(i, "positions"), timeout=120)
            c1, l1 = cpu_seconds(client.proc.pid)
            sealing, cpu, loop = out.setdefault(i % BLOCK_TURNS, (False, [], []))
            out[i % BLOCK_TURNS] = (sealing or bool(result["sealed_block_ids"]), [*cpu, c1 - c0], [*loop, l1 - l0])
    finally:
        await client.close()
    return out


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--captures", type=int, default=600)
    parser.add_argument("--code", nargs="*", default=[None], help="sidecar package folders (default: this checkout's)")
    args = parser.parse_args()
    for code in args.code:
        with tempfile.TemporaryDirectory() as tmp:
            places = await by_place(code, args.captures, Path(tmp))
        print(f"\n{code or 'this checkout'}: sidecar CPU per capture by place in the block, p50 ms (loop thread)")
        print("| place | kind | CPU p50 | loop thread p50 |\n|---:|---|---:|---:|")
        for place, (sealing, cpu, loop) in sorted(places.items()):
            print(f"| {place + 1} | {'sealing' if sealing else 'plain'} | {statistics.median(cpu) * 1000:.2f} "
                  f"| {statistics.median(loop) * 1000:.2f} |")


if __name__ == "__main__":
    asyncio.run(main())
