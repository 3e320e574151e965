"""A maintenance pass, the ``maintenance`` job that runs it on a schedule, and the start-up check.

A pass, in order: consolidation of the events changed since the last pass (sweep.py; every event on the first pass
or when ``full``), the upgrade trigger of rule-written fallback blocks (``blocks.upgrade.requeue_fallbacks``),
re-projection of a stale graph (reproject.py), FTS/SQLite optimize (optimize.py), then the report (stats.py), stored
with the run in ``maintenance_runs``. Each step works in short slices and between two slices waits while a request
is in flight (gate.py); the consolidation's slices share a transaction that a write asking for the lock ends at once
(sweep.py), and the unsliced parts of optimize wait for a quiet spell, so captures and reads never wait for a pass.
Per-step timings: trace.py. Nothing is deleted
but the search change rows the derived index already holds (optimize.py).

A dry run only reads (through a read-only connection from the CLI, the reader from the RPC): it reports what a pass
would merge and repair, and writes no byte, not even its run record.

Schedule: one job for the whole database. After a run its handler puts its own row back in the queue, due
``maintenance_interval_hours`` later. At start (``at_start``) the job is queued due ``START_DELAY_S`` from now when
no run is younger than the interval, so the first turns of a session go first. Interval 0: never scheduled.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from stratagate.blocks import upgrade
from stratagate.config import Settings
from stratagate.events import recovery
from stratagate.jobs.pipeline import StageDeps
from stratagate.jobs.queue import JobRow, mark_done
from stratagate.maintenance import store
from stratagate.maintenance.gate import Gate, Hold, Idle, Pause, always_idle, never
from stratagate.redact import preview
from stratagate.storage.db import Actor, Database, audit
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import parse_time

START_DELAY_S = 60.0
"""How long after a start an overdue maintenance job waits: the session's first turns and summaries go first."""

QUEUED_AT_START = "overdue: queued"
"""What ``at_start`` answers when it queued the job: that job's pass is recorded with the trigger "start"."""


def _import_steps() -> None:
    """The pass's steps (consolidation, shapes, re-projection, optimize, the report): imported by the first pass or
    dry run, in a thread, not by the sidecar's start, whose ``at_start`` needs only the store."""
    from stratagate.maintenance import consolidate, optimize, reproject, stats, sweep  # noqa: F401


async def _steps_imported() -> None:
    await asyncio.to_thread(_import_steps)  # a first import on the loop would hold every request behind it


class Maintenance:
    """Maintenance of one database by this process: ``App`` holds one (the ``maintenance.run`` method and the
    scheduled job share it), ``stratagate maintain`` makes its own.

    It runs one pass at a time (another process's pass is safe too: every merge and repair re-checks inside its
    own transaction) and remembers that the start-up check queued the job (``due_from_start``)."""

    def __init__(self, db: Database, settings: Settings):
        self.db, self.settings = db, settings
        self.lock = asyncio.Lock()
        self.due_from_start = False
        self.gate = Gate()  # the server marks its requests; a pass's slices wait for them

    async def run_pass(self, trigger: str, actor: Actor, *, full: bool = False) -> dict[str, Any]:
        """A real pass, recorded in ``maintenance_runs`` (``failed`` with its error if a step raises): what changed
        since the last completed pass, or everything when ``full``."""
        async with self.lock:
            with self.gate.running():
                return await _run_pass(self.db, self.settings, trigger, actor, full, self.gate.turn,
                                       self.gate.waiting, self.gate.idle, self.gate.hold)

    async def at_start(self, now: float | None = None) -> str:
        """Queue the maintenance job at start when it is overdue (no run younger than the interval); what it did."""
        outcome = await _at_start(self.db, self.settings, now)
        if outcome == QUEUED_AT_START:
            self.due_from_start = True
        return outcome


async def _requeue_fallbacks(db: Database, max_attempts: int) -> dict[str, int]:
    """The upgrade triggers of rule-written fallback output: blocks' views (``blocks.upgrade``) and blocks' events
    (``events.recovery``) get their model jobs again. Neither module imports the summarizer or the extractor."""
    return {
        "blocks": int(await upgrade.requeue_fallbacks(db, max_attempts)),
        "events": int(await recovery.requeue_fallbacks(db, max_attempts)),
    }


async def dry_run(conn: Connection, settings: Settings, trigger: str = "manual") -> dict[str, Any]:
    """What a pass would do now, by reading ``conn`` only."""
    await _steps_imported()
    from stratagate.maintenance import consolidate, optimize, reproject, stats

    merges = await consolidate.plan(conn)
    stale = await reproject.plan(conn)
    return {
        "dry_run": True,
        "run_id": None,
        "trigger": trigger,
        "merges": [m.public() for m in merges],
        "merged": len(merges),
        "reprojection": stale.public(),
        "fallbacks_requeued": {"blocks": None, "events": None},
        "optimize": await optimize.plan(conn),
        "report": await stats.report(conn, settings.db, settings.maintenance_interval_hours),
    }


async def _run_pass(db: Database, settings: Settings, trigger: str, actor: Actor, full: bool,
                    pause: Pause, waiting: Callable[[], bool] = never, idle: Idle = always_idle,
                    hold: Hold | None = None) -> dict[str, Any]:
    """``Maintenance.run_pass`` under its lock. Every step works in slices that yield the loop between them."""
    await _steps_imported()
    from stratagate.maintenance import optimize, reproject, stats, sweep
    from stratagate.maintenance.trace import Trace

    trace = Trace(pause)
    async with db.transaction() as conn:
        run_id = await store.start_run(conn, trigger)
    try:
        why = f"maintenance run {run_id} ({trigger})"
        trace.enter("consolidate")
        swept = await sweep.run(db, actor, run_id, why, full=full, pause=trace.pause, waiting=waiting,
                               hold=trace.holding(hold))
        merges = swept.merges
        trace.enter("fallbacks")
        fallbacks = await _requeue_fallbacks(db, settings.job_max_attempts)
        trace.enter("reproject")
        stale, repaired = await reproject.sweep(db, actor, trace.pause)
        tidy = await optimize.run(db, trace.pause, trace.enter, idle)
        result: dict[str, Any] = {
            "dry_run": False,
            "run_id": run_id,
            "trigger": trigger,
            "merges": [m.public() for m in merges],
            "merged": len(merges),
            "reprojection": stale.public() | repaired.model_dump(),
            "fallbacks_requeued": fallbacks,
            "optimize": tidy,
        }
        await trace.pause()
        trace.enter("report")
        result["report"] = await stats.report(db.reader, settings.db, settings.maintenance_interval_hours,
                                              trace.pause)
        trace.mark()
    except Exception as exc:
        async with db.transaction() as conn:
            await store.finish_run(conn, run_id, None, preview(f"{type(exc).__name__}: {exc}", 2000))
        raise
    async with db.transaction() as conn:
        await store.finish_run(conn, run_id, result)
        await audit(conn, None, actor, "maintenance.run", "maintenance_run", str(run_id), None,
                    {"trigger": trigger, "merged": len(merges), "full": swept.full, "events_examined": swept.examined,
                     "facts_refreshed": len(repaired.facts_refreshed),
                     "events_projected": len(repaired.events_projected)})
    trace.write()
    return result


def _interval_s(settings: Settings) -> float:
    return settings.maintenance_interval_hours * 3600.0


async def _newest_start(conn: Connection) -> float | None:
    row = await store.newest_run(conn)
    return None if row is None else parse_time(row["started_at"]).timestamp()


async def _at_start(db: Database, settings: Settings, now: float | None) -> str:
    now = time.time() if now is None else now
    interval = _interval_s(settings)
    async with db.transaction() as conn:
        if interval <= 0:
            return "off: parked the queued job" if await store.park_job(conn) else "off"
        namespace_id = await store.first_namespace(conn)
        if namespace_id is None:
            return "nothing to maintain yet"
        newest = await _newest_start(conn)
        overdue = newest is None or now - newest >= interval
        job = await store.job_row(conn)
        if not overdue:
            if job is None or job["status"] in ("done", "failed"):  # e.g. the interval was 0 before
                assert newest is not None
                await store.schedule_job(conn, namespace_id, newest + interval, settings.job_max_attempts, "next")
            return "not due"
        if job is not None and job["status"] == "queued" and job["next_run_at"] <= now:
            return "due"  # its scheduled time already passed: the runner takes it now
        await store.schedule_job(conn, namespace_id, now + START_DELAY_S, settings.job_max_attempts, "overdue")
    return QUEUED_AT_START


class MaintenanceJob:
    """The ``maintenance`` stage's handler: one pass, then its own row goes back in the queue for the next one."""

    def __init__(self, maintenance: Maintenance):
        self._maintenance = maintenance
        self._db, self._settings = maintenance.db, maintenance.settings

    async def __call__(self, job: JobRow) -> list[Any]:
        interval = _interval_s(self._settings)
        if interval <= 0:
            async with self._db.transaction() as conn:
                await mark_done(conn, job)
            return []
        newest = await _newest_start(self._db.reader)
        now = time.time()
        if newest is not None and now < newest + interval - START_DELAY_S:
            # A pass ran since this job was queued (`stratagate maintain`, maintenance.run): not due yet.
            async with self._db.transaction() as conn:
                await store.reschedule_own_row(conn, job.id, newest + interval)
            return []
        trigger = "start" if self._maintenance.due_from_start else "schedule"
        self._maintenance.due_from_start = False
        await self._maintenance.run_pass(trigger, "system")
        async with self._db.transaction() as conn:
            await store.reschedule_own_row(conn, job.id, time.time() + interval)
        return []


def job_handler(deps: StageDeps) -> MaintenanceJob:
    """The ``maintenance`` stage's handler (declared in jobs/pipeline.py): a pass of the app's ``Maintenance``."""
    return MaintenanceJob(deps.maintenance)
