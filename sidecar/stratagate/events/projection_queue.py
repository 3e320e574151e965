"""The graph projection's inbox: events queued for ``graph_projection`` jobs (see ``stratagate.graph.projection``).

Here, below the graph, so that whatever writes events (extraction, imports) can queue their projection inside its
own transaction without importing the graph.
"""

from __future__ import annotations

import json

import aiosqlite

from stratagate.jobs.queue import GRAPH_PROJECTION, enqueue
from stratagate.timeutil import now_iso

BATCH_SIZE = 8
MAX_ATTEMPTS = 5


async def enqueue_projection(
    conn: aiosqlite.Connection, namespace_id: int, event_ids: list[int], reason: str
) -> list[int]:
    """Queue events for projection in batches; the job ids. Inside the caller's transaction."""
    job_ids = []
    todo = list(dict.fromkeys(event_ids))
    for start in range(0, len(todo), BATCH_SIZE):
        batch = todo[start : start + BATCH_SIZE]
        now = now_iso()
        cursor = await conn.execute(
            "INSERT INTO graph_batches(namespace_id, event_ids, reason, created_at) VALUES (?, ?, ?, ?)",
            (namespace_id, json.dumps(batch), reason[:200], now),
        )
        batch_id = int(cursor.lastrowid or 0)
        for event_id in batch:
            await conn.execute(
                "INSERT INTO graph_projection(event_id, batch_id, state, updated_at) VALUES (?, ?, 'pending', ?)"
                " ON CONFLICT(event_id) DO NOTHING",
                (event_id, batch_id, now),
            )
        job_ids.append(await enqueue(conn, namespace_id, GRAPH_PROJECTION, batch_id, MAX_ATTEMPTS))
    return job_ids
