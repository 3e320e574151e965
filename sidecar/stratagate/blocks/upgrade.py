"""The upgrade trigger of blocks on fallback views: their finished ``block_summary`` jobs go back in the queue.

Apart from blocks/summarize.py (the handler), so that the sidecar's start (this is the stage's ``recover``) and the
maintenance pass import no summarizing code.
"""

from __future__ import annotations

import time

from stratagate import ids
from stratagate.jobs.pipeline import BLOCK_SUMMARY
from stratagate.storage.db import JOBS_QUEUED, Database, audit, on_commit
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import now_iso

# From the few fallback blocks (their partial index, blocks_fallback), not from every summary job and every block's
# row: this runs after every model answer. CROSS JOIN keeps that order whatever the planner guesses.
FALLBACK_JOBS = (
    "SELECT j.id, j.namespace_id, j.status, j.attempts FROM blocks b CROSS JOIN jobs j"
    " ON j.kind = ? AND j.subject_id = b.id"
    " WHERE b.summary_source = 'fallback' AND b.status = 'ready' AND j.status IN ('failed', 'done')"
    " AND (? IS NULL OR b.namespace_id = ?) ORDER BY j.id LIMIT ?"
)


async def requeue_fallbacks(
    db: Database, max_attempts: int, namespace_id: int | None = None, limit: int | None = None
) -> int:
    """Put the finished (failed or done) ``block_summary`` jobs of blocks still on fallback views back in the queue,
    so the model gets another chance to write them (the upgrade). Idempotent: a queued or running job is left as it
    is. Run at every start (the stage's ``recover``) and by the maintenance run; a model success runs the bounded,
    per-namespace form inside its own transaction."""
    async with db.transaction() as conn:
        return await requeue_fallbacks_in(conn, max_attempts, namespace_id, limit)


async def requeue_fallbacks_in(
    conn: Connection, max_attempts: int, namespace_id: int | None, limit: int | None
) -> int:
    """``requeue_fallbacks`` inside the caller's transaction: at most ``limit`` jobs, of one namespace if given."""
    rows = list(await conn.execute_fetchall(
        FALLBACK_JOBS, (BLOCK_SUMMARY, namespace_id, namespace_id, -1 if limit is None else limit)
    ))
    for row in rows:
        await conn.execute(
            "UPDATE jobs SET status = 'queued', attempts = 0, max_attempts = ?, next_run_at = ?, updated_at = ?"
            " WHERE id = ? AND status IN ('failed', 'done')",
            (max_attempts, time.time(), now_iso(), row["id"]),
        )
        await audit(
            conn, row["namespace_id"], "system", "job.requeued_for_upgrade", "job", ids.make("job", row["id"]),
            {"status": row["status"], "attempts": row["attempts"]}, {"status": "queued", "attempts": 0},
        )
    if rows:
        on_commit(conn, JOBS_QUEUED)
    return len(rows)
