"""Where one `activation.render` spends its CPU: the scale bench's events memory, profiled in this process.

Run from the repo root:  PYTHONPATH=$PWD/sidecar .venv/bin/python bench/profile_render.py [--events 10000 | --hub 400]
    [--renders 48] [--repeat] [--top 25] [--save profile.pstats] [--dump texts.json]

It copies bench_scale's cached events database (bench/scale_build.py builds it when missing), captures the reader
session's 12 turns through a real sidecar (as bench_scale does), then calls ``render_activation`` directly on this
thread under cProfile, and prints the CPU per render (the process's, and the loop thread's alone) and the profile's
top entries by own time and by cumulative time. Every measured render is a new human message (``fresh_queries``: a
query no cache has seen, as at the first step of a turn), after one unprofiled pass of other fresh queries that
warms the tokenizer and the pages; the same query rendered again at once (a later step of the same turn, answered
from the search memo) is measured apart. ``--repeat`` profiles the old way instead: the generator's 24 step queries
in a cycle (after the warm pass every search is memo'd). ``--hub N`` profiles a memory whose one graph node holds N
current facts instead. ``--dump`` writes every render's result, so two versions of the code can be compared byte for
byte.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import scale_build  # noqa: E402
from bench_scale import reader_session  # noqa: E402
from scale_build import NS  # noqa: E402
from scale_floors import pct  # noqa: E402
from scale_workload import fresh_queries, queries  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402

HUB_NS = "project:hub:0123456789abcdef"
HUB_QUERIES = ["what are the Zephyrpay quotas?", "Zephyrpay quota settings", "how much quota does Zephyrpay get?"]


async def hub(facts: int) -> Path:
    """A memory whose one graph node holds ``facts`` current attribute facts (only its own index holds them, so it is
    the direct match of the hub queries): recall reads them all for the node's links and shows six. Cached."""
    path = scale_build.CACHE / f"hub-{facts}-s{scale_build.SCHEMA_VERSION}.db"
    if path.exists():
        return path
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    client = await SidecarClient.start(partial, env={"STRATAGATE_DENSE": "off"})
    try:
        for i in range(facts):
            claim = {"subject": "Zephyrpay", "subject_kind": "project", "predicate": f"quota_{i:04d}",
                     "value": f"{i} MB"}
            text = f"Zephyrpay quota {i:04d} is {i} MB."
            await client.tool(HUB_NS, "writer", "memory_remember", {"text": text, "claims": [claim]})
    finally:
        await client.close()
    partial.rename(path)
    return path


@dataclass
class Renders:
    cpu: list[float] = field(default_factory=list)  # this process: the loop and the reader's thread
    loop_cpu: list[float] = field(default_factory=list)  # the loop's thread alone
    again_cpu: list[float] = field(default_factory=list)  # the same query at once again (process)
    texts: list[object] = field(default_factory=list)


async def renders(db: Path, ns: str, qs: list[str], profile: cProfile.Profile | None, again: bool = False) -> Renders:
    """One render per query (CPU of this process, where every read runs, and of the loop's thread alone), and with
    ``again`` each query rendered a second time at once, unprofiled (a later step of the same turn). The profile
    sees the loop's thread only: a statement's own time is in the reader's thread (the difference of the two CPU
    figures), its hand-off and row handling on the loop."""
    from stratagate.activation.render import ActivationParams, render_activation
    from stratagate.config import load_settings
    from stratagate.storage.db import Database
    from stratagate.tokens import count_tokens

    settings = load_settings({"db": str(db)}, environ={"STRATAGATE_DENSE": "off"})
    database = Database(db)
    await database.open()
    out = Renders()
    try:
        for q in qs:
            p = ActivationParams(namespace=ns, session="reader", query=q)
            start, loop_start = time.process_time(), time.thread_time()
            if profile is not None:
                profile.enable()
            text = await render_activation(database, settings, p, count_tokens)
            if profile is not None:
                profile.disable()
            out.cpu.append((time.process_time() - start) * 1000)
            out.loop_cpu.append((time.thread_time() - loop_start) * 1000)
            out.texts.append(text)
            if again:
                start = time.process_time()
                await render_activation(database, settings, p, count_tokens)
                out.again_cpu.append((time.process_time() - start) * 1000)
    finally:
        await database.close()
    return out


def _spread(ms: list[float]) -> str:
    return f"p50 {statistics.median(ms):.2f} ms, p99 {pct(ms, 0.99):.2f} ms"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--hub", type=int, help="instead: a memory with one node of this many current facts")
    parser.add_argument("--renders", type=int, default=48)
    parser.add_argument("--repeat", action="store_true", help="cycle the generator's 24 step queries (memo'd) "
                        "instead of fresh ones")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--save", type=Path, help="write the raw profile here (pstats)")
    parser.add_argument("--dump", type=Path, help="write every render's result here (JSON)")
    args = parser.parse_args()
    if args.hub:
        source, ns, qs, label = await hub(args.hub), HUB_NS, HUB_QUERIES, f"one node of {args.hub} facts"
    else:
        source, ns, qs = (await scale_build.build_events([args.events]))[args.events], NS, queries()
        label = f"{args.events} events"
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "events.db"
        shutil.copyfile(source, db)
        if not args.hub:
            client = await SidecarClient.start(db, env={"STRATAGATE_DENSE": "off"})
            try:
                await reader_session(client)
            finally:
                await client.close()
        if args.repeat or args.hub:
            warm, measured, profiled = qs, [qs[i % len(qs)] for i in range(args.renders)], None
        else:  # every measured query new: three disjoint sets of fresh queries
            warm = fresh_queries(len(qs), seed=142)
            measured = fresh_queries(args.renders, seed=141, avoid=set(warm))
            profiled = fresh_queries(args.renders, seed=143, avoid=set(warm) | set(measured))
        await renders(db, ns, warm, None)  # warm: tokenizer, pages
        plain = await renders(db, ns, measured, None, again=not args.repeat)
        profile = cProfile.Profile(time.thread_time)  # CPU, not wall: the machine is shared
        texts = (await renders(db, ns, profiled or measured, profile)).texts
    kind = "cycled step queries (memo'd)" if args.repeat or args.hub else "fresh queries"
    print(f"{label}, {len(plain.cpu)} renders of {kind}, unprofiled: CPU {_spread(plain.cpu)} (process); on the "
          f"loop's thread {_spread(plain.loop_cpu)}. Profiled with every read inline, in this thread's CPU time (the "
          "timer's ~2 us per call is charged too).")
    if plain.again_cpu:
        print(f"The same query again at once (a later step of the same turn, memo'd): CPU {_spread(plain.again_cpu)}.")
    stats = pstats.Stats(profile)
    if args.save:
        stats.dump_stats(args.save)
    by_file: dict[str, float] = {}
    for (file, _, name), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        key = name if file == "~" else file.split("/sidecar/")[-1].split("/site-packages/")[-1]
        by_file[key] = by_file.get(key, 0.0) + own
    print("Own time per render by module (ms):")
    for key, own in sorted(by_file.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"  {own * 1000 / args.renders:8.3f}  {key}")
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top)
    if args.dump:
        args.dump.write_text(json.dumps(texts, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
