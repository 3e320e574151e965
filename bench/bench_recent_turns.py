"""What the recent turns' length costs a fresh step: `activation.render` CPU at 10k events when the session's last two
turns hold 0 to 5,000 words of assistant text (a long answer is the common case in DSH). With ``--tool-round N``
each query also carries N characters of source code, as DSH's step query carries the newest tool round's calls and
results (up to 2,000 characters, dsh/query.py) after the human message.

Run from the repo root:  PYTHONPATH=$PWD/sidecar .venv/bin/python bench/bench_recent_turns.py [--events 10000]
    [--words 0 300 1500 5000] [--renders 100] [--tool-round 2000]

For each length it copies bench_scale's cached events database, captures the reader session's turns through a real
sidecar, then two turns whose assistant text is that many words of docs/architecture.md, and renders fresh queries
in this process (``render_activation``, the search memo emptied before each render: the first step after a
capture finds none), reporting the process's CPU per render. Point PYTHONPATH at another checkout's sidecar/ to
measure that tree on the same databases.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

import scale_build  # noqa: E402
from bench_scale import reader_session  # noqa: E402
from conftest import turn  # noqa: E402
from scale_build import NS  # noqa: E402
from scale_floors import pct  # noqa: E402
from scale_workload import fresh_queries  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402


def tool_round(i: int, chars: int) -> str:
    """``chars`` characters of this repository's Python source, from a place that differs per query."""
    if not chars:
        return ""
    code = (REPO / "sidecar" / "stratagate" / "activation" / "longterm.py").read_text("utf-8")
    start = (i * 997) % max(1, len(code) - chars)
    return "\n\n" + code[start : start + chars]


async def one(source: Path, words: int, renders: int, tool_chars: int = 0) -> list[float]:
    from stratagate.activation import search_memo
    from stratagate.activation.render import ActivationParams, render_activation
    from stratagate.config import load_settings
    from stratagate.storage.db import Database
    from stratagate.storage.sqlite import caches
    from stratagate.tokens import count_tokens

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "events.db"
        shutil.copyfile(source, db)
        client = await SidecarClient.start(db, env={"STRATAGATE_DENSE": "off"})
        try:
            await reader_session(client)
            vocabulary = re.findall(r"[A-Za-z][A-Za-z\-]+", (REPO / "docs" / "architecture.md").read_text("utf-8"))
            body = " ".join(vocabulary[:words])
            for i in range(2 if words else 0):
                half = body[i * len(body) // 2 : (i + 1) * len(body) // 2]
                await client.call("turn.capture", turn(100 + i, namespace=NS, session="reader",
                                                        user="please explain the design", assistant=half))
        finally:
            await client.close()
        settings = load_settings({"db": str(db)}, environ={"STRATAGATE_DENSE": "off"})
        database = Database(db)
        await database.open()
        try:
            warm = fresh_queries(24, seed=142)
            for q in warm:
                await render_activation(database, settings, ActivationParams(namespace=NS, session="reader", query=q),
                                        count_tokens)
            cpu = []
            for i, q in enumerate(fresh_queries(renders, seed=141, avoid=set(warm))):
                caches(database.reader).pop(search_memo._CACHE, None)
                params = ActivationParams(namespace=NS, session="reader", query=q + tool_round(i, tool_chars))
                start = time.process_time()
                await render_activation(database, settings, params, count_tokens)
                cpu.append((time.process_time() - start) * 1000)
            return cpu
        finally:
            await database.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--words", type=int, nargs="+", default=[0, 300, 1500, 5000])
    parser.add_argument("--renders", type=int, default=100)
    parser.add_argument("--tool-round", type=int, default=0, help="characters of code after each query")
    args = parser.parse_args()
    source = (await scale_build.build_events([args.events]))[args.events]
    import stratagate

    print(f"tree: {Path(stratagate.__file__).parents[2]}, {args.events} events, {args.tool_round} characters of code"
          " after each query")
    print("| words in the last two turns | fresh step CPU p50 ms | p99 ms |")
    print("|---:|---:|---:|")
    for words in args.words:
        cpu = await one(source, words, args.renders, args.tool_round)
        print(f"| {words:,} | {statistics.median(cpu):.2f} | {pct(cpu, 0.99):.2f} |")


if __name__ == "__main__":
    asyncio.run(main())
