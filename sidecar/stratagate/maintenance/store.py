"""The SQL of maintenance: merge rows, copied evidence, the exact lifecycle restore of an unmerge, stale graph facts,
unprojected events, the maintenance job's row and run records, and the counts of the report.

Mutations run inside the caller's transaction; reads take any connection (a read-only one for a dry run).
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from stratagate import ids
from stratagate.jobs.pipeline import MAINTENANCE
from stratagate.storage.db import JOBS_QUEUED, audit, on_commit
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import now_iso

SUBJECT_ID = 1
"""The maintenance job's subject: the whole database (``db_1``), one row for every namespace."""


async def _all(conn: Connection, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
    return list(await conn.execute_fetchall(sql, params))


async def _one(conn: Connection, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Row | None:
    rows = await _all(conn, sql, params)
    return rows[0] if rows else None


# --- consolidation -----------------------------------------------------------------------------------------------


async def namespace_ids(conn: Connection) -> list[int]:
    return [int(r[0]) for r in await _all(conn, "SELECT id FROM namespaces ORDER BY id")]


async def active_events(conn: Connection, namespace_id: int) -> list[sqlite3.Row]:
    """Every active event of a namespace, survivors first: pinned ones, then the oldest."""
    return await _all(
        conn,
        "SELECT id, namespace_id, type, scope, session_id, time_status, summary, narrative, fingerprint, pinned"
        " FROM events"
        " WHERE namespace_id = ? AND status = 'active' ORDER BY pinned DESC, id",
        (namespace_id,),
    )


async def copy_fact_links(conn: Connection, from_event: int, to_event: int) -> list[list[Any]]:
    """The survivor also supports (or ends) the facts the merged event did, so no fact changes status; the links
    added, as ``[fact_id, role]``."""
    added: list[list[Any]] = []
    now = now_iso()
    for r in await _all(
        conn, "SELECT fact_id, role FROM graph_fact_events WHERE event_id = ? ORDER BY fact_id, role", (from_event,)
    ):
        cursor = await conn.execute(
            "INSERT INTO graph_fact_events(fact_id, event_id, role, created_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT(fact_id, event_id, role) DO NOTHING",
            (r["fact_id"], to_event, r["role"], now),
        )
        if cursor.rowcount:
            added.append([int(r["fact_id"]), str(r["role"])])
    return added


async def lifecycle_columns(conn: Connection, event_id: int) -> dict[str, Any]:
    """The columns a merge changes, exactly as stored (an unmerge writes them back byte for byte)."""
    row = await _one(
        conn, "SELECT status, prior_status, successor_id, weight_cap, updated_at FROM events WHERE id = ?", (event_id,)
    )
    assert row is not None
    return dict(row)


async def set_lifecycle(conn: Connection, event_id: int, columns: dict[str, Any]) -> None:
    await conn.execute(
        "UPDATE events SET status = ?, prior_status = ?, successor_id = ?, weight_cap = ?, updated_at = ? WHERE id = ?",
        (
            columns["status"],
            columns["prior_status"],
            columns["successor_id"],
            columns["weight_cap"],
            columns["updated_at"],
            event_id,
        ),
    )


async def insert_merge(
    conn: Connection,
    namespace_id: int,
    survivor_id: int,
    merged_id: int,
    merged_before: dict[str, Any],
    added_sources: list[int],
    similarity: float,
    run_id: int | None,
    actor: str,
) -> int:
    cursor = await conn.execute(
        "INSERT INTO event_merges(namespace_id, survivor_id, merged_id, merged_before, added_sources, similarity,"
        " run_id, actor, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            namespace_id,
            survivor_id,
            merged_id,
            json.dumps(merged_before, sort_keys=True),
            json.dumps(added_sources),
            similarity,
            run_id,
            actor,
            now_iso(),
        ),
    )
    return int(cursor.lastrowid or 0)


async def open_merge_of(conn: Connection, merged_id: int) -> sqlite3.Row | None:
    """The merge that made this event a duplicate and is not undone yet."""
    return await _one(
        conn,
        "SELECT * FROM event_merges WHERE merged_id = ? AND undone_at IS NULL ORDER BY id DESC LIMIT 1",
        (merged_id,),
    )


async def open_duplicates_of(conn: Connection, survivor_id: int) -> list[int]:
    """The events merged into ``survivor_id`` and not unmerged: copies of the same memory."""
    rows = await _all(
        conn,
        "SELECT merged_id FROM event_merges WHERE survivor_id = ? AND undone_at IS NULL ORDER BY merged_id",
        (survivor_id,),
    )
    return [int(r[0]) for r in rows]


async def is_open_survivor(conn: Connection, event_id: int) -> bool:
    row = await _one(
        conn, "SELECT 1 FROM event_merges WHERE survivor_id = ? AND undone_at IS NULL LIMIT 1", (event_id,)
    )
    return row is not None


async def delete_copied(conn: Connection, survivor_id: int, source_ids: list[int],
                        links: list[list[Any]]) -> int:
    """Remove exactly what a merge added to the survivor: its copied evidence rows and fact links."""
    removed = 0
    for source_id in source_ids:
        cursor = await conn.execute(
            "DELETE FROM event_sources WHERE id = ? AND event_id = ?", (int(source_id), survivor_id)
        )
        removed += cursor.rowcount
    for fact_id, role in links:
        await conn.execute(
            "DELETE FROM graph_fact_events WHERE fact_id = ? AND event_id = ? AND role = ?",
            (int(fact_id), survivor_id, role),
        )
    return removed


async def mark_undone(conn: Connection, merge_id: int) -> None:
    await conn.execute("UPDATE event_merges SET undone_at = ? WHERE id = ?", (now_iso(), merge_id))


# --- graph re-projection -----------------------------------------------------------------------------------------

_CURRENT = "('active', 'disputed')"


_ALL_IDS = (0, 1 << 62)


async def stale_facts(conn: Connection, ids: tuple[int, int] = _ALL_IDS) -> list[int]:
    """Facts whose status disagrees with their events: shown as current with no current event holding them up
    (its events were forgotten, superseded, merged or archived and the fact did not follow), or not current though a
    current event supports it and no current event ended it. ``ids``: only facts with ``after < id <= upto``."""
    rows = await _all(
        conn,
        f"SELECT f.id FROM graph_facts f WHERE f.id > ? AND f.id <= ? AND ((f.status IN {_CURRENT} AND NOT EXISTS ("
        f"  SELECT 1 FROM graph_fact_events l JOIN events e ON e.id = l.event_id"
        f"  WHERE l.fact_id = f.id AND l.role = 'supports' AND e.status IN {_CURRENT}))"
        f" OR (f.status NOT IN {_CURRENT} AND EXISTS ("
        f"  SELECT 1 FROM graph_fact_events l JOIN events e ON e.id = l.event_id"
        f"  WHERE l.fact_id = f.id AND l.role = 'supports' AND e.status IN {_CURRENT}) AND NOT EXISTS ("
        f"  SELECT 1 FROM graph_fact_events l JOIN events e ON e.id = l.event_id"
        f"  WHERE l.fact_id = f.id AND l.role = 'ends' AND e.status IN {_CURRENT})))"
        " ORDER BY f.id",
        ids,
    )
    return [int(r[0]) for r in rows]


async def unprojected_events(conn: Connection, ids: tuple[int, int] = _ALL_IDS) -> list[tuple[int, int]]:
    """Current events the graph never saw: no projection record at all (``(namespace_id, event_id)``)."""
    rows = await _all(
        conn,
        f"SELECT e.namespace_id, e.id FROM events e LEFT JOIN graph_projection p ON p.event_id = e.id"
        f" WHERE e.id > ? AND e.id <= ? AND e.status IN {_CURRENT} AND p.event_id IS NULL"
        " ORDER BY e.namespace_id, e.id",
        ids,
    )
    return [(int(r[0]), int(r[1])) for r in rows]


async def max_id(conn: Connection, table: str) -> int:
    row = await _one(conn, f'SELECT MAX(id) FROM "{table}"')
    return int(row[0] or 0) if row else 0


async def projected(conn: Connection, event_id: int) -> bool:
    return await _one(conn, "SELECT 1 FROM graph_projection WHERE event_id = ?", (event_id,)) is not None


async def failed_projection_jobs(conn: Connection, kind: str) -> list[int]:
    """Failed projection jobs whose batch still holds a current event that is not projected."""
    rows = await _all(
        conn,
        f"SELECT DISTINCT j.id FROM jobs j JOIN graph_projection p ON p.batch_id = j.subject_id"
        f" JOIN events e ON e.id = p.event_id"
        f" WHERE j.kind = ? AND j.status = 'failed' AND p.state = 'pending' AND e.status IN {_CURRENT} ORDER BY j.id",
        (kind,),
    )
    return [int(r[0]) for r in rows]


# --- the job and its runs ----------------------------------------------------------------------------------------


async def first_namespace(conn: Connection) -> int | None:
    row = await _one(conn, "SELECT MIN(id) FROM namespaces")
    return None if row is None or row[0] is None else int(row[0])


async def job_row(conn: Connection) -> sqlite3.Row | None:
    return await _one(
        conn,
        "SELECT id, status, next_run_at, attempts FROM jobs WHERE kind = ? AND subject_id = ?",
        (MAINTENANCE, SUBJECT_ID),
    )


async def schedule_job(conn: Connection, namespace_id: int, due: float, max_attempts: int,
                       reason: str) -> int:
    """Queue the maintenance job due at ``due`` (Unix seconds); a queued row moves only earlier, a finished or
    failed one is queued again with a fresh attempt budget, a running one is left alone."""
    now = now_iso()
    await conn.execute(
        "INSERT INTO jobs(namespace_id, kind, subject_id, status, attempts, max_attempts, next_run_at,"
        " created_at, updated_at) VALUES (?, ?, ?, 'queued', 0, ?, ?, ?, ?)"
        " ON CONFLICT(kind, subject_id) DO UPDATE SET"
        "  next_run_at = CASE WHEN status = 'queued' THEN MIN(next_run_at, excluded.next_run_at)"
        "                     WHEN status = 'running' THEN next_run_at ELSE excluded.next_run_at END,"
        "  attempts = CASE WHEN status IN ('done', 'failed') THEN 0 ELSE attempts END,"
        "  last_error = CASE WHEN status IN ('done', 'failed') THEN NULL ELSE last_error END,"
        "  status = CASE WHEN status = 'running' THEN status ELSE 'queued' END,"
        "  updated_at = excluded.updated_at",
        (namespace_id, MAINTENANCE, SUBJECT_ID, max_attempts, due, now, now),
    )
    row = await job_row(conn)
    assert row is not None
    on_commit(conn, JOBS_QUEUED)
    await audit(conn, namespace_id, "system", "maintenance.scheduled", "job", ids.make("job", int(row["id"])), None,
                {"next_run_at": row["next_run_at"], "reason": reason})
    return int(row["id"])


async def scheduled_jobs(conn: Connection) -> int:
    """The maintenance job when it waits for its next interval (queued, not due yet): 0 or 1."""
    row = await _one(
        conn,
        "SELECT COUNT(*) FROM jobs WHERE kind = ? AND status = 'queued' AND next_run_at > ?",
        (MAINTENANCE, time.time()),
    )
    return int(row[0]) if row else 0


async def reschedule_own_row(conn: Connection, job_id: int, due: float) -> None:
    """After a run: the job's own row goes back to the queue, due at the next interval."""
    await conn.execute(
        "UPDATE jobs SET status = 'queued', attempts = 0, next_run_at = ?, last_error = NULL, updated_at = ?"
        " WHERE id = ?",
        (due, now_iso(), job_id),
    )


async def park_job(conn: Connection) -> bool:
    """Scheduling is off (interval 0): a queued maintenance job is set aside as done."""
    cursor = await conn.execute(
        "UPDATE jobs SET status = 'done', updated_at = ? WHERE kind = ? AND subject_id = ? AND status = 'queued'",
        (now_iso(), MAINTENANCE, SUBJECT_ID),
    )
    return bool(cursor.rowcount)


async def start_run(conn: Connection, trigger: str) -> int:
    cursor = await conn.execute(
        "INSERT INTO maintenance_runs(trigger, status, started_at) VALUES (?, 'running', ?)", (trigger, now_iso())
    )
    return int(cursor.lastrowid or 0)


async def finish_run(conn: Connection, run_id: int, report: dict[str, Any] | None,
                     error: str | None = None) -> None:
    await conn.execute(
        "UPDATE maintenance_runs SET status = ?, finished_at = ?, error = ?, report = ? WHERE id = ?",
        (
            "failed" if error else "done",
            now_iso(),
            error,
            None if report is None else json.dumps(report, ensure_ascii=False, sort_keys=True),
            run_id,
        ),
    )


async def newest_run(conn: Connection) -> sqlite3.Row | None:
    return await _one(
        conn,
        "SELECT id, trigger, status, started_at, finished_at, error FROM maintenance_runs ORDER BY id DESC LIMIT 1",
    )


# --- the report --------------------------------------------------------------------------------------------------


async def grouped(conn: Connection, table: str, *columns: str) -> list[sqlite3.Row]:
    cols = ", ".join(columns)
    return await _all(conn, f"SELECT {cols}, COUNT(*) AS n FROM {table} GROUP BY {cols}")


async def count(conn: Connection, table: str) -> int:
    row = await _one(conn, f'SELECT COUNT(*) FROM "{table}"')
    return int(row[0]) if row else 0


async def merge_counts(conn: Connection) -> dict[str, int]:
    row = await _one(
        conn,
        "SELECT COUNT(*) AS total, COALESCE(SUM(undone_at IS NOT NULL), 0) AS undone FROM event_merges",
    )
    total, undone = (int(row["total"]), int(row["undone"])) if row else (0, 0)
    return {"done": total, "undone": undone, "open": total - undone}


async def tables(conn: Connection) -> tuple[list[str], list[str]]:
    """(ordinary tables, FTS5 tables); FTS shadow tables are neither."""
    rows = await _all(conn, "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name")
    fts = [r["name"] for r in rows if (r["sql"] or "").upper().startswith("CREATE VIRTUAL TABLE")]
    shadow = tuple(f"{name}_" for name in fts)
    plain = [r["name"] for r in rows if r["name"] not in fts and not r["name"].startswith(shadow)
             and not r["name"].startswith("sqlite_")]
    return plain, fts


async def fts_merge_step(conn: Connection, table: str, pages: int) -> bool:
    """One bounded FTS5 merge step over every level (a negative page count: as ``optimize`` would, in pieces);
    True while it still found work (SQLite's rule: fewer than two changed rows means the index is merged)."""
    before = conn.total_changes
    await conn.execute(f'INSERT INTO "{table}"("{table}", rank) VALUES (\'merge\', ?)', (-abs(pages),))
    return conn.total_changes - before >= 2


async def pragma(conn: Connection, name: str) -> int:
    row = await _one(conn, f"PRAGMA {name}")
    return int(row[0]) if row else 0


async def job_health(conn: Connection) -> dict[str, Any]:
    failed = await _one(conn, "SELECT COUNT(*) FROM jobs WHERE status = 'failed'")
    oldest = await _one(
        conn, "SELECT id, kind, created_at FROM jobs WHERE status = 'queued' ORDER BY created_at, id LIMIT 1"
    )
    last = await _one(
        conn,
        "SELECT id, kind, last_error, updated_at FROM jobs WHERE last_error IS NOT NULL"
        " ORDER BY updated_at DESC, id DESC LIMIT 1",
    )
    overdue = await _one(conn, "SELECT COUNT(*) FROM jobs WHERE status = 'queued' AND next_run_at < ?",
                         (time.time() - 3600,))
    return {
        "failed": int(failed[0]) if failed else 0,
        "queued_overdue_1h": int(overdue[0]) if overdue else 0,
        "oldest_queued": None if oldest is None else {
            "job": ids.make("job", int(oldest["id"])), "kind": oldest["kind"], "created_at": oldest["created_at"],
        },
        "last_error": None if last is None else {
            "job": ids.make("job", int(last["id"])), "kind": last["kind"], "error": last["last_error"],
            "at": last["updated_at"],
        },
    }
