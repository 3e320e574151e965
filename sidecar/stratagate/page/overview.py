"""``page.overview`` and ``page.jobs.list``: the Memory page's first tab (health, storage, queue, namespaces).

The process-wide numbers come from ``App.info`` (the same as ``system.info``); the page adds the per-namespace
counts, the storage files' sizes and the job list with each failed job's error."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from stratagate import ids
from stratagate.app import App
from stratagate.jobs.queue import JobRow
from stratagate.page import read_queries as q
from stratagate.protocol import method
from stratagate.protocol.types import Empty, Name, Result
from stratagate.storage import lookup
from stratagate.timeutil import to_iso

JobStatus = Literal["queued", "running", "done", "failed", "scheduled"]
EVENT_STATUSES = ("active", "superseded", "disputed", "forgotten", "archived")
FAILED_SHOWN = 50


class Job(Result):
    id: str
    kind: str
    subject: str
    namespace: str | None
    status: JobStatus
    attempts: int
    max_attempts: int
    error: str | None
    created_at: str
    updated_at: str
    next_run_at: str | None


def job_view(job: JobRow) -> Job:
    scheduled = q.is_scheduled(job)
    waiting = job.status == "queued"
    return Job(
        id=ids.make("job", job.id),
        kind=job.kind,
        subject=job.subject,
        namespace=job.namespace,
        status="scheduled" if scheduled else job.status,
        attempts=job.attempts,
        max_attempts=job.max_attempts,
        error=job.last_error,
        created_at=job.created_at,
        updated_at=job.updated_at,
        next_run_at=to_iso(datetime.fromtimestamp(job.next_run_at, UTC)) if waiting else None,
    )


class Storage(Result):
    db_bytes: int
    wal_bytes: int


class JobCounts(Result):
    queued: int
    running: int
    done: int
    failed: int
    scheduled: int


class BlockCounts(Result):
    ready: int
    pending: int


class EventCounts(Result):
    active: int
    superseded: int
    disputed: int
    forgotten: int
    archived: int


class ImportCounts(Result):
    active: int
    removed: int


class NamespaceSummary(Result):
    name: str
    user_tier: bool
    sessions: int
    turns: int
    messages: int
    blocks: BlockCounts
    events: EventCounts
    graph_nodes: int
    imports: ImportCounts
    last_turn_at: str | None


class OverviewResult(Result):
    version: str
    uptime_s: float
    db_path: str
    storage: Storage
    schema_version: int
    model_mode: Literal["auto", "none"]
    model_route: str
    last_error: str | None
    dense: dict[str, Any]  # system.info's dense section, documented there
    host: dict[str, Any]  # system.info's host section: the DSH version and whether StrataGate supports it
    team: dict[str, Any]  # system.info's team section: team memory's sync (never the DSN's secrets)
    jobs: JobCounts
    failed_jobs: list[Job]
    namespaces: list[NamespaceSummary]


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


async def _namespaces(app: App) -> list[NamespaceSummary]:
    db = app.db
    sessions = await q.grouped(db, "sessions", False)
    turns = await q.grouped(db, "turns", False)
    messages = await q.grouped(db, "messages", False)
    nodes = await q.grouped(db, "graph_nodes", False)
    blocks = await q.grouped(db, "blocks", True)
    events = await q.grouped(db, "events", True)
    imports = await q.grouped(db, "imports", True)
    last = await q.last_turns(db)
    out = []
    for row in await q.namespaces(db):
        ns = int(row["id"])
        out.append(NamespaceSummary(
            name=row["name"],
            user_tier=bool(row["user_tier"]),
            sessions=sessions.get((ns, ""), 0),
            turns=turns.get((ns, ""), 0),
            messages=messages.get((ns, ""), 0),
            blocks=BlockCounts(ready=blocks.get((ns, "ready"), 0), pending=blocks.get((ns, "pending"), 0)),
            events=EventCounts(**{s: events.get((ns, s), 0) for s in EVENT_STATUSES}),
            graph_nodes=nodes.get((ns, ""), 0),
            imports=ImportCounts(active=imports.get((ns, "active"), 0), removed=imports.get((ns, "removed"), 0)),
            last_turn_at=last.get(ns),
        ))
    return out


@method("page.overview", params=Empty, result=OverviewResult, http="GET /overview")
async def overview(app: App, _p: Empty) -> OverviewResult:
    """Health, storage, the job queue with its failed jobs, and every namespace's counts."""
    info = await app.info()
    failed, _ = await q.jobs(app.db, None, "failed", FAILED_SHOWN, 0)
    db_path = str(app.settings.db)
    return OverviewResult(
        version=info["version"],
        uptime_s=info["uptime_s"],
        db_path=db_path,
        storage=Storage(db_bytes=_size(db_path), wal_bytes=_size(db_path + "-wal")),
        schema_version=info["schema_version"],
        model_mode=info["model_mode"],
        model_route=info["model_route"],
        last_error=info["last_job_error"],
        dense=info["dense"],
        host=info["host"],
        team=info["team"],
        jobs=JobCounts(**info["counts"]["jobs"]),
        failed_jobs=[job_view(j) for j in failed],
        namespaces=await _namespaces(app),
    )


class JobsListParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name | None = None
    status: JobStatus | None = None
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0)


class JobsPage(Result):
    jobs: list[Job]
    total: int


@method("page.jobs.list", params=JobsListParams, result=JobsPage, http="GET /jobs")
async def jobs_list(app: App, p: JobsListParams) -> JobsPage:
    """Jobs newest first, of one namespace or all, optionally of one status."""
    if p.namespace is not None:
        await lookup.namespace_id(app.db, p.namespace)  # unknown → 404
    rows, total = await q.jobs(app.db, p.namespace, p.status, p.limit, p.offset)
    return JobsPage(jobs=[job_view(j) for j in rows], total=total)
