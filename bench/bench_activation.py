"""Latency of `activation.render` (run before every model step) and of event search as long-term memory grows,
over stdio JSON-RPC, and `memory_remember` throughput at that size.

Run from the repo root:  .venv/bin/python bench/bench_activation.py [--events 1000 10000 100000] [--renders 200]

Each size's memory is built once through the admission path memory_remember uses (``events.admit`` with inline
graph projection, ``memory_text`` below), 500 events per transaction instead of one, and kept under
``bench/.cache/`` (gitignored; ``--rebuild`` builds again): 100k events take minutes to build, not hours. Each run
copies it, starts a real `stratagate serve` on the copy, captures turns in a reader session so the session clock
runs, then renders alternate between a handful of step queries, and `memory_search_events` runs the same queries.
Last, ``--remember`` more events are stored one `memory_remember` call at a time (events/s at that size).
Reports p50/p99 per size and the share of renders that would miss the shim's 1500 ms deadline.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "sidecar"))

from conftest import turn  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402

CACHE = REPO / "bench" / ".cache"
NS = "project:bench:0123456789abcdef"
TOOLS = ["npm", "pnpm", "yarn", "vite", "webpack", "jest", "vitest", "docker", "redis", "postgresql", "ruff"]
QUERIES = [
    "which package manager do we install with?",
    "why did the deploy of service-3 fail last week?",
    "what did we decide about the retry backoff for the billing worker?",
    "remind me who works on the checkout rewrite",
    "does the API still depend on redis for sessions?",
]
BUILD_BATCH = 500
BUILD_VERSION = 1  # bump when memory_text or the build changes: cached databases are then rebuilt


def memory_text(i: int) -> str:
    tool = TOOLS[i % len(TOOLS)]
    return (
        f"Decision {i}: service-{i % 37} uses {tool}; the retry backoff for worker-{i % 13} is capped at "
        f"{30 + i % 90} s because the billing API rate-limits bursts. Owner: team-{i % 7}."
    )


def _pct(times: list[float], q: float) -> float:
    times = sorted(times)
    return times[min(len(times) - 1, int(len(times) * q))]


async def build(path: Path, events: int) -> float:
    """``events`` memories; seconds. The first ``ADMITTED`` go through ``events.admit`` exactly as memory_remember
    does (inline graph projection), 500 per transaction; the rest are written by ``_bulk``: the same rows that path
    writes for these texts (event, search terms, source, projection result; the bench's texts carry no claims, so
    projection stores "no claims"), without the per-event checks and audit rows, hundreds of times faster."""
    from stratagate.events.admit import Options, admit
    from stratagate.storage.db import Database
    from stratagate.storage.lookup import ensure_namespace, ensure_session
    from stratagate.tools.event_tools import ACTOR, _project_now
    from stratagate.wiring import register_hooks

    register_hooks()

    db = Database(path)
    await db.open()
    start = time.perf_counter()
    try:
        for first in range(0, events, BUILD_BATCH):
            async with db.transaction() as conn:
                ns = await ensure_namespace(conn, NS)
                sess, _ = await ensure_session(conn, ns, "writer")
                options = Options(
                    namespace_id=ns, session_id=sess, origin="remember", actor=ACTOR, on_tombstone="refuse",
                    on_exact_duplicate="keep", unknown_target="error", projector=_project_now,
                )
                last = min(events, first + BUILD_BATCH)
                if first >= ADMITTED:
                    await _bulk(conn, options, range(first, last))
                    continue
                for i in range(first, last):
                    await admit(conn, [_candidate(i)], options)
            if first and first % 10_000 == 0:
                print(f"  built {first} events in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    finally:
        await db.close()
    return time.perf_counter() - start


ADMITTED = 2000


def _candidate(i: int) -> Any:
    from stratagate.events.admit import Candidate
    from stratagate.events.store import Source

    text = memory_text(i)
    return Candidate(statement=text, mentioned_at=datetime.now(UTC), sources=[Source(call_id=f"bench-{i}", quote=text)])


async def _bulk(conn: Any, options: Any, indexes: range) -> None:
    """The rows admission writes for these events (tests cover that path; this one only builds bench memory)."""
    import json

    from stratagate.events import admit as admission
    from stratagate.events import store
    from stratagate.timeutil import now_iso

    now = now_iso()
    for i in indexes:
        c = admission._redacted(_candidate(i))
        ev = admission._new_event(options, c, store.fingerprint(c.statement))
        data = ev.model_dump()
        for key in ("tags", "quotes", "participants", "claims"):
            data[key] = json.dumps(data[key], ensure_ascii=False)
        cols = [*data.keys(), "status", "pinned", "created_at", "updated_at"]
        cursor = await conn.execute(
            f"INSERT INTO events({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
            [*data.values(), "active", 0, now, now],
        )
        event_id = int(cursor.lastrowid or 0)
        await conn.execute("INSERT INTO event_fts(rowid, terms) VALUES (?, ?)", (event_id, store._fts_text(ev)))
        src = c.sources[0]
        await conn.execute(
            "INSERT INTO event_sources(event_id, call_id, quote, created_at) VALUES (?, ?, ?, ?)",
            (event_id, src.call_id, src.quote, now),
        )
        result = {"event": f"evt_{event_id}", "facts": [], "superseded_facts": [], "superseded_events": [],
                  "skipped": "no claims"}
        await conn.execute(
            "INSERT INTO graph_projection(event_id, batch_id, state, result, updated_at)"
            " VALUES (?, NULL, 'done', ?, ?)",
            (event_id, json.dumps(result), now),
        )


async def cached(events: int, rebuild: bool) -> Path:
    from stratagate.storage.schema import SCHEMA_VERSION

    path = CACHE / f"activation-{events}-s{SCHEMA_VERSION}-b{BUILD_VERSION}.db"
    if path.exists() and not rebuild:
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    for stale in CACHE.glob(partial.name + "*"):
        stale.unlink()
    seconds = await build(partial, events)
    print(f"  built {events} events in {seconds:.0f} s ({events / seconds:.0f}/s, batched)", file=sys.stderr)
    partial.rename(path)
    return path


async def run(events: int, renders: int, remember: int, rebuild: bool) -> dict[str, float]:
    source = await cached(events, rebuild)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memory.db"
        shutil.copyfile(source, db)
        client = await SidecarClient.start(db, env={"STRATAGATE_DENSE": "off"})
        try:
            for i in range(1, 13):
                await client.call("turn.capture", turn(i, namespace=NS, session="reader", user=f"step {i}"))
            await client.call("activation.render", {"namespace": NS, "session": "reader", "query": "warm up"})
            times, search, cpu = [], [], []
            for i in range(renders):
                query = QUERIES[i % len(QUERIES)]
                start, cpu_start = time.perf_counter(), time.process_time()
                out = await client.call("activation.render", {"namespace": NS, "session": "reader", "query": query})
                times.append((time.perf_counter() - start) * 1000)
                cpu.append((time.process_time() - cpu_start) * 1000)
                assert out["longterm_tokens"] <= 900 and len(out["event_ids"]) <= 4
                start = time.perf_counter()
                await client.tool(NS, "reader", "memory_search_events", {"query": query})
                search.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            for i in range(remember):
                await client.tool(NS, "writer", "memory_remember", {"text": memory_text(events + i)})
            remember_s = time.perf_counter() - start
        finally:
            await client.close()
    return {
        "p50": statistics.median(times),
        "p99": _pct(times, 0.99),
        "late": sum(t > 1500 for t in times) / len(times),
        # CPU of the whole process (the in-process sidecar's thread and the client's JSON work alike).
        "cpu_p50": statistics.median(cpu),
        "cpu_p99": _pct(cpu, 0.99),
        "search_p50": statistics.median(search),
        "search_p99": _pct(search, 0.99),
        "remember_per_s": remember / remember_s if remember else 0.0,
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--renders", type=int, default=200)
    parser.add_argument("--remember", type=int, default=100, help="memory_remember calls timed at each size")
    parser.add_argument("--rebuild", action="store_true", help="build the cached databases again")
    args = parser.parse_args()
    print(f"Command: .venv/bin/python bench/bench_activation.py --events {' '.join(map(str, args.events))} "
          f"--renders {args.renders} --remember {args.remember}\n")
    print("| events (each projected) | renders | render p50 ms | render p99 ms | render CPU p50 / p99 ms "
          "| over 1500 ms | event search p50 ms | event search p99 ms | memory_remember events/s |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in args.events:
        r = await run(n, args.renders, args.remember, args.rebuild)
        print(f"| {n} | {args.renders} | {r['p50']:.1f} | {r['p99']:.1f} | {r['cpu_p50']:.1f} / {r['cpu_p99']:.1f} "
              f"| {r['late']:.1%} "
              f"| {r['search_p50']:.1f} | {r['search_p99']:.1f} | {r['remember_per_s']:.0f} |", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
