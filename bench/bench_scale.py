"""The scale bench: every speed and footprint goal in one run, beside this machine's floors.

Run from the repo root:  .venv/bin/python bench/bench_scale.py [--quick | --full] [--out bench-scale.json]

What is built (bench/scale_build.py, cached under bench/.cache/ keyed by generator and schema version):
- events databases of 1k, 10k and 100k generated memories (decisions, preferences, plans, changes, facts and
  events over ~400 services, ~90 tools, ~50 people: bench/scale_workload.py), each projected into the graph,
  written in-process through admission's bulk path (events/admit.py ``admit_new``: the rows memory_remember writes,
  a batch's rows in a few statements) with memory_remember's inline projection, 250 per transaction;
- turns databases of 1k, 10k and 100k captured turns (user, a 12-line grep result, assistant): up to 10k written by
  a real `stratagate serve` with 64 captures in flight, block summaries answered at once by the host, the rest
  in-process through turn.capture's own transaction body;
- the LoCoMo conversation (bench_locomo.py's file) captured by a real sidecar with dense on, vectors stored.
100k events and 100k turns build in about 6½ minutes of CPU (measured: events 109 s, turns 276 s). Every
measurement then runs against a real `stratagate serve` child process on a COPY, over stdio JSON-RPC (the test
client, tests/support/sidecar.py, with ``process=True``), so each figure includes the RPC hop.

Every per-request figure is the sidecar child's own CPU time (bench/scale_cpu.py: its process CPU clock read
around each request, all threads; wall time on a shared machine is mostly other people's work), with wall time
beside it. The floors have their CPU time too.

What is measured (medians and percentiles; the machine is shared, so compare within one run):
- activation.render p50/p99 per events size (300 renders, or as many as fit in 60 s but at least 30; dense off, a
  reading session with 12 captured turns; every render a new human message, a step query from the generator that
  names a subject and a topic and that no render has asked before), and apart from it the same query rendered again
  at once (a later step of the same turn: its searches are answered from the search memo);
  memory_search_events p50 per size (the same way, up to 100);
- memory_search_raw p50 over the LoCoMo questions with dense on (and its recall@10, which must not drop);
- turn.capture p50/p99 sequential (one in flight: fsync per turn) at 0, 1k, 10k and 100k turns of history,
  sealing captures apart (their block summary runs before the next capture); pipelined turns/s (a burst of 2,000);
- the worst event-loop stall, seen from the client: system.ping sent every 5 ms from the first answer on, through
  the first capture, the first sealed block and its summary, the first render and (dense on) the first search
  that loads the model; the ping's worst latency is the stall plus one pipe round trip. system.info's own ``loop``
  figures are recorded too when the sidecar reports them;
- first capture and first render after start; cold start (spawn) → first activation.render answer at 10k events;
- RSS after the first activation, dense off (10k events) and dense on (LoCoMo, model loaded by a search);
- memory_remember throughput, sequential round trips, on an empty database and on the 100k one.
Floors (bench/scale_floors.py), measured in the same run: bare commit with fsync, bare FTS5 query over the same
texts and row count (ranked top 10, and the unranked count), bare stdio pipe round trip, `python3 -c pass`.

Children run with bytecode caching on (PYTHONPYCACHEPREFIX under bench/.cache/, even when the environment sets
PYTHONDONTWRITEBYTECODE), as an installed sidecar has it; one unmeasured start warms that cache.
Prints a Markdown table (goal, target, measured, met?, floor) and writes it beside the JSON of raw figures, with
the chart (bench/scale_chart.py: recall and capture CPU against memory size, log scale, floors and goals) as .svg.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import resource
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import scale_build  # noqa: E402
import scale_chart  # noqa: E402
import scale_floors  # noqa: E402
from bench_capture import make_turn  # noqa: E402
from scale_build import CACHE, NS, summary_host  # noqa: E402
from scale_cpu import ProcessCPU, Sampler  # noqa: E402
from scale_floors import pct  # noqa: E402
from scale_workload import fresh_queries, history_turn, memories, queries  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402

DENSE_OFF = {"STRATAGATE_DENSE": "off"}
BYTECODE = {"PYTHONPYCACHEPREFIX": str(CACHE / "pycache"), "PYTHONDONTWRITEBYTECODE": ""}


MIN_SAMPLES = 30


@dataclass
class Sizes:
    events: list[int]
    turns: list[int]  # history sizes; 0 is a fresh database
    renders: int
    searches: int
    captures: int
    burst: int
    remembers: int
    cold_starts: int
    cold_events: int
    locomo_questions: int | None = None  # None: all
    locomo_file: str | None = None  # None: bench_locomo's default (../shared/data/locomo/26.json from the repo)
    budget_s: float = 60.0  # per size and measure: stop early (after MIN_SAMPLES) when renders are this slow


QUICK = Sizes(events=[500, 2000], turns=[0, 2000], renders=60, searches=30, captures=60, burst=300, remembers=40,
              cold_starts=3, cold_events=2000, locomo_questions=60, budget_s=15)
FULL = Sizes(events=[1000, 10000, 100000], turns=[0, 1000, 10000, 100000], renders=300, searches=100, captures=300,
             burst=2000, remembers=200, cold_starts=5, cold_events=10000)


@dataclass
class Figures:
    out: Path
    raw: dict[str, Any] = field(default_factory=dict)

    def put(self, key: str, value: Any) -> None:
        self.raw[key] = value
        self.out.write_text(json.dumps(self.raw, indent=2) + "\n")  # written as it goes: a long run keeps its part
        print(f"  {key}: {json.dumps(value) if not isinstance(value, float) else f'{value:.2f}'}", file=sys.stderr,
              flush=True)


def env(extra: dict[str, str] | None = None) -> dict[str, str]:
    return BYTECODE | (extra or {})


def copy_db(src: Path, workdir: Path, name: str) -> Path:
    dst = workdir / name
    for p in workdir.glob(name + "*"):  # the database, its WAL, and the derived search index's folder
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    shutil.copyfile(src, dst)
    return dst


def rss_mb(client: SidecarClient) -> float:
    return psutil.Process(client.proc.pid).memory_info().rss / 2**20


def spread(sample: Sampler, **extra: Any) -> dict[str, Any]:
    """CPU (the sidecar child's, per request) and wall percentiles of a sampler's requests."""
    cpu, wall = sample.cpu_ms, sample.wall_ms
    return {"cpu_p50": statistics.median(cpu), "cpu_p99": pct(cpu, 0.99), "p50": statistics.median(wall),
            "p99": pct(wall, 0.99), "n": len(wall), "cpu_precise": sample.cpu.precise} | extra


def start(db: Path, extra: dict[str, str] | None = None, **kw: Any) -> Any:
    """A real `stratagate serve` child (its CPU is what the figures count), never the in-process test sidecar."""
    return SidecarClient.start(db, env=env(extra), process=True, **kw)


async def timed(client: SidecarClient, method: str, params: Any) -> tuple[float, Any]:
    s = time.perf_counter()
    out = await client.call(method, params, timeout=120)
    return (time.perf_counter() - s) * 1000, out


async def timed_tool(client: SidecarClient, name: str, args: dict[str, Any], session: str = "reader") -> float:
    s = time.perf_counter()
    await client.call("tools.call", {"namespace": NS, "session": session, "name": name, "arguments": args},
                      timeout=120)
    return (time.perf_counter() - s) * 1000


class StallProbe:
    """system.ping every ``every`` s; the worst reply time is the loop's worst stall (plus one pipe round trip)."""

    def __init__(self, client: SidecarClient, every: float = 0.005):
        self.client, self.every = client, every
        self.worst = 0.0
        self.count = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            s = time.perf_counter()
            await self.client.call("system.ping", timeout=120)
            self.worst = max(self.worst, (time.perf_counter() - s) * 1000)
            self.count += 1
            await asyncio.sleep(self.every)

    def __enter__(self) -> StallProbe:
        self._task = asyncio.create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


async def loop_info(client: SidecarClient) -> Any:
    info = await client.call("system.info", timeout=120)
    return info.get("loop")


async def reader_session(client: SidecarClient) -> None:
    for i in range(1, 13):
        params = history_turn(i, NS, "reader") | {"receipt": f"scale:reader:{i}"}
        await client.call("turn.capture", params, timeout=120)


# ---------------------------------------------------------------- events: render, search, remember


async def events_size(fig: Figures, n: int, db: Path, workdir: Path, sz: Sizes, qs: list[str]) -> None:
    path = copy_db(db, workdir, f"events-{n}.db")
    client = await start(path, DENSE_OFF)
    try:
        counts = (await client.call("system.info", timeout=120))["counts"]
        fig.put(f"memory_{n}", {"events": counts["events"], "graph_nodes": counts["graph_nodes"],
                                "graph_facts": counts["graph_facts"]})
        await reader_session(client)
        await client.call("activation.render", {"namespace": NS, "session": "reader", "query": "warm up"}, 120)
        # Each render a new human message (a query no search has answered yet: the first step of a turn); the same
        # query rendered again at once is a later step of that turn, answered from the search memo: measured apart.
        renders, again = Sampler(client.proc.pid), Sampler(client.proc.pid)
        fresh = fresh_queries(sz.renders)
        deadline = time.monotonic() + sz.budget_s
        while len(renders) < sz.renders and (len(renders) < MIN_SAMPLES or time.monotonic() < deadline):
            q = {"namespace": NS, "session": "reader", "query": fresh[len(renders)]}
            out = await renders(lambda q=q: client.call("activation.render", q, timeout=120))
            await again(lambda q=q: client.call("activation.render", q, timeout=120))
        fig.put(f"render_{n}", spread(renders, last_event_ids=len(out.get("event_ids", [])), queries="fresh"))
        fig.put(f"render_again_{n}", spread(again))
        searches = Sampler(client.proc.pid)
        deadline = time.monotonic() + sz.budget_s
        while len(searches) < sz.searches and (len(searches) < MIN_SAMPLES or time.monotonic() < deadline):
            q = {"query": qs[len(searches) % len(qs)]}
            await searches(lambda q=q: timed_tool(client, "memory_search_events", q))
        fig.put(f"event_search_{n}", spread(searches))
        with StallProbe(client) as probe:
            for i in range(MIN_SAMPLES):
                await client.call("activation.render",
                                  {"namespace": NS, "session": "reader", "query": qs[i % len(qs)]}, 120)
        fig.put(f"stall_during_renders_{n}", {"worst_ping_ms": probe.worst, "pings": probe.count})
        fig.put(f"loop_info_{n}", await loop_info(client))
    except Exception:
        print("\n".join(client.stderr_lines[-60:]), file=sys.stderr)  # the sidecar's traceback of an internal error
        raise
    finally:
        await client.close()


async def remember_rate(client: SidecarClient, sz: Sizes, seed: int) -> dict[str, Any]:
    """Sequential memory_remember round trips of new memories (another seed: none is already stored)."""
    sample = Sampler(client.proc.pid)
    deadline = time.monotonic() + sz.budget_s
    for m in memories(sz.remembers, seed=seed):
        if len(sample) >= MIN_SAMPLES and time.monotonic() > deadline:
            break
        args = {"text": m["text"], "type": m["type"]}
        await sample(lambda args=args: timed_tool(client, "memory_remember", args, "writer"))
    times = sample.wall_ms
    return spread(sample, per_s=len(times) / (sum(times) / 1000), p50_ms=statistics.median(times),
                  cpu_per_s=len(times) / (sum(sample.cpu_ms) / 1000))


async def remember(fig: Figures, top: Path, n: int, workdir: Path, sz: Sizes) -> None:
    """memory_remember throughput on an empty database and on a copy of the largest one."""
    for size, path in ((0, workdir / "remember-empty.db"), (n, copy_db(top, workdir, "remember-top.db"))):
        client = await start(path, DENSE_OFF)
        try:
            fig.put(f"remember_{size}", await remember_rate(client, sz, seed=98))
        finally:
            await client.close()


# ---------------------------------------------------------------- start-up: cold start, first answers, stalls, RSS


async def cold_start(fig: Figures, db: Path, workdir: Path, sz: Sizes, qs: list[str]) -> None:
    """Spawn → first activation.render answer (sent at once, queued in the pipe until the sidecar reads)."""
    times, cpu, rss = [], [], []
    for k in range(sz.cold_starts + 1):  # the first start warms the bytecode cache and is not counted
        path = copy_db(db, workdir, "cold.db")
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
        full_env |= {"PYTHONPATH": str(REPO / "sidecar")} | env(DENSE_OFF)
        s = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "stratagate", "serve", "--db", str(path), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=full_env, limit=64 * 2**20)
        client = SidecarClient(proc, None)
        try:
            await client.call("activation.render", {"namespace": NS, "session": "cold", "query": qs[k % len(qs)]},
                              timeout=120)
            if k:
                times.append((time.perf_counter() - s) * 1000)
                cpu.append(ProcessCPU(proc.pid).now() * 1000)  # everything the child ran so far, threads included
                rss.append(rss_mb(client))
        finally:
            await client.close()
    fig.put("cold_start_render", {"median_ms": statistics.median(times), "min_ms": min(times), "runs": len(times),
                                  "cpu_median_ms": statistics.median(cpu), "events": sz.cold_events})
    fig.put("rss_dense_off", {"median_mb": statistics.median(rss), "events": sz.cold_events})


async def first_answers(fig: Figures, db: Path, workdir: Path, qs: list[str], tag: str) -> None:
    """After the first ping: the first capture, the captures up to the first sealed block (and its summary job),
    the first render, with the stall probe running throughout."""
    path = copy_db(db, workdir, "first.db")
    client = await start(path, DENSE_OFF, host_handler=summary_host)
    try:
        with StallProbe(client) as probe:
            ms_capture, _ = await timed(client, "turn.capture", history_turn(1, NS, "fresh"))
            sealed = []
            for i in range(2, 40):
                _, out = await timed(client, "turn.capture", history_turn(i, NS, "fresh"))
                if out["sealed_block_ids"]:
                    sealed = out["sealed_block_ids"]
                    break
            ms_render, _ = await timed(client, "activation.render",
                                       {"namespace": NS, "session": "fresh", "query": qs[0]})
            await scale_build.wait_jobs(client, timeout=120)
        fig.put(f"first_answers_{tag}", {"first_capture_ms": ms_capture, "first_render_ms": ms_render,
                                         "sealed": bool(sealed), "worst_ping_ms": probe.worst,
                                         "pings": probe.count})
        fig.put(f"loop_info_first_{tag}", await loop_info(client))
    finally:
        await client.close()


# ---------------------------------------------------------------- LoCoMo: memory_search_raw with dense on


async def locomo(fig: Figures, workdir: Path, sz: Sizes) -> None:
    import bench_locomo as bl

    conv = bl.load(Path(sz.locomo_file) if sz.locomo_file else bl.DEFAULT_FILE)
    turns, where = bl.capture_plan(conv)
    cached = scale_build.cache_path("locomo", len(turns))
    if not cached.exists():
        build = workdir / "locomo-build.db"
        client = await start(build, host_handler=summary_host)
        try:
            for params in turns:
                await client.call("turn.capture", params, timeout=120)
            await wait_vectors(client)
            await scale_build.wait_jobs(client)
        finally:
            await client.close()
        CACHE.mkdir(parents=True, exist_ok=True)
        scale_build._snapshot(build, cached)
    questions = conv.questions[: sz.locomo_questions] if sz.locomo_questions else conv.questions
    path = copy_db(cached, workdir, "locomo.db")
    client = await start(path, host_handler=summary_host)
    try:
        await client.call("activation.render", {"namespace": bl.NAMESPACE, "session": "bench", "query": "hello"},
                          120)
        with StallProbe(client) as probe:  # the first search loads the dense model
            s = time.perf_counter()
            await client.tool(bl.NAMESPACE, "bench", "memory_search_raw", {"query": "warm up", "limit": bl.LIMIT})
            first = (time.perf_counter() - s) * 1000
        sample, ranked = Sampler(client.proc.pid), []
        for q in questions:
            params = {"namespace": bl.NAMESPACE, "session": "bench", "name": "memory_search_raw",
                      "arguments": {"query": q.text, "limit": bl.LIMIT}}
            res = await sample(lambda params=params: client.call("tools.call", params, timeout=120))
            ranked.append([where[(h["session"], h["turn"], h["role"])] for h in res["hits"]])
        info = await client.call("system.info")
        fig.put("raw_search_locomo", spread(
            sample, questions=len(questions), recall_at_10=bl.metrics(questions, ranked)["r@10"],
            first_search_ms=first, messages=info["counts"]["messages"], dense_state=info["dense"]["state"],
            vectors=info["dense"]["vectors"], worst_ping_first_search_ms=probe.worst))
        fig.put("rss_dense_on", {"mb": rss_mb(client)})
        fig.put("loop_info_locomo", info.get("loop"))
    finally:
        await client.close()
    bm = bl.run_rank_bm25(conv, bl.words, "rank-bm25")
    fig.put("floor_rank_bm25_locomo_ms", statistics.median(bm.latencies) * 1000)


async def wait_vectors(client: SidecarClient, timeout: float = 1200) -> None:  # noqa: ASYNC109
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dense = (await client.call("system.info", timeout=120))["dense"]
        if dense["state"] == "ready" and dense["pending"] and dense["pending"]["total"] == 0:
            return
        if dense["state"] in ("off", "unavailable"):
            raise RuntimeError(f"dense is {dense['state']}: {dense}")
        await asyncio.sleep(1)
    raise TimeoutError("vectors were not stored in time")


# ---------------------------------------------------------------- capture


async def capture_size(fig: Figures, n: int, db: Path | None, workdir: Path, sz: Sizes) -> None:
    path = copy_db(db, workdir, f"turns-{n}.db") if db else workdir / "turns-0.db"
    client = await start(path, DENSE_OFF, host_handler=summary_host)
    try:
        await client.call("turn.capture", history_turn(0, NS, "warm"), timeout=120)  # tokenizer ready
        await scale_build.wait_jobs(client)
        plain, sealing = Sampler(client.proc.pid), Sampler(client.proc.pid)
        for i in range(1, sz.captures + 1):
            params = make_turn(i) | {"namespace": NS, "session": "live", "receipt": f"scale:live:{i}"}
            c, ms, out = plain.cpu.now(), *(await timed(client, "turn.capture", params))
            cpu_ms = (plain.cpu.now() - c) * 1000  # a sealing capture queues a summary job: counted apart
            into = sealing if out["sealed_block_ids"] else plain
            into.wall_ms.append(ms)
            into.cpu_ms.append(cpu_ms)
            if out["sealed_block_ids"]:
                await scale_build.wait_jobs(client)  # its summary runs now, not inside the next capture's window
        await scale_build.wait_jobs(client)
        burst = [make_turn(i) | {"namespace": NS, "session": "burst", "receipt": f"scale:burst:{i}"}
                 for i in range(1, sz.burst + 1)]
        took = await scale_build.capture_window(client, burst, window=len(burst))
        fig.put(f"capture_{n}", spread(plain, seal_p50=statistics.median(sealing.wall_ms) if len(sealing) else None,
                                       seal_cpu_p50=statistics.median(sealing.cpu_ms) if len(sealing) else None,
                                       pipelined_per_s=len(burst) / took, history=n))
        await scale_build.wait_jobs(client)
    finally:
        await client.close()


# ---------------------------------------------------------------- the table


Row = tuple[str, str, str, bool | None, str]


def _floor(v: Any, key: str = "p50") -> float:
    """A floor figure: a float in runs made before floors had CPU, else the dict's ``key``."""
    return float(v) if isinstance(v, int | float) else float(v[key])


def cpu_of(d: dict[str, Any], q: str = "p50") -> float:
    """The sidecar's CPU ms per request at percentile ``q``; runs made before CPU was measured give wall."""
    return float(d.get(f"cpu_{q}", d[q]))


def _spread_text(d: dict[str, Any], p99: bool = True, digits: int = 1) -> str:
    """'CPU p50 / p99 ms (wall p50 / p99)'; wall only, marked, for a run without CPU figures."""
    f = f"{{:.{digits}f}}"
    wall = f"{f.format(d['p50'])} / {f.format(d['p99'])}" if p99 else f.format(d["p50"])
    if "cpu_p50" not in d:
        return f"wall {wall} ms"
    cpu = f"{f.format(d['cpu_p50'])} / {f.format(d['cpu_p99'])}" if p99 else f.format(d["cpu_p50"])
    return f"{cpu} ms (wall {wall})"


def _fts_floor(f: dict[str, Any], ranked: str = "three_terms") -> str:
    cpu = f.get(f"{ranked}_cpu", f[ranked])
    count = f", unranked count {f['count_cpu']:.2f} ms" if "count_cpu" in f else ""
    return f"FTS5 bm25 top 10: {cpu:.2f} ms{count}"


def _render_rows(r: dict[str, Any], sz: Sizes) -> list[Row]:
    ev, fts = sz.events, r["floor_fts"]
    rows: list[Row] = []
    for n in ev:
        ren = r[f"render_{n}"]
        target = {10000: 10.0, 100000: 30.0}.get(n)
        rows.append((f"recall (`activation.render`) CPU p50 / p99, {n:,} events",
                     f"p99 ≤ {target:.0f} ms" if target else "—", _spread_text(ren),
                     cpu_of(ren, "p99") <= target if target else None, _fts_floor(fts[str(n)])))
    if len(ev) > 1:
        mid, top = ev[-2], ev[-1]
        ratio = cpu_of(r[f"render_{top}"]) / cpu_of(r[f"render_{mid}"])
        rows.append((f"recall CPU p50 growth, {mid:,} → {top:,} events", "≤ 2×", f"{ratio:.2f}×", ratio <= 2,
                     f"{top / mid:.0f}× the events"))
    for n in ev:
        if f"render_again_{n}" in r:
            rows.append((f"recall CPU p50 / p99, a later step of the same turn (memo'd), {n:,} events", "—",
                         _spread_text(r[f"render_again_{n}"]), None, "—"))
    for n in ev:
        s = r[f"event_search_{n}"]
        target = {10000: 5.0, 100000: 15.0}.get(n)
        rows.append((f"event search CPU p50, {n:,} events", f"≤ {target:.0f} ms" if target else "—",
                     _spread_text(s, p99=False), cpu_of(s) <= target if target else None, _fts_floor(fts[str(n)])))
    return rows


def _raw_rows(r: dict[str, Any], sz: Sizes) -> list[Row]:
    raw = r["raw_search_locomo"]
    return [(f"`memory_search_raw` CPU p50, dense on, LoCoMo ({raw['questions']} questions, {raw['messages']} "
             "messages)", "≤ 10 ms", f"{_spread_text(raw, p99=False)}, recall@10 {raw['recall_at_10']:.3f}",
             cpu_of(raw) <= 10, f"rank-bm25 {r['floor_rank_bm25_locomo_ms']:.2f} ms")]


def _capture_rows(r: dict[str, Any], sz: Sizes) -> list[Row]:
    commit, pipe = r["floor_commit"], r["floor_pipe_ms"]
    floor = (f"commit {_floor(commit, 'cpu_p50'):.2f} ms CPU + pipe {_floor(pipe, 'cpu'):.2f} ms CPU"
             if isinstance(pipe, dict) else f"commit {commit['p50']:.2f} + pipe {_floor(pipe):.2f} ms (wall)")
    rows: list[Row] = []
    for n in sz.turns:
        c = r[f"capture_{n}"]
        rows.append((f"capture CPU p50 / p99, sequential, {n:,} turns of history", "p50 ≤ 1.2 ms",
                     _spread_text(c, digits=2), cpu_of(c) <= 1.2, floor))
    burst = min(r[f"capture_{n}"]["pipelined_per_s"] for n in sz.turns)
    rows.append((f"pipelined capture ({sz.burst:,} in flight), worst over histories, wall", "≥ 2,000 turns/s",
                 f"{burst:,.0f} turns/s", burst >= 2000, f"commit {1000 / commit['p50']:,.0f}/s unbatched"))
    return rows


def _start_rows(r: dict[str, Any], sz: Sizes) -> list[Row]:
    stalls = {k: v["worst_ping_ms"] for k, v in r.items() if isinstance(v, dict) and "worst_ping_ms" in v}
    if "raw_search_locomo" in r:
        stalls["first_search_dense"] = r["raw_search_locomo"]["worst_ping_first_search_ms"]
    worst = max(stalls, key=lambda k: stalls[k])
    fa, cs = r["first_answers_events"], r["cold_start_render"]
    py = r["floor_python_ms"]
    card = r.get("floor_card_start")  # (runs before this floor have none)
    cold_cpu = cs.get("cpu_median_ms")
    cold = f"{cold_cpu:.0f} ms (wall {cs['median_ms']:.0f})" if cold_cpu else f"wall {cs['median_ms']:.0f} ms"
    rows: list[Row] = [
        ("max event-loop stall (ping every 5 ms, client side, wall)", "≤ 20 ms", f"{stalls[worst]:.1f} ms ({worst})",
         stalls[worst] <= 20, f"pipe {_floor(r['floor_pipe_ms']):.2f} ms"),
        ("first capture / first render after start, wall", "≤ 50 / ≤ 50 ms",
         f"{fa['first_capture_ms']:.1f} / {fa['first_render_ms']:.1f} ms",
         fa["first_capture_ms"] <= 50 and fa["first_render_ms"] <= 50, "—"),
        (f"cold start → first recall CPU, {cs['events']:,} events", "≤ 250 ms", cold,
         (cold_cpu if cold_cpu else cs["median_ms"]) <= 250,
         f"`python3 -c pass` {_floor(py, 'cpu'):.0f} ms" + (" CPU" if isinstance(py, dict) else "")
         + (f"; the card's packages + exact encoding {card['cpu']:.0f} ms CPU" if card else "")),
    ]
    off = r["rss_dense_off"]["median_mb"]
    rows.append(("RSS after first activation, dense off", "≤ 80 MB", f"{off:.0f} MB", off <= 80,
                 f"the card's packages + exact encoding {card['rss_mb']:.0f} MB" if card else "—"))
    if "rss_dense_on" in r:
        on = r["rss_dense_on"]["mb"]
        rows.append(("RSS after first activation + search, dense on", "≤ 160 MB", f"{on:.0f} MB", on <= 160, "—"))
    return rows


def _build_rows(r: dict[str, Any], sz: Sizes) -> list[Row]:
    if r["cached"] or "build_cpu_s" not in r:
        return []
    cpu = r["build_cpu_s"]
    return [(f"build {sz.events[-1]:,} events + {sz.turns[-1]:,} turns (and the smaller sizes), CPU", "≤ 600 s",
             f"{cpu:.0f} s (wall {r['build_s']:.0f} s)", cpu <= 600, "—")]


def _remember_rows(r: dict[str, Any], sz: Sizes) -> list[Row]:
    top = sz.events[-1]
    r0, rt = r["remember_0"], r[f"remember_{top}"]
    cpu = f" (CPU p50 {r0['cpu_p50']:.1f} / {rt['cpu_p50']:.1f} ms)" if "cpu_p50" in rt else ""
    return [(f"`memory_remember` throughput, empty / {top:,} events, wall", f"≥ 150/s at {top:,}",
             f"{r0['per_s']:.3g} / {rt['per_s']:.3g} per s{cpu}", rt["per_s"] >= 150, "—")]


def goal_rows(r: dict[str, Any], sz: Sizes) -> list[Row]:
    rows: list[Row] = []
    for part in (_render_rows, _raw_rows, _capture_rows, _start_rows, _remember_rows, _build_rows):
        with contextlib.suppress(KeyError, ValueError):  # a part not run (--parts) has no row
            rows += part(r, sz)
    return rows


def markdown(r: dict[str, Any], sz: Sizes, command: str) -> str:
    met = {True: "yes", False: "**no**", None: "—"}
    lines = [f"Command: `{command}`", "",
             f"Run {r['date']}, {r['machine']}; load average at start {r['load_start']}, at end {r['load_end']}; "
             f"wall time {r['wall_s'] / 60:.1f} min (databases {'cached' if r['cached'] else 'built in this run'}). "
             "Figures are the sidecar's CPU time per request, wall time in brackets.",
             "", "| goal | target | measured | met? | floor (this run) |", "|---|---|---|---|---|"]
    lines += [f"| {g} | {t} | {m} | {met[ok]} | {f} |" for g, t, m, ok, f in goal_rows(r, sz)]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- main


PARTS = ("events", "remember", "startup", "locomo", "capture")


def _own_and_children_cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


async def run(sz: Sizes, fig: Figures, parts: set[str]) -> None:
    qs = queries()
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        workdir = Path(tmp)
        print("floors", file=sys.stderr)
        fig.put("floor_commit", scale_floors.bare_commit_ms())
        fig.put("floor_pipe_ms", await scale_floors.pipe_round_trip_ms())
        fig.put("floor_python_ms", scale_floors.python_pass_ms())
        fig.put("floor_card_start", scale_floors.card_start_floor(REPO / "sidecar"))
        if "events" in parts:  # over the same texts and row counts as the events databases
            fig.put("floor_fts", {str(n): scale_floors.bare_fts_ms(n, "redis", "billing worker redis")
                                  for n in sz.events})
        print("building / loading databases", file=sys.stderr)
        t0, c0 = time.perf_counter(), _own_and_children_cpu()
        events_db = {}
        if parts & {"events", "remember", "startup"}:
            events_db = await scale_build.build_events(sorted(set(sz.events) | {sz.cold_events}))
        turns_db = {}
        if "capture" in parts:
            turns_db = await scale_build.build_turns([n for n in sz.turns if n], env(DENSE_OFF))
        fig.put("build_s", time.perf_counter() - t0)
        fig.put("build_cpu_s", _own_and_children_cpu() - c0)  # this process and the build's sidecar children
        if "events" in parts:
            print("events", file=sys.stderr)
            for n in sz.events:
                await events_size(fig, n, events_db[n], workdir, sz, qs)
        if "remember" in parts:
            print("remember", file=sys.stderr)
            await remember(fig, events_db[sz.events[-1]], sz.events[-1], workdir, sz)
        if "startup" in parts:
            print("start-up", file=sys.stderr)
            await cold_start(fig, events_db[sz.cold_events], workdir, sz, qs)
            await first_answers(fig, events_db[sz.cold_events], workdir, qs, "events")
        if "locomo" in parts:
            print("LoCoMo, dense on", file=sys.stderr)
            await locomo(fig, workdir, sz)
        if "capture" in parts:
            print("capture", file=sys.stderr)
            for n in sz.turns:
                await capture_size(fig, n, turns_db.get(n), workdir, sz)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="small sizes, a smoke check (≤ 3 min once cached)")
    mode.add_argument("--full", action="store_true", help="the issue's sizes: 1k/10k/100k events, 100k turns "
                      "(the default)")
    parser.add_argument("--events", type=int, nargs="+", help="events sizes instead of the mode's")
    parser.add_argument("--turns", type=int, nargs="+", help="turns-of-history sizes instead of the mode's (0: fresh)")
    parser.add_argument("--locomo", help="the LoCoMo conversation file (default: bench_locomo.py's; a git worktree "
                        "has no ../shared beside it)")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS), help="run only these parts")
    parser.add_argument("--out", type=Path, default=Path("bench-scale.json"),
                        help="raw figures (JSON); the Markdown table goes beside it (.md)")
    args = parser.parse_args()
    sz = replace(QUICK if args.quick else FULL)
    if args.events:
        sz.events = sorted(args.events)
        sz.cold_events = min(sz.events, key=lambda n: abs(n - sz.cold_events))
    if args.turns:
        sz.turns = sorted(args.turns)
    sz.locomo_file = args.locomo
    CACHE.mkdir(parents=True, exist_ok=True)
    cached = all(scale_build.cache_path("events", n).exists() for n in sz.events) and all(  # before any build
        scale_build.cache_path("turns", n).exists() for n in sz.turns if n)
    fig = Figures(args.out)
    fig.raw |= {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cached": cached,
                "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
                "load_start": " ".join(f"{x:.2f}" for x in os.getloadavg()), "mode": "quick" if args.quick else "full",
                "sizes": sz.__dict__}
    t0 = time.perf_counter()
    await run(sz, fig, set(args.parts))
    fig.raw["wall_s"] = time.perf_counter() - t0
    fig.raw["load_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    command = shlex.join([".venv/bin/python", "bench/bench_scale.py", *sys.argv[1:]])
    fig.raw["command"] = command
    table = markdown(fig.raw, sz, command)
    args.out.write_text(json.dumps(fig.raw, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(table)
    args.out.with_suffix(".svg").write_text(scale_chart.svg(fig.raw))
    print(table)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
