"""Capture latency and throughput of a real `stratagate serve` subprocess, driven over stdio JSON-RPC, beside the
machine's floors measured in the same run.

Run from the repo root:  .venv/bin/python bench/bench_capture.py [--history 0 10000 100000] [--samples 300]
                                                               [--burst 2000] [--code PATH] [--cold-starts 0]

- Sequential: one capture at a time, waiting for each reply (what the shim does for a session), ``--samples`` of
  them at each ``--history`` level (turns already captured in the namespace). Plain and sealing captures (the ones
  that cut a block: render L5/L4/L3, count tokens, enqueue the summary job) are reported apart.
- History is built through the pipelined path (captures sent without waiting, in one other session): a bulk path,
  not 100k sequential round trips.
- Before each level's sequential captures the bench waits until the job queue is idle (the history's block
  summaries done), so the figures are the captures' own cost, not the history's background work.
- Pipelined: a burst of ``--burst`` captures of a new session sent without waiting (a spool replay), then waited
  for: turns/s through group commit.
- Sidecar CPU per sequential capture: the child's CPU time (every thread, from /proc/<pid>/task/*/schedstat, in ns)
  read before and after each reply, and its main thread's (the event loop: the rest is the commit's and fsync's
  worker thread and background work); on a shared machine this is the figure to compare, wall time is noise.
- Floors, same run, same disk: a bare SQLite commit with fsync (WAL, synchronous=FULL, one small row per
  transaction) and a bare JSON-lines round trip over a pipe to a Python child.

The host answers host.llm.complete at once, so block summaries run during the stream as in real use. Dense
retrieval is off (STRATAGATE_DENSE=0): embedding is background work measured in bench_dense.py. ``--code`` runs
another checkout's sidecar (e.g. /work/main/sidecar) with this bench, for before/after on one run.
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

sys.path.insert(0, str(REPO / "bench"))
from scale_floors import ECHO, commit_times  # noqa: E402  (one definition of each floor)

TOOL_RESULT = "\n".join(f"src/module_{i}.py:{i * 7}: def handler_{i}(event, context):" for i in range(40))


def make_turn(i: int, session: str = "s1") -> dict:
    return {
        "namespace": "bench",
        "session": session,
        "receipt": f"bench:{session}:turn:{i}",
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


def cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU time so far of every thread of PID and of its main thread (the event loop), in seconds; ns resolution
    (psutil's cpu_times counts 10 ms ticks)."""
    total = main = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            ns = int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):  # a thread that ended between listing and reading
            continue
        total += ns
        main += ns if task.name == str(pid) else 0
    return total / 1e9, main / 1e9


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]




async def pipe_floor(n: int = 300) -> list[float]:
    """A bare JSON-lines round trip over a pipe to a Python child (what any stdio RPC pays)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", ECHO, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "system.ping"}).encode() + b"\n"
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        proc.stdin.write(line)
        await proc.stdin.drain()
        json.loads(await proc.stdout.readline())
        times.append(time.perf_counter() - t0)
    proc.stdin.close()
    await proc.wait()
    return times


async def pipelined(client: SidecarClient, session: str, first: int, count: int) -> float:
    """Send ``count`` captures without waiting, then wait for all; seconds taken."""
    t0 = time.perf_counter()
    futures = [await client.request("turn.capture", make_turn(i, session)) for i in range(first, first + count)]
    for future in asyncio.as_completed(futures):
        reply = await future
        if "error" in reply:
            raise RuntimeError(f"capture failed: {reply['error']}")
    return time.perf_counter() - t0


async def settle(client: SidecarClient, limit_s: float = 1800) -> float:
    """Wait until the job queue is idle (the history's block summaries done); seconds waited. The sequential
    captures are then measured without the history's background work on the CPU (their own summaries still run)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit_s:
        jobs = (await client.call("system.info", timeout=120))["counts"]["jobs"]
        if jobs["queued"] == 0 and jobs["running"] == 0:
            break
        await asyncio.sleep(0.5)  # a bench polling an idle flag, not a test synchronising on time
    return time.perf_counter() - t0


async def sequential(client: SidecarClient, session: str, first: int, count: int) -> dict[str, list[float]]:
    """Wall and sidecar CPU seconds of each capture, plain and sealing apart."""
    out: dict[str, list[float]] = {k: [] for k in ("plain", "sealing", "plain_cpu", "sealing_cpu", "plain_loop")}
    pid = client.proc.pid
    for i in range(first, first + count):
        (c0, l0), t0 = cpu_seconds(pid), time.perf_counter()
        result = await client.call("turn.capture", make_turn(i, session), timeout=120)
        took, (c1, l1) = time.perf_counter() - t0, cpu_seconds(pid)
        kind = "sealing" if result["sealed_block_ids"] else "plain"
        out[kind].append(took)
        out[f"{kind}_cpu"].append(c1 - c0)
        if kind == "plain":
            out["plain_loop"].append(l1 - l0)
    return out


async def run(args: argparse.Namespace, workdir: Path) -> dict:
    env = {"STRATAGATE_DENSE": "0"}
    if args.code:
        env["PYTHONPATH"] = str(Path(args.code).resolve())
    client = await SidecarClient.start(workdir / "capture.db", host_handler=host, env=env, process=True)
    levels = []
    try:
        built = 0
        for level in sorted(args.history):
            while built < level:  # bulk path: pipelined captures in another session, in slices
                step = min(5000, level - built)
                await pipelined(client, "history", built + 1, step)
                built += step
            settled = await settle(client)
            levels.append({"history": level, "settled_s": settled,
                           **await sequential(client, f"seq{level}", 1, args.samples)})
        burst_s = await pipelined(client, "burst", 1, args.burst)
        rss = psutil.Process(client.proc.pid).memory_info().rss
        size = sum(p.stat().st_size for p in workdir.glob("capture.db*"))
    finally:
        await client.close()
    return {"levels": levels, "burst_turns_per_s": args.burst / burst_s, "rss_mb": rss / 2**20, "db_mb": size / 2**20}


async def cold_start(workdir: Path, n: int, code: str | None) -> list[float]:
    env = {"PYTHONPATH": str(Path(code).resolve())} if code else None
    times = []
    for k in range(n):
        t0 = time.perf_counter()
        client = await SidecarClient.start(workdir / f"cold-{k}.db", env=env, process=True)
        times.append(time.perf_counter() - t0)
        await client.close()
    return times


def ms(values: list[float], q: float) -> str:
    return f"{pct(values, q) * 1000:.2f}"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--history", type=int, nargs="+", default=[0, 10000, 100000])
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--burst", type=int, default=2000)
    parser.add_argument("--code", help="the sidecar package folder to run (default: this checkout's)")
    parser.add_argument("--cold-starts", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        commit = commit_times(workdir)
        pipe = await pipe_floor()
        result = await run(args, workdir)
        starts = await cold_start(workdir, args.cold_starts, args.code) if args.cold_starts else []
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print(f"Floors (same run): bare commit with fsync p50 {ms(commit, 0.5)} ms (p99 {ms(commit, 0.99)}); "
          f"bare pipe round trip p50 {ms(pipe, 0.5)} ms (p99 {ms(pipe, 0.99)}); "
          f"sum {(pct(commit, 0.5) + pct(pipe, 0.5)) * 1000:.2f} ms\n")
    print("| turns of history | capture CPU p50 / p99 ms | of which the loop thread p50 / p99 ms "
          "| sealing capture CPU p50 / p99 ms | capture wall p50 / p99 ms | sealing capture wall p50 / p99 ms "
          "| wall p50 / floor |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    floor = pct(commit, 0.5) + pct(pipe, 0.5)
    for level in result["levels"]:
        plain, sealing = level["plain"], level["sealing"]
        pc, sc, loop = level["plain_cpu"], level["sealing_cpu"], level["plain_loop"]
        print(f"| {level['history']} | {ms(pc, 0.5)} / {ms(pc, 0.99)} | {ms(loop, 0.5)} / {ms(loop, 0.99)} "
              f"| {ms(sc, 0.5)} / {ms(sc, 0.99)} "
              f"| {ms(plain, 0.5)} / {ms(plain, 0.99)} | {ms(sealing, 0.5)} / {ms(sealing, 0.99)} "
              f"| {pct(plain, 0.5) / floor:.1f}× |")
    print("\nWaited for an idle job queue before each level: "
          + ", ".join(f"{lv['history']}: {lv['settled_s']:.1f} s" for lv in result["levels"]))
    print(f"\nPipelined burst of {args.burst} captures (group commit): {result['burst_turns_per_s']:.0f} turns/s. "
          f"Sidecar RSS {result['rss_mb']:.0f} MB, database {result['db_mb']:.1f} MB.")
    if starts:
        print(f"\nCold start to first `system.ping` reply (spawn included), {len(starts)} runs: "
              f"median {statistics.median(starts) * 1000:.0f} ms")
    print(f"\nCommand: `{shlex.join([Path(sys.executable).name, *sys.argv])}`")


if __name__ == "__main__":
    asyncio.run(main())
