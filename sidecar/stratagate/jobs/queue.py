"""Job rows: enqueue inside the caller's transaction, claim, finish, fail with backoff, retry by hand."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from stratagate import ids
from stratagate.jobs import lease
from stratagate.jobs.pipeline import (  # re-exported: the kinds are declared in jobs/pipeline.py
    BLOCK_SUMMARY,
    DEFAULT_MAX_ATTEMPTS,
    EMBEDDING,
    EVENT_EXTRACTION,
    GRAPH_PROJECTION,
    STAGES,
    subject_prefix,
)
from stratagate.redact import preview
from stratagate.storage.db import JOBS_QUEUED, Database, audit, on_commit
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import now_iso, to_iso

__all__ = ["BLOCK_SUMMARY", "EMBEDDING", "EVENT_EXTRACTION", "GRAPH_PROJECTION"]


class JobRow(BaseModel):
    id: int
    namespace_id: int
    namespace: str
    kind: str
    subject_id: int
    status: str
    attempts: int
    max_attempts: int
    next_run_at: float
    last_error: str | None
    created_at: str
    updated_at: str

    @property
    def subject(self) -> str:
        return f"{subject_prefix(self.kind)}_{self.subject_id}"

    def public(self) -> dict[str, Any]:
        return {
            "id": ids.make("job", self.id),
            "namespace": self.namespace,
            "kind": self.kind,
            "subject": self.subject,
            "status": self.status,
            "attempts": self.attempts,
            "max_attempts": self.max_attempts,
            "next_run_at": to_iso(datetime.fromtimestamp(self.next_run_at, UTC)) if self.status == "queued" else None,
            "last_error": self.last_error,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


_SELECT = (
    "SELECT j.id, j.namespace_id, n.name AS namespace, j.kind, j.subject_id, j.status, j.attempts,"
    " j.max_attempts, j.next_run_at, j.last_error, j.created_at, j.updated_at"
    " FROM jobs j JOIN namespaces n ON n.id = j.namespace_id"
)


# Queued jobs a stage's ordering rule holds back are not due yet (jobs/pipeline.py ``Stage.waits_while``).
_CLAIMABLE = "".join(
    f" AND NOT (j.kind = '{stage.kind}' AND {stage.waits_while})" for stage in STAGES if stage.waits_while
)


def backoff_seconds(attempts: int, base: float, cap: float) -> float:
    """Capped exponential backoff with ±20 % jitter so failing jobs do not retry in lockstep."""
    delay = min(cap, base * (2 ** max(0, attempts - 1)))
    return delay * random.uniform(0.8, 1.2)


async def enqueue(
    conn: Connection, namespace_id: int, kind: str, subject_id: int, max_attempts: int = DEFAULT_MAX_ATTEMPTS
) -> int:
    """Queue a job inside the caller's transaction (an existing row for the subject is kept as it is). After the
    commit, this process's runner is woken (``JOBS_QUEUED``); another process's sees the commit by polling."""
    on_commit(conn, JOBS_QUEUED)
    now = now_iso()
    await conn.execute(
        "INSERT INTO jobs(namespace_id, kind, subject_id, status, attempts, max_attempts, next_run_at,"
        " created_at, updated_at) VALUES (?, ?, ?, 'queued', 0, ?, ?, ?, ?)"
        " ON CONFLICT(kind, subject_id) DO NOTHING",
        (namespace_id, kind, subject_id, max_attempts, time.time(), now, now),
    )
    (row,) = await conn.execute_fetchall("SELECT id FROM jobs WHERE kind = ? AND subject_id = ?", (kind, subject_id))
    job_id = int(row[0])
    await audit(
        conn,
        namespace_id,
        "system",
        "job.enqueued",
        "job",
        ids.make("job", job_id),
        None,
        {"kind": kind, "subject_id": subject_id},
    )
    return job_id


async def requeue(
    conn: Connection, namespace_id: int, kind: str, subject_id: int, max_attempts: int = DEFAULT_MAX_ATTEMPTS
) -> bool:
    """Run a subject's job again, inside the caller's transaction: a finished (done or failed) or waiting row goes
    back to 'queued' with a fresh attempt budget, due now; a missing one is enqueued. A running job is left alone
    (False): it is live work of a runner. Used when a job's input changed (a block's views were upgraded)."""
    cur = await conn.execute(
        "UPDATE jobs SET status = 'queued', attempts = 0, max_attempts = ?, next_run_at = ?, last_error = NULL,"
        " updated_at = ? WHERE kind = ? AND subject_id = ? AND status IN ('done', 'failed', 'queued')",
        (max_attempts, time.time(), now_iso(), kind, subject_id),
    )
    if cur.rowcount:
        on_commit(conn, JOBS_QUEUED)
        return True
    running = await (
        await conn.execute("SELECT 1 FROM jobs WHERE kind = ? AND subject_id = ?", (kind, subject_id))
    ).fetchone()
    if running:
        return False
    await enqueue(conn, namespace_id, kind, subject_id, max_attempts)
    return True


async def enqueue_missing(db: Database, kind: str, subjects_sql: str, max_attempts: int) -> int:
    """Queue a ``kind`` job for every subject ``subjects_sql`` selects (rows ``(id, namespace_id)``) that has none.

    The start-up re-derivation of follow-ups lost to a crash between a handler's commit and the runner's follow-up
    transaction; idempotent (an existing job row is kept as it is)."""
    async with db.transaction() as conn:
        rows = list(await conn.execute_fetchall(
            f"SELECT s.id, s.namespace_id FROM ({subjects_sql}) s"
            " LEFT JOIN jobs j ON j.kind = ? AND j.subject_id = s.id WHERE j.id IS NULL",
            (kind,),
        ))
        for row in rows:
            await enqueue(conn, row["namespace_id"], kind, row["id"], max_attempts)
    return len(rows)


async def requeue_interrupted(db: Database, lease_timeout: float, now: float | None = None) -> int:
    """Jobs left 'running' by an owner that is gone run again, unless that was their last attempt.

    Gone: no owner recorded (a row from before leases), the owner's process is dead on this host, or its heartbeat
    is older than ``lease_timeout`` seconds. Live work of another process on the same database is left alone.
    """
    now = time.time() if now is None else now
    me = lease.this_process().token  # our own jobs are live however late their heartbeat is
    async with db.transaction() as conn:
        rows = await conn.execute_fetchall(
            "SELECT id, lease_owner, heartbeat_at, attempts >= max_attempts AS last FROM jobs WHERE status = 'running'"
        )
        gone = [r for r in rows if r["lease_owner"] != me and _owner_gone(r, now - lease_timeout)]
        if not gone:
            return 0
        stamp = now_iso()
        requeued = failed = 0
        for r in gone:
            if r["last"]:
                cur = await conn.execute(
                    "UPDATE jobs SET status = 'failed', updated_at = ?,"
                    " last_error = 'interrupted by a restart during its last attempt; use jobs.retry'"
                    " WHERE id = ? AND status = 'running' AND lease_owner IS ?",
                    (stamp, r["id"], r["lease_owner"]),
                )
                failed += cur.rowcount
            else:
                cur = await conn.execute(
                    "UPDATE jobs SET status = 'queued', next_run_at = ?, updated_at = ?,"
                    " last_error = COALESCE(last_error, 'interrupted by a restart')"
                    " WHERE id = ? AND status = 'running' AND lease_owner IS ?",
                    (now, stamp, r["id"], r["lease_owner"]),
                )
                requeued += cur.rowcount
        if requeued:
            on_commit(conn, JOBS_QUEUED)
        if requeued or failed:
            await audit(
                conn,
                None,
                "system",
                "jobs.recovered_after_restart",
                "job",
                None,
                None,
                {"requeued": requeued, "failed": failed, "jobs": [ids.make("job", r["id"]) for r in gone]},
            )
        return requeued


def _owner_gone(row: Any, stale_before: float) -> bool:
    if row["lease_owner"] is None:
        return True
    return lease.alive_here(row["lease_owner"]) is False or float(row["heartbeat_at"]) < stale_before


async def has_orphans(db: Database, lease_timeout: float) -> bool:
    """Read-only pre-check of ``requeue_interrupted``: is any other owner's running job orphaned?"""
    me = lease.this_process().token
    rows = await db.fetchall("SELECT lease_owner, heartbeat_at FROM jobs WHERE status = 'running'")
    stale_before = time.time() - lease_timeout
    return any(r["lease_owner"] != me and _owner_gone(r, stale_before) for r in rows)


async def heartbeat(db: Database, owner: str, now: float | None = None) -> int:
    """The owner is alive: refresh the heartbeat of every job it runs."""
    async with db.transaction() as conn:
        cur = await conn.execute(
            "UPDATE jobs SET heartbeat_at = ? WHERE lease_owner = ? AND status = 'running'",
            (time.time() if now is None else now, owner),
        )
        return cur.rowcount


async def release_interrupted(db: Database, job_ids: list[int]) -> int:
    """Jobs cut off by a clean shutdown: back to 'queued', due now, with the interrupted attempt given back."""
    marks = ",".join("?" * len(job_ids))
    async with db.transaction() as conn:
        cur = await conn.execute(
            f"UPDATE jobs SET status = 'queued', attempts = MAX(0, attempts - 1), next_run_at = ?, updated_at = ?"
            f" WHERE status = 'running' AND id IN ({marks})",
            (time.time(), now_iso(), *job_ids),
        )
        if cur.rowcount:
            await audit(
                conn,
                None,
                "system",
                "jobs.released_at_shutdown",
                "job",
                None,
                None,
                {"jobs": [ids.make("job", j) for j in job_ids]},
            )
        return cur.rowcount


async def claim_due(
    db: Database, limit: int, now: float | None = None, *, owner: str | None = None, max_attempts: int | None = None
) -> list[JobRow]:
    """Atomically move up to ``limit`` due jobs to 'running' (oldest due first), leased to ``owner`` (this
    process by default). ``max_attempts``: the running process's limit, applied to the claimed rows."""
    now = time.time() if now is None else now
    owner = owner or lease.this_process().token
    async with db.transaction() as conn:
        rows = await conn.execute_fetchall(
            _SELECT + " WHERE j.status = 'queued' AND j.next_run_at <= ?" + _CLAIMABLE
            + " ORDER BY j.next_run_at, j.id LIMIT ?",
            (now, limit),
        )
        jobs = [JobRow(**dict(r)) for r in rows]
        stamp = now_iso()
        for job in jobs:
            job.max_attempts = max_attempts or job.max_attempts
            await conn.execute(
                "UPDATE jobs SET status = 'running', attempts = attempts + 1, max_attempts = ?, lease_owner = ?,"
                " heartbeat_at = ?, updated_at = ? WHERE id = ?",
                (job.max_attempts, owner, now, stamp, job.id),
            )
            job.status, job.attempts = "running", job.attempts + 1
    return jobs


async def next_due_at(db: Database) -> float | None:
    # A held-back job is not due: the runner wakes when the job it waits for ends (its slot frees, or another
    # process's commit changes data_version), not in a loop on a due time it cannot claim.
    return await db.scalar("SELECT MIN(j.next_run_at) FROM jobs j WHERE j.status = 'queued'" + _CLAIMABLE)


async def mark_done(conn: Connection, job: JobRow) -> None:
    await conn.execute(
        "UPDATE jobs SET status = 'done', last_error = NULL, updated_at = ? WHERE id = ?", (now_iso(), job.id)
    )
    await audit(
        conn, job.namespace_id, "system", "job.done", "job", ids.make("job", job.id), None, {"attempts": job.attempts}
    )


async def mark_failed_attempt(
    db: Database, job: JobRow, error: str, base: float, cap: float, retryable: bool = True, audited: bool = True
) -> str:
    """Record a failed attempt: back off and retry, or give up when attempts are exhausted. Without ``audited`` only
    the row changes (an update in place: on a full disk it fits where a new audit row does not)."""
    error = preview(error, 4000)  # errors can quote model output or stored text: never keep a secret
    give_up = (not retryable) or job.attempts >= job.max_attempts
    status = "failed" if give_up else "queued"
    next_run = time.time() + (0 if give_up else backoff_seconds(job.attempts, base, cap))
    async with db.transaction() as conn:
        await conn.execute(
            "UPDATE jobs SET status = ?, next_run_at = ?, last_error = ?, updated_at = ? WHERE id = ?",
            (status, next_run, error, now_iso(), job.id),
        )
        if not audited:
            return status
        await audit(
            conn,
            job.namespace_id,
            "system",
            "job.failed" if give_up else "job.attempt_failed",
            "job",
            ids.make("job", job.id),
            None,
            {"attempts": job.attempts, "error": preview(error, 500), "next_run_at": None if give_up else next_run},
        )
    return status


async def retry(
    db: Database, job_id: int | None, namespace: str | None, actor: str, kind: str | None = None
) -> list[int]:
    """Put failed (or waiting) jobs back at the front of the queue with a fresh attempt budget (without ``job_id``:
    every failed job, of ``kind`` when given)."""
    clauses: list[str] = ["j.status IN ('failed', 'queued')"]
    params: list[Any] = []
    if job_id is not None:
        clauses.append("j.id = ?")
        params.append(job_id)
    else:
        clauses.append("j.status = 'failed'")
    if kind is not None:
        clauses.append("j.kind = ?")
        params.append(kind)
    if namespace is not None:
        clauses.append("n.name = ?")
        params.append(namespace)
    async with db.transaction() as conn:
        rows = await conn.execute_fetchall(_SELECT + " WHERE " + " AND ".join(clauses), params)
        jobs = [JobRow(**dict(r)) for r in rows]
        for job in jobs:
            await conn.execute(
                "UPDATE jobs SET status = 'queued', attempts = 0, next_run_at = ?, updated_at = ? WHERE id = ?",
                (time.time(), now_iso(), job.id),
            )
            await audit(
                conn,
                job.namespace_id,
                actor,
                "job.retried",
                "job",
                ids.make("job", job.id),
                {"status": job.status, "attempts": job.attempts},
                {"status": "queued", "attempts": 0},
            )
        if jobs:
            on_commit(conn, JOBS_QUEUED)
    return [job.id for job in jobs]


async def list_jobs(db: Database, namespace: str | None, status: str | None, limit: int) -> list[JobRow]:
    clauses, params = [], []
    if namespace is not None:
        clauses.append("n.name = ?")
        params.append(namespace)
    if status is not None:
        clauses.append("j.status = ?")
        params.append(status)
    where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    rows = await db.fetchall(_SELECT + where + " ORDER BY j.id DESC LIMIT ?", [*params, limit])
    return [JobRow(**dict(r)) for r in rows]


async def get_job(db: Database, job_id: int) -> JobRow | None:
    row = await db.fetchone(_SELECT + " WHERE j.id = ?", (job_id,))
    return None if row is None else JobRow(**dict(row))


async def latest_failure(db: Database) -> str | None:
    """The error of the most recently failed job that is still failed (for system.info)."""
    row = await db.fetchone(
        "SELECT id, kind, last_error FROM jobs WHERE status = 'failed' ORDER BY updated_at DESC, id DESC LIMIT 1"
    )
    return None if row is None else f"{ids.make('job', row['id'])} ({row['kind']}): {row['last_error']}"
