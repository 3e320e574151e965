"""The graph projection's inbox: events queued for ``graph_projection`` jobs (see ``stratagate.graph.projection``).

Here, below the graph, so that the one admission path (``events/admit.py``) can create projection batches inside
its transaction without importing the graph. A batch (``graph_batches`` row) is the job's subject; admit queues its
job in the same transaction (imports) or the extraction handler returns it as a pipeline follow-up.
``recover_jobs`` queues any batch left without a job (a follow-up lost to a crash).
"""

from __future__ import annotations

import json

from stratagate.jobs.pipeline import DEFAULT_MAX_ATTEMPTS, GRAPH_PROJECTION
from stratagate.jobs.queue import enqueue, enqueue_missing
from stratagate.storage.db import Database
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import now_iso

BATCH_SIZE = 8


async def add_batches(conn: Connection, namespace_id: int, event_ids: list[int], reason: str) -> list[int]:
    """Group events into projection batches inside the caller's transaction; the batch ids (job subjects)."""
    batch_ids = []
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
        batch_ids.append(batch_id)
    return batch_ids


async def enqueue_projection(
    conn: Connection,
    namespace_id: int,
    event_ids: list[int],
    reason: str,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> list[int]:
    """Batches and their jobs, both in the caller's transaction; the job ids."""
    return [
        await enqueue(conn, namespace_id, GRAPH_PROJECTION, batch_id, max_attempts)
        for batch_id in await add_batches(conn, namespace_id, event_ids, reason)
    ]


async def recover_jobs(db: Database, max_attempts: int) -> int:
    """Projection jobs of batches that never got one (a follow-up lost to a crash). Idempotent."""
    return await enqueue_missing(db, GRAPH_PROJECTION, "SELECT id, namespace_id FROM graph_batches", max_attempts)
