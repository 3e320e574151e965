"""Cold start of the sidecar: spawn → first `activation.render` answer at 10k events, first answers after start,
RSS after the first activation, event-loop stalls (system.info `loop`), dense off and on.

Run from the repo root:  .venv/bin/python bench/bench_start.py [--events 10000] [--runs 5] [--tree PATH ...]
                         [--db EVENTS.db --namespace NAME]  (an existing database, e.g. bench_scale.py's)

A database with ``--events`` memories (`memory_remember`, each projected into the graph) is built once in
``--workdir`` (kept for the next run) and copied before every start. Each run spawns `python -m stratagate serve`
twice per tree and dense mode:
- cold: the render request is written at spawn, so its answer time is the whole cold start (interpreter, imports,
  database open, render); then a first capture, then RSS and system.info;
- after ping: wait for the `system.ping` answer, then time the first capture and the first render.
``--tree`` runs another checkout's sidecar/ (e.g. /work/main) on the same database, back to back, to compare.
Bytecode is cached in ``--workdir`` (PYTHONPYCACHEPREFIX), as a pip-installed package has it.
By default each start finds the database as built, never served: its first search derives the search index beside
it (``<db>-search``, storage/term_index.py) and the term feed's rows (~0.15 s of CPU at 10k events), as the first
start after an upgrade does; ``--served`` starts on a copy of the database and its index as a first sidecar left
them, as every later start finds them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shlex
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "sidecar"))
sys.path.insert(0, str(REPO / "bench"))

from bench_activation import NS, memory_text  # noqa: E402
from conftest import turn  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402

QUERY = "which package manager do we install with?"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_ms(pid: int) -> float:
    """User + system CPU time of a process so far (less sensitive to a loaded machine than wall time)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


async def build_db(path: Path, events: int) -> None:
    if path.exists():
        return
    tmp = path.with_suffix(".building.db")
    for stale in path.parent.glob(tmp.name + "*"):
        stale.unlink()
    client = await SidecarClient.start(tmp, env={"STRATAGATE_DENSE": "off", "STRATAGATE_MODEL_ROUTE": "none"})
    try:
        done = 0
        while done < events:
            batch = range(done, min(events, done + 50))
            await asyncio.gather(
                *(client.tool(NS, "writer", "memory_remember", {"text": memory_text(i)}) for i in batch)
            )
            done = batch[-1] + 1
        for i in range(1, 13):
            await client.call("turn.capture", turn(i, namespace=NS, session="reader", user=f"step {i}"))
        await client.settled()
    finally:
        await client.close()
    tmp.replace(path)


class Child:
    """A bare `stratagate serve` with our own line reader (timing starts before the interpreter does)."""

    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.next_id = 0
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def spawn(cls, tree: Path, db: Path, dense: bool, pyc: Path) -> Child:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env |= {
            "PYTHONPATH": str(tree / "sidecar"),
            "PYTHONPYCACHEPREFIX": str(pyc),
            "STRATAGATE_DENSE": "on" if dense else "off",
            "STRATAGATE_MODEL_ROUTE": "none",
        }
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "stratagate", "serve", "--db", str(db),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            env=env, limit=64 * 2**20,
        )  # fmt: skip
        return cls(proc)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            message = json.loads(line)
            future = self.waiting.pop(message.get("id", -1), None)
            if future is not None and not future.done():
                future.set_result(message)

    def send(self, method: str, params: Any = None) -> asyncio.Future[Any]:
        assert self.proc.stdin is not None
        self.next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = future
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        return future

    async def call(self, method: str, params: Any = None) -> Any:
        reply = await asyncio.wait_for(self.send(method, params), 120)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    async def close(self) -> None:
        with_reply = self.send("system.shutdown")
        await asyncio.wait_for(with_reply, 30)
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await self.proc.wait()
        self.reader.cancel()


def capture_params(k: int, namespace: str) -> dict[str, Any]:
    return turn(100 + k, namespace=namespace, session="bench-start", user=f"first turn after start {k}: use pnpm")


def fresh_copy(base_db: Path, db: Path, with_index: bool) -> None:
    """``base_db`` at ``db`` (and its derived search index, if asked), nothing of an earlier run left."""
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    shutil.rmtree(str(db) + "-search", ignore_errors=True)
    shutil.copyfile(base_db, db)
    if with_index:
        shutil.copytree(str(base_db) + "-search", str(db) + "-search")


async def served_copy(tree: Path, base_db: Path, work: Path, namespace: str) -> Path:
    """``base_db`` as a sidecar leaves it: one start and render on a copy derive what a first search derives (the
    search index beside it, the term feed's rows), kept for the next run while ``base_db`` is the same file."""
    stat = base_db.stat()
    served = work / f"served-{base_db.stem}-{stat.st_size}-{stat.st_mtime_ns}.db"
    if served.exists():
        return served
    db = work / "serving.db"
    fresh_copy(base_db, db, False)
    child = await Child.spawn(tree, db, False, work / "pyc")
    await child.call("activation.render", {"namespace": namespace, "session": "reader", "query": QUERY})
    await child.close()
    shutil.copytree(str(db) + "-search", str(served) + "-search")
    shutil.copyfile(db, served)
    return served


async def one_run(tree: Path, base_db: Path, work: Path, dense: bool, k: int, namespace: str,
                  with_index: bool = False) -> dict[str, float]:
    out: dict[str, float] = {}
    render_params = {"namespace": namespace, "session": "reader", "query": QUERY}
    db = work / "run.db"
    fresh_copy(base_db, db, with_index)
    started = time.perf_counter()
    child = await Child.spawn(tree, db, dense, work / "pyc")
    render = child.send("activation.render", render_params)
    await asyncio.wait_for(render, 120)
    out["cold_render_ms"] = (time.perf_counter() - started) * 1000
    out["rss_first_render_mb"] = rss_mb(child.proc.pid)
    out["cpu_first_render_ms"] = cpu_ms(child.proc.pid)
    t = time.perf_counter()
    await child.call("turn.capture", capture_params(k, namespace))
    out["capture_after_cold_render_ms"] = (time.perf_counter() - t) * 1000
    await asyncio.sleep(3)  # let the warm-ups (tokenizer, secrets, model route, dense) finish
    out["rss_settled_mb"] = rss_mb(child.proc.pid)
    info = await child.call("system.info")
    loop = info.get("loop") or {}
    out["max_stall_ms"] = loop.get("max_stall_ms", float("nan"))
    out["stalls_over_20ms"] = loop.get("stalls_over_20ms", float("nan"))
    out["max_busy_ms"] = loop.get("max_busy_ms", float("nan"))
    await child.close()

    fresh_copy(base_db, db, with_index)
    started = time.perf_counter()
    child = await Child.spawn(tree, db, dense, work / "pyc")
    await child.call("system.ping")
    out["ping_ms"] = (time.perf_counter() - started) * 1000
    t = time.perf_counter()
    await child.call("turn.capture", capture_params(k, namespace))
    out["first_capture_ms"] = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    await child.call("activation.render", render_params)
    out["first_render_ms"] = (time.perf_counter() - t) * 1000
    await child.close()
    return out


COLUMNS = [
    ("cold_render_ms", "spawn → first render ms", ".0f"),
    ("cpu_first_render_ms", "sidecar CPU to first render ms", ".0f"),
    ("rss_first_render_mb", "RSS at first render MB", ".0f"),
    ("rss_settled_mb", "RSS settled (+3 s) MB", ".0f"),
    ("ping_ms", "spawn → ping ms", ".0f"),
    ("first_capture_ms", "first capture after ping ms", ".1f"),
    ("first_render_ms", "first render after ping ms", ".1f"),
    ("capture_after_cold_render_ms", "capture after cold render ms", ".1f"),
    ("max_stall_ms", "max loop stall ms", ".1f"),
    ("stalls_over_20ms", "stalls > 20 ms", ".0f"),
    ("max_busy_ms", "max loop busy ms", ".1f"),
]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", type=Path, action="append", help="checkout(s) to run (default: this one)")
    parser.add_argument("--dense", choices=["off", "on", "both"], default="both")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/stratagate-bench-start"))
    parser.add_argument("--db", type=Path, help="use this database (copied, never written) instead of building one")
    parser.add_argument("--namespace", default=NS, help="namespace the renders and captures use (with --db)")
    parser.add_argument("--served", action="store_true",
                        help="start on the database as a sidecar left it, with its derived search index (a restart)")
    args = parser.parse_args()
    trees = args.tree or [REPO]
    work: Path = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    base_db = args.db or work / f"events-{args.events}.db"
    if args.db is None:
        await build_db(base_db, args.events)
    if args.served:
        base_db = await served_copy(trees[0], base_db, work, args.namespace)
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.dense]
    results: dict[tuple[str, bool], list[dict[str, float]]] = {}
    for k in range(args.runs):  # interleaved: trees and modes see the same machine load
        for dense in modes:
            for tree in trees:
                run = await one_run(tree, base_db, work, dense, k, args.namespace, args.served)
                results.setdefault((str(tree), dense), []).append(run)
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"{base_db.name} ({'served before' if args.served else 'never served'}); medians of {args.runs} runs "
          "(min–max)\n")
    print("| tree | dense | " + " | ".join(title for _, title, _ in COLUMNS) + " |")
    print("|---|---|" + "---:|" * len(COLUMNS))
    for (tree, dense), runs in results.items():
        cells = []
        for key, _, fmt in COLUMNS:
            values = [r[key] for r in runs]
            cells.append(f"{statistics.median(values):{fmt}} ({min(values):{fmt}}–{max(values):{fmt}})")
        print(f"| {tree} | {'on' if dense else 'off'} | " + " | ".join(cells) + " |")
    print(f"\nCommand: `{shlex.join([Path(sys.executable).name, *sys.argv])}`")


if __name__ == "__main__":
    asyncio.run(main())
