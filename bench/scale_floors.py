"""What this machine can do at best, measured in the same run as the scale bench (its "floor" column).

- bare commit: one small INSERT + COMMIT on a WAL database with synchronous=FULL (fsync per commit), sqlite3 module;
- bare FTS5 query: a one-term and a three-term MATCH ... ORDER BY rank LIMIT 10 over the same generated texts
  (plain unicode61 table, sqlite3 module, same row count as the events database);
- bare pipe round trip: one small JSON line to a child Python process that echoes it back over stdio;
- ``python3 -c pass``: spawning an interpreter (what any Python sidecar pays before its first line runs).
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scale_workload import memories

ECHO = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()\n"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def commit_times(workdir: Path, n: int = 300) -> list[float]:
    """Seconds per bare commit with fsync on ``workdir``'s disk: WAL, synchronous=FULL, one small row each."""
    conn = sqlite3.connect(workdir / "floor.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)")
    times = []
    for i in range(n):
        s = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t(body) VALUES (?)", (f"row {i} " * 20,))
        conn.execute("COMMIT")
        times.append(time.perf_counter() - s)
    conn.close()
    return times


def bare_commit_ms(n: int = 300) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        times = [t * 1000 for t in commit_times(Path(tmp), n)]
    return {"p50": statistics.median(times), "p99": pct(times, 0.99)}


def bare_fts_ms(rows: int, one_term: str, three_terms: str, repeat: int = 50) -> dict[str, float]:
    """FTS5 over ``rows`` generated memory texts (the same stream the events databases hold)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(body)")
    conn.executemany("INSERT INTO f(body) VALUES (?)", ((m["text"],) for m in memories(rows)))
    out = {}
    for name, match in (("one_term", one_term), ("three_terms", three_terms)):
        times = []
        for _ in range(repeat):
            s = time.perf_counter()
            conn.execute("SELECT rowid FROM f WHERE f MATCH ? ORDER BY rank LIMIT 10", (match,)).fetchall()
            times.append((time.perf_counter() - s) * 1000)
        out[name] = statistics.median(times)
    conn.close()
    return out


async def pipe_round_trip_ms(n: int = 500) -> float:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", ECHO, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    line = b'{"jsonrpc":"2.0","id":1,"method":"system.ping"}\n'
    times = []
    for _ in range(n):
        s = time.perf_counter()
        proc.stdin.write(line)
        await proc.stdin.drain()
        await proc.stdout.readline()
        times.append((time.perf_counter() - s) * 1000)
    proc.stdin.close()
    await proc.wait()
    return statistics.median(times)


def python_pass_ms(n: int = 10) -> float:
    times = []
    for _ in range(n):
        s = time.perf_counter()
        subprocess.run(["python3", "-c", "pass"], check=True)
        times.append((time.perf_counter() - s) * 1000)
    return statistics.median(times)
