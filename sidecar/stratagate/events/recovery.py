"""The ``event_extraction`` stage's recover: extraction jobs lost to a crash, and the upgrade trigger of blocks whose
events are the rule fallback.

Apart from events/extraction.py (the handler), so that the sidecar's start and the maintenance pass import no
extraction code (admission, claims, cues, the sentence classifier).
"""

from __future__ import annotations

from stratagate.jobs.pipeline import EVENT_EXTRACTION
from stratagate.jobs.queue import enqueue_missing, retry
from stratagate.storage.db import Database


async def recover_jobs(db: Database, max_attempts: int) -> int:
    """Extraction jobs of ready blocks with durable facts that never got one (the summary's follow-up was lost to a
    crash between its commit and the runner's follow-up transaction), and a fresh try for the blocks whose events
    are still the rule fallback (the model may be back). Idempotent."""
    missing = await enqueue_missing(
        db, EVENT_EXTRACTION, "SELECT id, namespace_id FROM blocks WHERE status = 'ready' AND has_durable_facts = 1",
        max_attempts,
    )
    return missing + await requeue_fallbacks(db, max_attempts)


async def requeue_fallbacks(db: Database, max_attempts: int) -> int:
    """Give the failed extraction jobs of blocks whose events are the rule fallback a fresh attempt budget (the
    model may answer again: its events then join the fallback's). Returns how many were re-queued.
    ``max_attempts`` is accepted for the shared signature of the stage functions; the budget is the job's own."""
    del max_attempts
    rows = await db.fetchall(
        "SELECT j.id FROM jobs j JOIN blocks b ON b.id = j.subject_id"
        " WHERE j.kind = ? AND j.status = 'failed' AND b.events_source = 'fallback'",
        (EVENT_EXTRACTION,),
    )
    requeued = 0
    for row in rows:
        requeued += len(await retry(db, int(row["id"]), None, "system"))
    return requeued
