"""What ``/memory status`` counts about long-term memory, as this session sees it: events by status (the project's
and the user tier shared with it, session-scoped ones of this session only), blocks by state and this session's
blocks by the level decay shows them at, the graph's size, and the namespace's background jobs. Reads only."""

from __future__ import annotations

from dataclasses import dataclass, field

from stratagate.blocks.views import session_blocks
from stratagate.events.visibility import where
from stratagate.storage import lookup
from stratagate.storage.db import Database

EVENT_STATUSES = ("active", "disputed", "superseded", "forgotten", "archived")
JOB_STATES = ("queued", "running", "failed")


@dataclass
class MemoryCounts:
    events: dict[str, int] = field(default_factory=lambda: dict.fromkeys(EVENT_STATUSES, 0))
    blocks: dict[str, int] = field(default_factory=lambda: {"ready": 0, "pending": 0})
    session_levels: dict[int, int] = field(default_factory=dict)
    """This session's blocks by the level they show at now (0–5)."""
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
    for status, n in await conn.execute_fetchall(
        "SELECT status, COUNT(*) FROM blocks WHERE namespace_id = ? GROUP BY status", (ns,)
    ):
        out.blocks[str(status)] = int(n)
    if sess is not None:
        for block in await session_blocks(db, ns, sess, decay_lambda):
            out.session_levels[block.level] = out.session_levels.get(block.level, 0) + 1
    out.nodes = await _count(db, "SELECT COUNT(*) FROM graph_nodes WHERE namespace_id = ?", ns)
    out.facts = await _count(db, "SELECT COUNT(*) FROM graph_facts WHERE namespace_id = ? AND status = 'active'", ns)
    for status, n in await conn.execute_fetchall(
        "SELECT status, COUNT(*) FROM jobs WHERE namespace_id = ? AND status IN ('queued', 'running', 'failed')"
        " GROUP BY status",
        (ns,),
    ):
        out.jobs[str(status)] = int(n)
    return out


async def _count(db: Database, sql: str, ns: int) -> int:
    rows = list(await db.reader.execute_fetchall(sql, (ns,)))
    return int(rows[0][0]) if rows else 0
