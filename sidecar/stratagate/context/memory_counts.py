"""What ``/memory status`` counts about long-term memory, as this session sees it: events by status (the project's
and the user tier shared with it, session-scoped ones of this session only), blocks by state and by the level decay
shows each at in its own session (blocks/decay.py, from one read of the namespace's blocks), the graph's size, and
the namespace's background jobs. Reads only."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from stratagate.blocks.decay import display_level
from stratagate.events.visibility import where
from stratagate.storage import lookup
from stratagate.storage.db import Database

EVENT_STATUSES = ("active", "disputed", "superseded", "forgotten", "archived")
JOB_STATES = ("queued", "running", "failed")


@dataclass
class MemoryCounts:
    events: dict[str, int] = field(default_factory=lambda: dict.fromkeys(EVENT_STATUSES, 0))
    blocks: dict[str, int] = field(default_factory=lambda: {"ready": 0, "pending": 0})
    levels: dict[int, int] = field(default_factory=dict)
    """Blocks by the level they show at now in their own session (0–5)."""
    nodes: int = 0
    facts: int = 0
    jobs: dict[str, int] = field(default_factory=lambda: dict.fromkeys(JOB_STATES, 0))

    @property
    def event_total(self) -> int:
        return sum(self.events.values())


async def memory_counts(db: Database, namespace: str, session: str, decay_lambda: float) -> MemoryCounts:
    out = MemoryCounts()
    conn = db.reader
    ns = await lookup.namespace_key(conn, namespace)
    sess = await lookup.session_key(conn, ns, session)
    visible, params = where(ns, sess)
    for status, n in await conn.execute_fetchall(
        f"SELECT e.status, COUNT(*) FROM events e WHERE {visible} GROUP BY e.status", tuple(params)
    ):
        out.events[str(status)] = int(n)
    if ns is None:
        return out
    await _blocks(db, ns, decay_lambda, out)
    out.nodes = await _count(db, "SELECT COUNT(*) FROM graph_nodes WHERE namespace_id = ?", ns)
    out.facts = await _count(db, "SELECT COUNT(*) FROM graph_facts WHERE namespace_id = ? AND status = 'active'", ns)
    for status, n in await conn.execute_fetchall(
        "SELECT status, COUNT(*) FROM jobs WHERE namespace_id = ? AND status IN ('queued', 'running', 'failed')"
        " GROUP BY status",
        (ns,),
    ):
        out.jobs[str(status)] = int(n)
    return out


async def _blocks(db: Database, ns: int, lam: float, out: MemoryCounts) -> None:
    """Blocks by state, and by display level: a block's age is the ready blocks of its session sealed after its
    anchor (as blocks/views.py computes it for one session)."""
    by_session: dict[int, list[tuple[int, bool, int, int]]] = {}
    for session_id, seq, status, anchor_level, anchor_pos in await db.reader.execute_fetchall(
        "SELECT session_id, seq, status, anchor_level, anchor_pos FROM blocks WHERE namespace_id = ?", (ns,)
    ):
        out.blocks[str(status)] = out.blocks.get(str(status), 0) + 1
        by_session.setdefault(int(session_id), []).append((int(seq), status == "ready", int(anchor_level),
                                                           int(anchor_pos)))
    for blocks in by_session.values():
        ready = sorted(seq for seq, is_ready, _, _ in blocks if is_ready)
        for _, is_ready, anchor_level, anchor_pos in blocks:
            age = len(ready) - bisect_right(ready, anchor_pos)
            level = display_level(anchor_level, age, lam, is_ready)
            out.levels[level] = out.levels.get(level, 0) + 1


async def _count(db: Database, sql: str, ns: int) -> int:
    rows = list(await db.reader.execute_fetchall(sql, (ns,)))
    return int(rows[0][0]) if rows else 0
