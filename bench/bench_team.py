"""Team memory on a real PostgreSQL server: how long a team decision takes to reach another machine, and how fast an
outbox of 10k changes is pushed.

Run from the repo root:  PYTHONPATH=$PWD/sidecar .venv/bin/python bench/bench_team.py [--trials 200] [--push 10000]

- **Propagation**: two sidecar processes (``stratagate serve``, A and B, their own SQLite files as two DSH homes
  have) share one project through a throw-away PostgreSQL server (tests/support/postgres.py). Each trial remembers a
  team decision on A (``memory_remember`` over JSON-RPC) and measures the wall time from A's reply until B's database
  has it (read-only look-ups every 2 ms; B's sync is woken by the server's NOTIFY, ``STRATAGATE_TEAM_POLL_SECONDS``
  is an hour). Reported: p50, p99 and max over the trials, and whether B's search and recall return the last one.
- **Push**: a third memory with its sync stopped admits ``--push`` team memories in bulk (each one an outbox
  ``create``), then one ``TeamSync.push`` sends them: wall and this process's CPU, changes per second.
- **Pull**: a fourth memory of the same project pulls everything on the server (each change admitted through the
  admission path, its graph projection queued): wall, CPU, changes per second.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from stratagate import Memory  # noqa: E402
from stratagate.config import Settings  # noqa: E402
from stratagate.events import admit, team  # noqa: E402
from stratagate.storage import lookup  # noqa: E402
from support.postgres import PostgresServer  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402


def settings(root: Path, name: str, dsn: str, member: str) -> Settings:
    return Settings(db=root / name / "memory.db", model_route="none", team_dsn=dsn, team_member=member,
                    team_poll_seconds=3600)


async def open_machine(root: Path, name: str, dsn: str, member: str) -> Memory:
    folder = root / name / "work" / "shop"
    folder.mkdir(parents=True)
    return await Memory.open(workspace=folder, settings=settings(root, name, dsn, member))


async def sidecar(root: Path, name: str, dsn: str, member: str) -> tuple[SidecarClient, str]:
    folder = root / name / "work" / "shop"
    folder.mkdir(parents=True)
    env = {"STRATAGATE_TEAM_DSN": dsn, "STRATAGATE_TEAM_MEMBER": member, "STRATAGATE_MODEL_ROUTE": "none",
           "STRATAGATE_TEAM_POLL_SECONDS": "3600"}
    client = await SidecarClient.start(root / name / "memory.db", env=env, process=True)
    found = await client.call("namespace.for_session", {"mode": "project", "session": "s1", "cwd": str(folder)})
    return client, found["namespace"]


async def propagation(root: Path, dsn: str, trials: int) -> dict[str, float]:
    a, ns_a = await sidecar(root, "a", dsn, "alice")
    b, ns_b = await sidecar(root, "b", dsn, "bob")
    ra = sqlite3.connect(f"file:{root / 'a' / 'memory.db'}?mode=ro", uri=True)
    rb = sqlite3.connect(f"file:{root / 'b' / 'memory.db'}?mode=ro", uri=True)
    try:
        took = []
        for i in range(trials):
            said = await a.tool(ns_a, "s1", "memory_remember", {
                "text": f"Team decision {i}: the shop's invoices use codec quokka{i}", "type": "decision",
                "scope": "team"})
            start = time.perf_counter()
            (uid,) = ra.execute("SELECT uid FROM team_links WHERE event_id = ?", (int(said["id"][4:]),)).fetchone()
            while rb.execute("SELECT 1 FROM team_links WHERE uid = ?", (uid,)).fetchone() is None:
                await asyncio.sleep(0.002)
                if time.perf_counter() - start > 60:
                    raise TimeoutError(f"trial {i}: not on B after 60 s")
            took.append(time.perf_counter() - start)
        hits = (await b.tool(ns_b, "s1", "memory_search_events", {"query": f"quokka{trials - 1}"}))["hits"]
        recall = await b.call("activation.render", {"namespace": ns_b, "session": "s9",
                                                    "query": f"which codec do invoices use, quokka{trials - 1}?"})
        took.sort()
        return {"p50_ms": statistics.median(took) * 1000, "p99_ms": took[int(len(took) * 0.99) - 1] * 1000,
                "max_ms": took[-1] * 1000, "found_on_b": float(len(hits)),
                "recalled_on_b": float(f"quokka{trials - 1}" in recall["text"])}
    finally:
        ra.close()
        rb.close()
        await a.close()
        await b.close()


async def push_throughput(root: Path, dsn: str, count: int) -> dict[str, float]:
    c = await open_machine(root, "c", dsn, "carol")
    try:
        sync = c._app.team
        assert sync is not None
        await sync.stop()
        now = datetime.now(UTC)
        async with c._app.db.transaction() as conn:
            ns = await lookup.ensure_namespace(conn, c.namespace)
            candidates = [admit.Candidate(statement=f"Carol's team rule {i}: module m{i} owns table t{i}",
                                          type="decision", scope="team", mentioned_at=now) for i in range(count)]
            await admit.admit_new(conn, candidates, admit.Options(
                namespace_id=ns, session_id=None, origin="remember", actor="user", on_tombstone="refuse",
                on_exact_duplicate="error", unknown_target="error", projection_jobs=False))
        assert (await team.outbox_size(c._app.db.reader))[0] == count
        import asyncpg

        conn = await asyncpg.connect(dsn)
        try:
            cpu, wall = time.process_time(), time.perf_counter()
            pushed = await sync.push(conn)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        finally:
            await conn.close()
        assert pushed == count and (await team.outbox_size(c._app.db.reader))[0] == 0
        out = {"changes": count, "wall_s": wall, "cpu_s": cpu, "per_s": count / wall}
    finally:
        await c.close()
    d = await open_machine(root, "d", dsn, "dave")  # another machine of the project pulls them all
    try:
        assert d._app.team is not None
        await d._app.team.stop()
        conn = await asyncpg.connect(dsn)
        try:
            cpu, wall = time.process_time(), time.perf_counter()
            pulled = await d._app.team.pull(conn)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        finally:
            await conn.close()
        assert pulled >= count
        return out | {"pulled": pulled, "pull_wall_s": wall, "pull_cpu_s": cpu}
    finally:
        await d.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--push", type=int, default=10_000)
    args = parser.parse_args()
    server = PostgresServer()
    server.start()
    try:
        with server.database() as dsn, tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            prop = await propagation(root, dsn, args.trials)
            print(f"propagation A -> B (two sidecar processes) over {args.trials} trials: p50 {prop['p50_ms']:.1f} ms,"
                  f" p99 {prop['p99_ms']:.1f} ms, max {prop['max_ms']:.1f} ms; B's search finds the last one: "
                  f"{prop['found_on_b'] >= 1}, B's recall shows it: {prop['recalled_on_b'] >= 1}")
            push = await push_throughput(root, dsn, args.push)
            print(f"push of {push['changes']:,} outbox changes: {push['wall_s']:.2f} s wall, {push['cpu_s']:.2f} s "
                  f"CPU (sidecar side), {push['per_s']:,.0f} changes/s")
            print(f"pull of {push['pulled']:,} changes by another machine (each one admitted): "
                  f"{push['pull_wall_s']:.2f} s wall, {push['pull_cpu_s']:.2f} s CPU, "
                  f"{push['pulled'] / push['pull_wall_s']:,.0f} changes/s")
    finally:
        server.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
