"""What this machine can do at best, measured in the same run as the scale bench (its "floor" column).

- bare commit: one small INSERT + COMMIT on a WAL database with synchronous=FULL (fsync per commit), sqlite3 module;
- bare FTS5 query: a one-term and a three-term MATCH ... ORDER BY rank LIMIT 10 over the same generated texts
  (plain unicode61 table, sqlite3 module, same row count as the events database), and the three terms' unranked
  count (what matching alone costs, without bm25 scoring every match);
- bare pipe round trip: one small JSON line to a child Python process that echoes it back over stdio;
- ``python3 -c pass``: spawning an interpreter (what any Python sidecar pays before its first line runs);
- the card's start floor: a fresh interpreter that only imports the packages the design card fixed (asyncio, sqlite3,
  json, pydantic with one model validated, jsonrpcserver, aiosqlite, tiktoken) and builds the exact DeepSeek V4
  encoding a recall needs to count its tokens (``stratagate.tokens``): what any sidecar made of those parts pays
  before its first recall, none of StrataGate's own modules imported. Its CPU (``/proc`` at exit) and ``VmRSS``.
Each has its wall time and its CPU time (this thread's, or the echo child's for the pipe), beside the sidecar's.
"""

from __future__ import annotations

import asyncio
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scale_cpu import ProcessCPU, thread_cpu_ms
from scale_workload import memories

ECHO = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()\n"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def commit_times(workdir: Path, n: int = 300, cpu: list[float] | None = None) -> list[float]:
    """Seconds per bare commit with fsync on ``workdir``'s disk: WAL, synchronous=FULL, one small row each (and
    each one's CPU seconds appended to ``cpu``)."""
    conn = sqlite3.connect(workdir / "floor.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)")
    times = []
    for i in range(n):
        s, c = time.perf_counter(), time.thread_time()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t(body) VALUES (?)", (f"row {i} " * 20,))
        conn.execute("COMMIT")
        times.append(time.perf_counter() - s)
        if cpu is not None:
            cpu.append(time.thread_time() - c)
    conn.close()
    return times


def bare_commit_ms(n: int = 300) -> dict[str, float]:
    cpu: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        times = [t * 1000 for t in commit_times(Path(tmp), n, cpu)]
    return {"p50": statistics.median(times), "p99": pct(times, 0.99), "cpu_p50": statistics.median(cpu) * 1000}


def bare_fts_ms(rows: int, one_term: str, three_terms: str, repeat: int = 50) -> dict[str, float]:
    """FTS5 over ``rows`` generated memory texts (the same stream the events databases hold)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(body)")
    conn.executemany("INSERT INTO f(body) VALUES (?)", ((m["text"],) for m in memories(rows)))
    out = {}
    ranked = "SELECT rowid FROM f WHERE f MATCH ? ORDER BY rank LIMIT 10"
    for name, sql, match in (("one_term", ranked, one_term), ("three_terms", ranked, three_terms),
                             ("count", "SELECT count(*) FROM f WHERE f MATCH ?", three_terms)):
        times, cpu = [], []
        for _ in range(repeat):
            wall, c = thread_cpu_ms(lambda sql=sql, match=match: conn.execute(sql, (match,)).fetchall())
            times.append(wall)
            cpu.append(c)
        out[name] = statistics.median(times)
        out[f"{name}_cpu"] = statistics.median(cpu)
    conn.close()
    return out


async def pipe_round_trip_ms(n: int = 500) -> dict[str, float]:
    """Wall ms per round trip, and the echo child's CPU ms per round trip."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", ECHO, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    line = b'{"jsonrpc":"2.0","id":1,"method":"system.ping"}\n'
    times = []
    child = ProcessCPU(proc.pid)
    c = child.now()
    for _ in range(n):
        s = time.perf_counter()
        proc.stdin.write(line)
        await proc.stdin.drain()
        await proc.stdout.readline()
        times.append((time.perf_counter() - s) * 1000)
    cpu_ms = (child.now() - c) * 1000 / n
    proc.stdin.close()
    await proc.wait()
    return {"p50": statistics.median(times), "cpu": cpu_ms}


CARD_FLOOR = """
import asyncio, json, sqlite3
import pydantic
class Probe(pydantic.BaseModel):
    a: int
    b: str = ""
Probe.model_validate({"a": 1})
import jsonrpcserver, aiosqlite, tiktoken
from stratagate.tokens import get_encoding
assert get_encoding().encode("hello world")
rss = next(line for line in open("/proc/self/status") if line.startswith("VmRSS"))
print(int(rss.split()[1]) / 1024)
"""


def card_start_floor(sidecar: Path, n: int = 5) -> dict[str, float]:
    """Median CPU ms (the child's rusage, interpreter start included) and RSS MB of ``CARD_FLOOR`` over ``n`` runs."""
    cpu, rss = [], []
    env = {"PYTHONPATH": str(sidecar), "PATH": "/usr/bin:/bin"}
    for _ in range(n):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run([sys.executable, "-c", CARD_FLOOR], check=True, capture_output=True, text=True, env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
        rss.append(float(out.stdout.split()[-1]))
    return {"cpu": statistics.median(cpu), "rss_mb": statistics.median(rss)}


def python_pass_ms(n: int = 10) -> dict[str, float]:
    """Wall ms of ``python3 -c pass``, and its CPU ms (the children's rusage, per run)."""
    times = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(n):
        s = time.perf_counter()
        subprocess.run(["python3", "-c", "pass"], check=True)
        times.append((time.perf_counter() - s) * 1000)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000 / n
    return {"p50": statistics.median(times), "cpu": cpu}
