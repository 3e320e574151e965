"""Share of LoCoMo user messages that reach a block (and so a summary and events), before and after session tails
are sealed.

Run from the repo root:  .venv/bin/python bench/bench_session_tails.py [--file /work/shared/data/locomo/26.json]

A sidecar (in this process, zero-model mode, real SQLite) captures the conversation as bench/bench_locomo.py does
(each LoCoMo session a session, speaker A's message and B's answer one turn). Then:

1. "full runs only": what was sealed by capture alone (every `block_turns` turns), i.e. the behaviour before
   session tails were sealed;
2. "+ idle tails": after `session.seal_idle` at the capture time plus the idle time (LoCoMo's sessions are days
   apart: each one went idle before the next began);
3. the blocks' summaries and events once the jobs have run (zero-model: written by rule).
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "sidecar"))
sys.path.insert(0, str(REPO / "bench"))

from bench_locomo import DEFAULT_FILE, capture_plan, load  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402

SHARE_SQL = (
    "SELECT COUNT(*), SUM(t.block_id IS NOT NULL) FROM messages m JOIN turns t ON t.id = m.turn_id"
    " WHERE m.role = 'user'"
)


def share(db: Path) -> tuple[int, int]:
    with sqlite3.connect(db) as conn:
        total, sealed = conn.execute(SHARE_SQL).fetchone()
    return int(total), int(sealed or 0)


async def measure(path: Path) -> None:
    conv = load(path)
    turns, _ = capture_plan(conv)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "m.db"
        client = await SidecarClient.start(db, env={"STRATAGATE_MODEL_ROUTE": "none", "STRATAGATE_DENSE": "off"})
        try:
            for params in turns:
                await client.call("turn.capture", params)
            before = share(db)
            now = (datetime.now(UTC) + timedelta(minutes=11)).isoformat()
            tails = (await client.call("session.seal_idle", {"now": now}))["sealed_block_ids"]
            after = share(db)
            await client.settled(timeout=600)
            info = await client.call("system.info")
        finally:
            await client.close()
        with sqlite3.connect(db) as conn:
            sessions = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
            tail_events = conn.execute(
                "SELECT COUNT(*) FROM events e JOIN blocks b ON b.id = e.block_id WHERE b.id IN"
                " (SELECT CAST(substr(subject_id, 5) AS INTEGER) FROM audit_log WHERE action = 'block.sealed'"
                " AND json_extract(after, '$.tail') IS NOT NULL)"
            ).fetchone()[0]
    print(f"{conv.name}: {sessions} sessions, {len(turns)} turns, {before[0]} user messages")
    print(f"  full runs only: {before[1]} in a block ({before[1] / before[0]:.1%})")
    print(f"  + idle tails:   {after[1]} in a block ({after[1] / after[0]:.1%}); {len(tails)} short blocks")
    blocks = info["counts"]["blocks"]
    print(f"  after the jobs: blocks {blocks}, events {sum(info['counts']['events'].values())}"
          f" ({tail_events} from short blocks)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    asyncio.run(measure(parser.parse_args().file))


if __name__ == "__main__":
    main()
