"""Real library source captured as DSH bash results: every capture answers, its CPU cost, and what comes back.

Run from the repo root:  .venv/bin/python bench/bench_source_capture.py [--mb 8] [--root DIR ...] [--show 20]

The corpus is held out from the test suite's precision sample: by default the third-party packages installed in the
venv (site-packages: pydantic, hypothesis, numpy, openai, … — code nobody here wrote) and, when the pinned DSH
is installed (``STRATAGATE_DSH_LOCAL``, default ``~/.cache/stratagate/dsh-local``), the JS of its
``dsh/node_modules``; files in a fixed order, up to ``--mb`` megabytes.
``--root`` replaces that with directories of your own.

Each file becomes one turn of one session in a real ``stratagate serve`` child (as DSH sends it: a ``bash`` call
``cat <file>`` whose canonical result is DSH's foreground value, exit code 0, the file as stdout), sent one at a time
and waited for; blocks seal as they fill (model route ``none``: the deterministic views and local summaries, so no
model time is counted). Reported: the sidecar's CPU time per capture (process CPU, so background sealing work that
lands in the window counts too) — the acceptance bound is a second — and, read back from the SQLite file, how many
captured files differ from the original and how many lines (a difference is a redaction; the benchmark prints each so
a reader can judge whether it is a real credential).
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import os
import sqlite3
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "sidecar"))

from support.precision_sample import PLAYWRIGHT_SAMPLE, STDLIB_SAMPLE  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402

DSH_LOCAL = Path(os.environ.get("STRATAGATE_DSH_LOCAL", Path.home() / ".cache" / "stratagate" / "dsh-local"))
HELD_IN = set(STDLIB_SAMPLE) | set(PLAYWRIGHT_SAMPLE)


def corpus(roots: list[Path], limit_bytes: int) -> list[Path]:
    files: list[Path] = []
    total = 0
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.suffix not in (".py", ".js", ".mjs", ".cjs", ".ts") or not path.is_file():
                continue
            if "__pycache__" in path.parts or any(str(path).endswith(h) for h in HELD_IN):
                continue
            size = path.stat().st_size
            if not 0 < size <= 2_000_000:
                continue
            files.append(path)
            total += size
            if total >= limit_bytes:
                return files
    return files


def default_roots() -> list[Path]:
    site = Path(sysconfig.get_paths()["purelib"])
    roots = [site]
    modules = DSH_LOCAL / "dsh" / "node_modules"
    if modules.is_dir():
        roots.insert(0, modules)
    return roots


def bash_turn(i: int, path: Path, text: str) -> dict:
    value = {
        "kind": "foreground", "exitCode": 0, "signal": None, "timedOut": False, "aborted": False, "timeoutMs": 60000,
        "stdout": {"text": text, "truncated": False}, "stderr": {"text": "", "truncated": False},
    }
    return {
        "namespace": "bench",
        "session": "src",
        "receipt": f"bench:src:turn:{i}",
        "user": f"Show me {path.name}.",
        "assistant": f"Here is {path.name}.",
        "tools": [{"name": "bash", "call_id": f"call_{i}", "arguments": {"command": f"cat {path}"},
                   "result": value, "is_error": False}],
        "started_at": "2026-05-01T10:00:00Z",
        "ended_at": "2026-05-01T10:00:01Z",
    }


def read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


async def run(files: list[Path], show: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memory.db"
        client = await SidecarClient.start(
            db, env={"STRATAGATE_MODEL_ROUTE": "none", "STRATAGATE_DENSE": "0"}, process=True
        )
        proc = psutil.Process(client.proc.pid)
        texts: dict[str, str] = {}
        cpu: list[tuple[float, str, int]] = []
        try:
            await client.call("system.ping", {})
            for i, path in enumerate(files):
                text = read(path)
                if text is None:
                    continue
                texts[f"call_{i}"] = text
                before = proc.cpu_times()
                await client.call("turn.capture", bash_turn(i, path, text), timeout=600)
                after = proc.cpu_times()
                used = (after.user + after.system) - (before.user + before.system)
                cpu.append((used, str(path), len(text.encode("utf-8"))))
        finally:
            await client.close()
        report(db, texts, cpu, show)


def report(db: Path, texts: dict[str, str], cpu: list[tuple[float, str, int]], show: int) -> None:
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT tool_call_id, tool_result FROM messages WHERE role = 'tool'").fetchall()
    conn.close()
    altered_files = altered_lines = 0
    examples: list[str] = []
    for call_id, stored in rows:
        original = texts.get(call_id)
        if original is None:
            continue
        got = json.loads(stored)["stdout"]["text"]
        if got == original:
            continue
        altered_files += 1
        diff = [d for d in difflib.unified_diff(original.splitlines(), got.splitlines(), lineterm="", n=0)
                if d.startswith("-") and not d.startswith("---")]
        altered_lines += len(diff)
        examples.extend(diff[:3])
    size = sum(c[2] for c in cpu)
    times = sorted(c[0] for c in cpu)
    print(f"captures: {len(cpu)} files, {size / 1e6:.2f} MB, all answered")
    print(f"sidecar CPU per capture: p50 {statistics.median(times) * 1000:.1f} ms, "
          f"p99 {times[min(len(times) - 1, round(0.99 * (len(times) - 1)))] * 1000:.1f} ms, "
          f"max {times[-1] * 1000:.1f} ms, total {sum(times):.1f} s ({size / 1e6 / sum(times):.2f} MB/s CPU)")
    for used, path, nbytes in sorted(cpu, reverse=True)[:5]:
        print(f"  {used * 1000:8.1f} ms  {nbytes / 1e3:8.1f} KB  {path}")
    print(f"read back: {altered_files} files differ from the original, {altered_lines} lines "
          f"({altered_lines / (size / 1e6):.2f} per MB)")
    for line in examples[:show]:
        print("  " + line[:200])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=8.0, help="megabytes of source to capture")
    parser.add_argument("--root", type=Path, action="append", help="directories to read (default: see above)")
    parser.add_argument("--show", type=int, default=20, help="altered lines to print")
    args = parser.parse_args()
    files = corpus(args.root or default_roots(), int(args.mb * 1e6))
    started = time.perf_counter()
    asyncio.run(run(files, args.show))
    print(f"wall {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
