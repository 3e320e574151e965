"""The background loop that runs due jobs with bounded concurrency.

A failing job only delays itself (backoff on its own row); the loop keeps claiming other due jobs. The loop wakes
when a job is due, when this process commits a job (``JOBS_QUEUED`` after-commit signal), and when another process
commits anything (``PRAGMA data_version``, polled every ``watch_interval`` seconds). Claimed jobs are leased to this
process; a watcher refreshes their heartbeat and takes back jobs whose owner died (see ``jobs/lease.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from stratagate import ids
from stratagate.errors import is_storage_full
from stratagate.jobs import lease, queue
from stratagate.jobs.pipeline import DEFAULT_MAX_ATTEMPTS, FollowUp
from stratagate.jobs.queue import JobRow
from stratagate.redact import preview
from stratagate.storage.db import JOBS_QUEUED, Database
from stratagate.storage.sqlite import Connection

log = logging.getLogger("stratagate.jobs")

CLAIM_RETRY_S = 1.0
"""After the queue itself could not be written (a full disk), wait this long before claiming again (no busy loop)."""

Handler = Callable[[JobRow], Awaitable[Sequence[FollowUp] | None]]
Notify = Callable[[str, dict], Awaitable[None]]
QueueFollowUp = Callable[[Connection, FollowUp, int], Awaitable[object]]
Recover = Callable[[Database, int], Awaitable[int]]


async def _enqueue(conn: Connection, follow_up: FollowUp, max_attempts: int) -> None:
    await queue.enqueue(conn, follow_up.namespace_id, follow_up.kind, follow_up.subject_id, max_attempts)


class PermanentJobError(Exception):
    """The job can never succeed (e.g. its subject is gone): fail now, no retries."""


class StorageState:
    """A full disk (or the STRATAGATE_DB_MAX_MB cap) is logged once when it starts and once when it ends, without a
    traceback: the queue and every job retry while it lasts, and each failure alone would repeat the same news."""

    def __init__(self) -> None:
        self.full = False

    def failed(self, exc: BaseException, what: str) -> bool:
        """True when ``exc`` is a storage-full failure (logged only if storage was not full already)."""
        if not is_storage_full(exc):
            return False
        if not self.full:
            self.full = True
            log.warning("storage is full (%s): background jobs wait and retry until space is freed", what)
        return True

    def recovered(self) -> None:
        """A job's work was committed: storage has room again."""
        if self.full:
            self.full = False
            log.info("storage has room again: background jobs resume")


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
        max_attempts: int | None = None,
        queues: dict[str, QueueFollowUp] | None = None,
        recover: Sequence[Recover] = (),
        watch_interval: float | None = 0.5,
        heartbeat_interval: float = 5.0,
        lease_timeout: float = 60.0,
    ):
        self._db = db
        self._handlers = handlers
        self._max_attempts = max_attempts  # None: keep each row's own limit
        self._queues = queues or {}
        self._recover = list(recover)
        self._watch_interval = watch_interval
        self._heartbeat_interval = heartbeat_interval
        self._lease_timeout = lease_timeout
        self._owner = lease.this_process().token
        self._watch_task: asyncio.Task[None] | None = None
        self._concurrency = concurrency
        self._base, self._cap = backoff_base, backoff_cap
        self._notify = notify
        self._wake = asyncio.Event()
        self._queued = False
        self._inflight: set[asyncio.Task[None]] = set()
        self._running_jobs: set[int] = set()
        # Failed attempts whose failure could not be written (a full disk): recorded as soon as storage allows, so the
        # job backs off and runs again in this process instead of staying 'running' until a restart.
        self._unrecorded: dict[int, tuple[JobRow, str, bool]] = {}
        self._loop_task: asyncio.Task[None] | None = None
        self.last_error: str | None = None
        self.storage = StorageState()

    def wake(self) -> None:
        self._wake.set()

    def _on_queued(self) -> None:
        self._queued = True  # this process committed a job: claim at once, without reading the due time first
        self._wake.set()

    @property
    def running(self) -> int:
        return len(self._inflight)

    async def start(self) -> None:
        self._db.listen(JOBS_QUEUED, lambda _: self._on_queued())
        requeued = await queue.requeue_interrupted(self._db, self._lease_timeout)
        if requeued:
            log.info("requeued %d job(s) whose owner is gone", requeued)
        for recover in self._recover:
            try:
                if found := await recover(self._db, self._max_attempts or DEFAULT_MAX_ATTEMPTS):
                    log.info("re-derived %d follow-up job(s) lost before a restart", found)
            except Exception:
                log.exception("re-deriving lost follow-up jobs failed")
        # The baseline is read here, before the sidecar serves: a commit by another process right after start (before
        # the watcher's first poll) must count as a change, not become the baseline.
        baseline = await self._db.data_version() if self._watch_interval is not None else None
        self._loop_task = asyncio.create_task(self._loop(), name="stratagate-jobs")
        self._watch_task = asyncio.create_task(self._watch(baseline), name="stratagate-jobs-watch")

    async def stop(self) -> None:
        interrupted = list(self._running_jobs)
        tasks = [t for t in (self._watch_task, self._loop_task, *self._inflight) if t is not None]
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
            retry: float | None = None
            if self._unrecorded and not await self._record_failures():
                retry = CLAIM_RETRY_S
            due: float | None = None
            known = False  # ``due`` read since the last claim
            if free > 0 and retry is None:
                # Unless this process just queued a job, one read before the claim's write transaction: after most
                # wakes (a job ended) nothing is due, and the read answers what the claim and the next-due read would.
                queued, self._queued = self._queued, False
                if not queued:
                    known, due = await self._probe_due()
                if queued or not known or (due is not None and due <= time.time()):
                    known, retry = False, await self._claim(free)
            timeout: float | None = retry
            if retry is None and len(self._inflight) < self._concurrency:
                if not known:
                    due = await self._safe_next_due()
                if due is not None:
                    timeout = max(0.0, due - time.time())
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancellation that arrives as the wake
            # event is set, and stop() then waited for this loop forever (its next timeout, again and again).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()

    async def _probe_due(self) -> tuple[bool, float | None]:
        """(True, the earliest due time of a claimable job or None), or (False, None) when the read failed (the claim
        then runs, and reports the storage trouble)."""
        try:
            return True, await queue.next_due_at(self._db)
        except Exception:
            return False, None

    async def _claim(self, free: int) -> float | None:
        """Claim up to ``free`` due jobs and start them; the retry delay when the queue could not be read or written."""
        try:
            claimed = await queue.claim_due(self._db, free, owner=self._owner, max_attempts=self._max_attempts)
        except Exception as exc:  # storage trouble: report and try again shortly
            self.last_error = f"job queue: {exc}"
            if not self.storage.failed(exc, "claiming jobs"):
                log.exception("claiming jobs failed")
            return CLAIM_RETRY_S
        for job in claimed:
            # Counted as running from the claim, not from the task's first step: a stop() in between cancels a task
            # that never ran, and its row must still be given back.
            self._running_jobs.add(job.id)
            task = asyncio.create_task(self._execute(job), name=f"job-{job.id}")
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)
        return None

    async def _watch(self, last_version: int | None = None) -> None:
        """Poll ``PRAGMA data_version`` (another process committed: maybe jobs for us), refresh our leases, and take
        back jobs of owners that died while we run. The poll is one cheap read on the writer connection."""
        interval = self._watch_interval or self._heartbeat_interval
        last_beat = time.monotonic()
        while True:
            await asyncio.sleep(interval)  # a poll period, not a synchronisation
            try:
                if self._watch_interval is not None:
                    version = await self._db.data_version()
                    if last_version is not None and version != last_version:
                        self.wake()
                    last_version = version
                if time.monotonic() - last_beat >= self._heartbeat_interval:
                    last_beat = time.monotonic()
                    if self._running_jobs:
                        await queue.heartbeat(self._db, self._owner)
                    if await queue.has_orphans(self._db, self._lease_timeout):
                        await queue.requeue_interrupted(self._db, self._lease_timeout)
            except Exception as exc:  # storage trouble: report and keep watching
                self.last_error = f"job watcher: {exc}"
                if not self.storage.failed(exc, "the job watcher"):
                    log.warning("job watcher: %s", type(exc).__name__)

    async def _queue_follow_ups(self, job: JobRow, follow_ups: Sequence[FollowUp]) -> None:
        """Right after the handler's commit. Lost only if the process dies in between; each stage's ``recover``
        re-derives those at the next start."""
        attempts = self._max_attempts or DEFAULT_MAX_ATTEMPTS
        try:
            async with self._db.transaction() as conn:
                for follow_up in follow_ups:
                    await self._queues.get(follow_up.kind, _enqueue)(conn, follow_up, attempts)
        except Exception as exc:
            self.last_error = f"{ids.make('job', job.id)} ({job.kind}): queuing its follow-ups failed: {exc}"
            if not self.storage.failed(exc, "queuing follow-up jobs"):
                log.error("queuing the follow-ups of job %s failed (%s)", job.id, type(exc).__name__)

    async def _mark_failed(self, job: JobRow, error: str, retryable: bool) -> str:
        """Record a failed attempt; on a full disk without its audit row, so the job still backs off and retries."""
        try:
            return await queue.mark_failed_attempt(self._db, job, error, self._base, self._cap, retryable)
        except Exception as exc:
            if not is_storage_full(exc):
                raise
            return await queue.mark_failed_attempt(self._db, job, error, self._base, self._cap, retryable, False)

    async def _record_failures(self) -> bool:
        """Write the failed attempts that could not be written before; False while storage still refuses."""
        for job_id, (job, error, retryable) in list(self._unrecorded.items()):
            try:
                await self._mark_failed(job, error, retryable)
            except Exception as exc:
                if not self.storage.failed(exc, "recording a failed job"):
                    log.error("recording the failure of job %s failed (%s)", job_id, type(exc).__name__)
                return False
            del self._unrecorded[job_id]
            self.storage.recovered()
        return True

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
            follow_ups = await handler(job)
            self.storage.recovered()
            if follow_ups:
                await self._queue_follow_ups(job, follow_ups)
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
            if not self.storage.failed(exc, f"a {job.kind} job"):
                log.warning("job %s (%s) attempt %d failed: %s", job.id, job.kind, job.attempts, type(exc).__name__)
            try:
                status = await self._mark_failed(job, error, retryable)
            except Exception as record_exc:
                # The row stays 'running'; the next start requeues it. Say so rather than guess a status.
                if not self.storage.failed(record_exc, "recording a failed job"):
                    log.error("recording the failure of job %s failed (%s)", job.id, type(record_exc).__name__)
                status = "running"
                self._unrecorded[job.id] = (job, error, retryable)
                why = preview(str(record_exc), 300)
                error = f"{error}; the failure could not be recorded ({why}); it is recorded once storage allows"
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
