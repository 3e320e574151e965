"""The SQL of the Memory page's read routes (overview, recent memory, the change cursor, export).

Every namespace-scoped query filters on ``namespace_id``; the overview's per-namespace counts group by it. Reads go
through the reader connection (``Database.fetchall``), so the page never waits behind a write."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from stratagate.jobs.pipeline import MAINTENANCE
from stratagate.jobs.queue import JobRow
from stratagate.storage.db import Database

# --- overview ----------------------------------------------------------------------------------------------------


async def namespaces(db: Database) -> list[sqlite3.Row]:
    return await db.fetchall("SELECT id, name, user_tier FROM namespaces ORDER BY name")


async def grouped(db: Database, table: str, with_status: bool) -> dict[tuple[int, str], int]:
    """COUNT(*) of ``table`` by namespace (and status): {(namespace_id, status or ''): n}. ``table`` is one of
    this module's own constants, never user input."""
    if with_status:
        rows = await db.fetchall(
            f"SELECT namespace_id, status, COUNT(*) AS n FROM {table} GROUP BY namespace_id, status"
        )
        return {(int(r["namespace_id"]), str(r["status"])): int(r["n"]) for r in rows}
    rows = await db.fetchall(f"SELECT namespace_id, COUNT(*) AS n FROM {table} GROUP BY namespace_id")
    return {(int(r["namespace_id"]), ""): int(r["n"]) for r in rows}


async def last_turns(db: Database) -> dict[int, str | None]:
    rows = await db.fetchall(
        "SELECT namespace_id, MAX(COALESCE(ended_at, captured_at)) AS at FROM turns GROUP BY namespace_id"
    )
    return {int(r["namespace_id"]): r["at"] for r in rows}


_JOB_SELECT = (
    "SELECT j.id, j.namespace_id, n.name AS namespace, j.kind, j.subject_id, j.status, j.attempts,"
    " j.max_attempts, j.next_run_at, j.last_error, j.created_at, j.updated_at"
    " FROM jobs j JOIN namespaces n ON n.id = j.namespace_id"
)


def _job_filter(namespace: str | None, status: str | None, now: float) -> tuple[str, list[Any]]:
    """``scheduled`` is the maintenance job waiting for its next interval (as system.info counts it): a queued
    row, but not work in the queue, so ``queued`` leaves it out."""
    clauses: list[str] = []
    params: list[Any] = []
    if namespace is not None:
        clauses.append("n.name = ?")
        params.append(namespace)
    waiting = "(j.kind = ? AND j.status = 'queued' AND j.next_run_at > ?)"
    if status == "scheduled":
        clauses.append(waiting)
        params += [MAINTENANCE, now]
    elif status == "queued":
        clauses.append(f"j.status = 'queued' AND NOT {waiting}")
        params += [MAINTENANCE, now]
    elif status is not None:
        clauses.append("j.status = ?")
        params.append(status)
    return ((" WHERE " + " AND ".join(clauses)) if clauses else ""), params


async def jobs(
    db: Database, namespace: str | None, status: str | None, limit: int, offset: int
) -> tuple[list[JobRow], int]:
    now = time.time()
    where, params = _job_filter(namespace, status, now)
    rows = await db.fetchall(f"{_JOB_SELECT}{where} ORDER BY j.id DESC LIMIT ? OFFSET ?", [*params, limit, offset])
    total = await db.scalar(
        f"SELECT COUNT(*) FROM jobs j JOIN namespaces n ON n.id = j.namespace_id{where}", params
    )
    return [JobRow(**dict(r)) for r in rows], int(total or 0)


def is_scheduled(job: JobRow, now: float | None = None) -> bool:
    return job.kind == MAINTENANCE and job.status == "queued" and job.next_run_at > (now or time.time())


# --- recent memory -----------------------------------------------------------------------------------------------


async def sessions(db: Database, ns_id: int) -> list[sqlite3.Row]:
    return await db.fetchall(
        "SELECT s.id, s.key AS name, s.created_at AS started_at, s.turn_count AS turns,"
        " (SELECT MAX(COALESCE(t.ended_at, t.captured_at)) FROM turns t WHERE t.session_id = s.id) AS last_turn_at,"
        " (SELECT COUNT(*) FROM blocks b WHERE b.session_id = s.id AND b.status = 'ready') AS ready,"
        " (SELECT COUNT(*) FROM blocks b WHERE b.session_id = s.id AND b.status = 'pending') AS pending"
        " FROM sessions s WHERE s.namespace_id = ?"
        " ORDER BY COALESCE(last_turn_at, s.created_at) DESC, s.id DESC",
        (ns_id,),
    )


async def block_extras(db: Database, ns_id: int, session_id: int) -> dict[int, tuple[str | None, int]]:
    """block id → (summary_source, number of tool records) for one session's blocks."""
    rows = await db.fetchall(
        "SELECT b.id, b.summary_source,"
        " (SELECT COUNT(*) FROM messages m JOIN turns t ON t.id = m.turn_id"
        "  WHERE t.block_id = b.id AND m.role = 'tool') AS tools"
        " FROM blocks b WHERE b.namespace_id = ? AND b.session_id = ?",
        (ns_id, session_id),
    )
    return {int(r["id"]): (r["summary_source"], int(r["tools"])) for r in rows}


_MESSAGE_COLUMNS = (
    "m.id, m.session_id, s.key AS session, t.seq AS turn_seq, m.position, m.role, m.content, m.tool_name,"
    " m.tool_call_id, m.tool_arguments, m.tool_result, m.is_error, m.created_at"
)
_MESSAGE_FROM = " FROM messages m JOIN turns t ON t.id = m.turn_id JOIN sessions s ON s.id = m.session_id"


async def message(db: Database, ns_id: int, message_id: int) -> sqlite3.Row | None:
    return await db.fetchone(
        f"SELECT {_MESSAGE_COLUMNS}{_MESSAGE_FROM} WHERE m.id = ? AND m.namespace_id = ?", (message_id, ns_id)
    )


async def neighbours(db: Database, ns_id: int, row: sqlite3.Row, around: int) -> list[sqlite3.Row]:
    """Up to ``around`` messages before and after ``row`` in its session, in conversation order."""
    key = (int(row["turn_seq"]), int(row["position"]))
    before = await db.fetchall(
        f"SELECT {_MESSAGE_COLUMNS}{_MESSAGE_FROM} WHERE m.namespace_id = ? AND m.session_id = ?"
        " AND (t.seq < ? OR (t.seq = ? AND m.position < ?)) ORDER BY t.seq DESC, m.position DESC LIMIT ?",
        (ns_id, row["session_id"], key[0], key[0], key[1], around),
    )
    after = await db.fetchall(
        f"SELECT {_MESSAGE_COLUMNS}{_MESSAGE_FROM} WHERE m.namespace_id = ? AND m.session_id = ?"
        " AND (t.seq > ? OR (t.seq = ? AND m.position > ?)) ORDER BY t.seq, m.position LIMIT ?",
        (ns_id, row["session_id"], key[0], key[0], key[1], around),
    )
    return [*reversed(before), *after]


# --- the change cursor -------------------------------------------------------------------------------------------


async def audit_high_water(db: Database) -> int:
    return int(await db.scalar("SELECT COALESCE(MAX(id), 0) FROM audit_log") or 0)


async def audit_actions_after(db: Database, after_id: int, upto_id: int, cap: int) -> list[str] | None:
    """The distinct actions of the audit rows in (after_id, upto_id]; None when more than ``cap`` rows (the caller
    then counts every area as changed rather than reading a long tail)."""
    count = int(await db.scalar("SELECT COUNT(*) FROM audit_log WHERE id > ? AND id <= ?", (after_id, upto_id)) or 0)
    if count > cap:
        return None
    rows = await db.fetchall(
        "SELECT DISTINCT action FROM audit_log WHERE id > ? AND id <= ?", (after_id, upto_id)
    )
    return [str(r["action"]) for r in rows]


async def unaudited_state(db: Database) -> dict[str, tuple[Any, ...]]:
    """State the audit log does not record row by row: a job's claim (queued → running) and other status moves
    without a row of their own, namespace rows, and the stored settings. One aggregate per area, compared between
    two polls."""
    jobs = await db.fetchone(
        "SELECT COUNT(*), MAX(updated_at), TOTAL(attempts), TOTAL(status = 'running'), TOTAL(status = 'failed'),"
        " TOTAL(status = 'done') FROM jobs"
    )
    spaces = await db.fetchone("SELECT COUNT(*), MAX(id), TOTAL(user_tier) FROM namespaces")
    meta = await db.fetchall("SELECT key, value FROM meta WHERE key <> 'redaction_key' ORDER BY key")
    context = await db.fetchall("SELECT scope, updated_at FROM context_settings ORDER BY scope")
    evidence = await db.fetchone(
        "SELECT (SELECT COALESCE(MAX(id), 0) FROM use_receipts),"
        " (SELECT COALESCE(MAX(id), 0) FROM evidence_assessments)"
    )
    return {
        "jobs": tuple(jobs or ()),
        "namespaces": tuple(spaces or ()),
        "settings": (*(tuple(r) for r in meta), *(tuple(r) for r in context)),
        "evidence": tuple(evidence or ()),
    }


# --- export ------------------------------------------------------------------------------------------------------


async def export_rows(db: Database, ns_id: int) -> dict[str, list[sqlite3.Row]]:
    """Every row of the namespace that the export writes, each list in id order."""
    one = (ns_id,)
    return {
        "sessions": await db.fetchall(
            "SELECT id, key, created_at, turn_count FROM sessions WHERE namespace_id = ? ORDER BY id", one),
        "turns": await db.fetchall(
            "SELECT id, session_id, seq, receipt, started_at, ended_at, end_reason, block_id, captured_at"
            " FROM turns WHERE namespace_id = ? ORDER BY session_id, seq", one),
        "messages": await db.fetchall(
            f"SELECT {_MESSAGE_COLUMNS}, m.turn_id{_MESSAGE_FROM} WHERE m.namespace_id = ?"
            " ORDER BY m.session_id, t.seq, m.position", one),
        "blocks": await db.fetchall(
            "SELECT id, session_id, summary_source FROM blocks WHERE namespace_id = ? ORDER BY session_id, seq", one),
        "events": await db.fetchall(
            "SELECT e.*, s.key AS session FROM events e LEFT JOIN sessions s ON s.id = e.session_id"
            " WHERE e.namespace_id = ? ORDER BY e.id", one),
        "event_sources": await db.fetchall(
            "SELECT es.event_id, es.message_id, es.call_id, es.quote, es.import_id, es.source_ref, es.created_at"
            " FROM event_sources es JOIN events e ON e.id = es.event_id WHERE e.namespace_id = ? ORDER BY es.id", one),
        "nodes": await db.fetchall(
            "SELECT id, kind, name, key, category, created_at FROM graph_nodes WHERE namespace_id = ? ORDER BY id",
            one),
        "edges": await db.fetchall(
            "SELECT id, src_id, predicate, dst_id, created_at FROM graph_edges WHERE namespace_id = ? ORDER BY id",
            one),
        "facts": await db.fetchall(
            "SELECT f.id, f.node_id, f.edge_id, f.attribute, f.value, f.slot, f.scope, f.status, f.valid_from,"
            " f.valid_to, f.superseded_by, f.recorded_at, s.key AS session FROM graph_facts f"
            " LEFT JOIN sessions s ON s.id = f.session_id WHERE f.namespace_id = ? ORDER BY f.id", one),
        "fact_events": await db.fetchall(
            "SELECT fe.fact_id, fe.event_id, fe.role FROM graph_fact_events fe"
            " JOIN graph_facts f ON f.id = fe.fact_id WHERE f.namespace_id = ? ORDER BY fe.fact_id, fe.event_id", one),
        "imports": await db.fetchall(
            "SELECT id, format, source_name, source_text, source_sha256, item_count, report, status, created_at,"
            " removed_at FROM imports WHERE namespace_id = ? ORDER BY id", one),
        "audit": await db.fetchall(
            "SELECT id, at, actor, action, subject_type, subject_id, before, after FROM audit_log"
            " WHERE namespace_id = ? ORDER BY id", one),
    }
