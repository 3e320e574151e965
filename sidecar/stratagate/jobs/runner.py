"""The background loop that runs due jobs with bounded concurrency.

A failing job only delays itself (backoff on its own row); the loop keeps claiming other due jobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from stratagate import ids
from stratagate.jobs import queue
from stratagate.jobs.queue import JobRow
from stratagate.redact import preview
from stratagate.storage.db import Database

log = logging.getLogger("stratagate.jobs")

Handler = Callable[[JobRow], Awaitable[None]]
Notify = Callable[[str, dict], Awaitable[None]]


class PermanentJobError(Exception):
    """The job can never succeed (e.g. its subject is gone): fail now, no retries."""


class JobRunner:
    def __init__(
        self,
        db: Database,
        handlers: dict[str, Handler],
        *,
        concurrency: int,
        backoff_base: float,
        backoff_cap: float,
        notify: Notify | None = None,
    ):
        self._db = db
        self._handlers = handlers
        self._concurrency = concurrency
        self._base, self._cap = backoff_base, backoff_cap
        self._notify = notify
        self._wake = asyncio.Event()
        self._inflight: set[asyncio.Task[None]] = set()
        self._running_jobs: set[int] = set()
        self._loop_task: asyncio.Task[None] | None = None
        self.last_error: str | None = None

    def wake(self) -> None:
        self._wake.set()

    @property
    def running(self) -> int:
        return len(self._inflight)

    async def start(self) -> None:
        requeued = await queue.requeue_interrupted(self._db)
        if requeued:
            log.info("requeued %d job(s) interrupted by a restart", requeued)
        self._loop_task = asyncio.create_task(self._loop(), name="stratagate-jobs")

    async def stop(self) -> None:
        interrupted = list(self._running_jobs)
        tasks = [t for t in (self._loop_task, *self._inflight) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        # A clean stop is not the job's fault: give the attempt back so short-lived hosts (one headless turn
        # per process) cannot exhaust a job's attempts. After a crash the attempt still counts.
        if interrupted:
            with contextlib.suppress(Exception):
                await queue.release_interrupted(self._db, interrupted)

    async def _loop(self) -> None:
        while True:
            self._wake.clear()
            free = self._concurrency - len(self._inflight)
            if free > 0:
                try:
                    for job in await queue.claim_due(self._db, free):
                        task = asyncio.create_task(self._execute(job), name=f"job-{job.id}")
                        self._inflight.add(task)
                        task.add_done_callback(self._inflight.discard)
                except Exception as exc:  # storage trouble: report and try again shortly
                    self.last_error = f"job queue: {exc}"
                    log.exception("claiming jobs failed")
            timeout: float | None = None
            if len(self._inflight) < self._concurrency:
                due = await self._safe_next_due()
                if due is not None:
                    timeout = max(0.0, due - time.time())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def _safe_next_due(self) -> float | None:
        try:
            return await queue.next_due_at(self._db)
        except Exception:
            log.exception("reading the job queue failed")
            return time.time() + 5

    async def _execute(self, job: JobRow) -> None:
        handler = self._handlers.get(job.kind)
        self._running_jobs.add(job.id)
        status = "done"
        error: str | None = None
        try:
            if handler is None:
                raise PermanentJobError(f"no handler for job kind {job.kind!r}")
            await handler(job)
            # A handler may put its own row back in the queue (the embedding job after a long run): report that.
            row = await self._db.scalar("SELECT status FROM jobs WHERE id = ?", (job.id,))
            if row == "queued":
                status = "queued"
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = preview(str(exc) or exc.__class__.__name__, 4000)
            retryable = not isinstance(exc, PermanentJobError) and getattr(exc, "retryable", True)
            # The error class only: its message may quote model output or stored text (the row keeps it, redacted).
            log.warning("job %s (%s) attempt %d failed: %s", job.id, job.kind, job.attempts, type(exc).__name__)
            try:
                status = await queue.mark_failed_attempt(self._db, job, error, self._base, self._cap, retryable)
            except Exception as record_exc:
                # The row stays 'running'; the next start requeues it. Say so rather than guess a status.
                log.error("recording the failure of job %s failed (%s)", job.id, type(record_exc).__name__)
                status = "running"
                why = preview(str(record_exc), 300)
                error = f"{error}; the failure could not be recorded ({why}); it runs again after a restart"
                self.last_error = f"{ids.make('job', job.id)} ({job.kind}): {error}"
        finally:
            # Free the slot before waking the loop so it can claim the next job at once.
            current = asyncio.current_task()
            if current is not None:
                self._inflight.discard(current)
            self._running_jobs.discard(job.id)
            self._wake.set()
        if self._notify is not None:
            payload = {
                "job": ids.make("job", job.id),
                "namespace": job.namespace,
                "kind": job.kind,
                "subject": job.subject,
                "status": status,
                "attempts": job.attempts,
                "error": error,
            }
            with contextlib.suppress(Exception):
                await self._notify("jobs.changed", payload)
