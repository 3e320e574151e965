"""Keeping SQLite tidy without deleting anything but consumed change rows, and without holding the writer for long.

- The search change feed pruned (storage/term_feed.py ``prune``): the rows the committed derived index already holds
  are deleted, in one short transaction; the feed no longer grows with every event ever written.
- FTS5 index merging of each full-text table, to the same end as its ``optimize`` (all segments into one; the rows
  are unchanged) but incrementally: ``('merge', -MERGE_PAGES)`` steps, each its own short transaction, until a step
  finds nothing left to merge (at most ``MAX_MERGE_STEPS`` per table and run; the next run goes on). A step cannot
  be cut (256 pages take up to ~13 ms at 10k events; at 32 pages FTS5 stops after one step without merging), so each
  waits for a quiet spell between requests (``Gate.idle``); none within its patience leaves merging to a later pass.
- ``PRAGMA optimize`` (refreshes the planner's statistics where they are stale; cheap by design).
- ``PRAGMA wal_checkpoint(TRUNCATE)``: copies the WAL into the database and empties it. With a reader in the middle
  of a snapshot it does what it can and reports ``busy``; it never waits for readers. Unsliced too: it waits for a
  quiet spell like a merge step, and is left to a later pass (``deferred``) without one.
- An incremental VACUUM only when the database was created with ``auto_vacuum = INCREMENTAL`` (a bounded number of
  free pages returned per run). A full VACUUM rewrites the whole file under an exclusive lock, so maintenance never
  runs one; the report shows the free pages instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stratagate.maintenance import store
from stratagate.maintenance.gate import Idle, Pause, always_idle, no_wait
from stratagate.storage import term_feed
from stratagate.storage.db import Database
from stratagate.storage.sqlite import Connection

INCREMENTAL_VACUUM_PAGES = 2000  # ≈ 8 MB at 4 KiB pages: a bounded step, not a rewrite
MERGE_PAGES = 256  # pages one FTS merge step may write (≈ 1 MB): the writer is held for milliseconds
MAX_MERGE_STEPS = 400


async def plan(conn: Connection) -> dict[str, Any]:
    """What a pass would do, by reading only."""
    _, fts = await store.tables(conn)
    return {
        "fts_optimize": fts,
        "incremental_vacuum": await store.pragma(conn, "auto_vacuum") == 2,
        "freelist_pages": await store.pragma(conn, "freelist_count"),
    }


def _unnamed(step: str) -> None:
    pass


async def _merge(db: Database, fts: list[str], pause: Pause, idle: Idle) -> tuple[dict[str, int], bool]:
    """FTS merge steps per table until merged; each step waits for a quiet spell (``idle``). The steps done per
    table, and whether merging was left to a later pass because no quiet spell came (FTS5 keeps its place)."""
    merged: dict[str, int] = {}
    for table in fts:
        steps = 0
        while steps < MAX_MERGE_STEPS:
            if not await idle():
                merged[table] = steps
                return merged, True
            async with db.transaction() as conn:
                changed = await store.fts_merge_step(conn, table, MERGE_PAGES)
            steps += 1
            await pause()
            if not changed:
                break
        merged[table] = steps
    return merged, False


async def _checkpoint(db: Database) -> tuple[int, tuple[int, int, int]]:
    """``PRAGMA optimize``, the incremental vacuum when enabled, the WAL checkpoint: pages vacuumed, checkpoint row."""
    vacuumed = 0
    async with db.exclusive() as conn:
        await conn.execute("PRAGMA optimize")
        if await store.pragma(conn, "auto_vacuum") == 2:
            free = await store.pragma(conn, "freelist_count")
            await conn.execute(f"PRAGMA incremental_vacuum({INCREMENTAL_VACUUM_PAGES})")
            vacuumed = free - await store.pragma(conn, "freelist_count")
        row = await (await conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")).fetchone()
    busy, wal_pages, checkpointed = (int(v) for v in row) if row else (0, 0, 0)
    return vacuumed, (busy, wal_pages, checkpointed)


async def run(db: Database, pause: Pause = no_wait, enter: Callable[[str], None] = _unnamed,
              idle: Idle = always_idle) -> dict[str, Any]:
    """The optimize step; ``enter(name)`` is told when each of its parts starts (the pass's per-step timings).
    The unsliced parts (a merge step, the checkpoint) run only in a quiet spell (``idle``); without one they are
    left to a later pass and the result says so (``deferred``)."""
    enter("prune")
    pruned = {feed.kind: await term_feed.prune(db, feed) for feed in term_feed.FEEDS}
    await pause()
    enter("fts_merge")
    _, fts = await store.tables(db.reader)
    merged, merge_deferred = await _merge(db, fts, pause, idle)
    enter("checkpoint")
    deferred = ["fts_merge"] if merge_deferred else []
    vacuumed, (busy, wal_pages, checkpointed) = 0, (0, 0, 0)
    if await idle():
        vacuumed, (busy, wal_pages, checkpointed) = await _checkpoint(db)
    else:
        deferred.append("checkpoint")
    return {
        "fts_optimized": fts,
        "fts_merge_steps": merged,
        "search_changes_pruned": pruned,
        "pragma_optimize": "checkpoint" not in deferred,
        "wal_checkpoint": {"busy": bool(busy), "wal_pages": wal_pages, "checkpointed_pages": checkpointed},
        "incremental_vacuum_pages": vacuumed,
        "deferred": deferred,
    }
