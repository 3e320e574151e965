"""Group commit: writes that arrive while a commit is in flight share the next transaction (one fsync for all).

A capture costs one COMMIT (fsync, ~0.2-0.5 ms) plus a few tens of microseconds of statements, so a burst of them
(a spool replay, an import, pipelined ``turn.capture`` requests) is bound by the commits. Here each write is a
``work(conn)`` coroutine function; the ones queued when a group starts run one after another in a single IMMEDIATE
transaction, each inside its own SAVEPOINT (a work alone needs none), and each is answered only after the COMMIT
that holds it:

- a work that fails rolls back to its savepoint and fails alone; the others commit;
- when SQLite rolled the whole transaction back itself (SQLITE_FULL, an I/O error), the failing work fails and the
  ones before it, whose rows went with the rollback, run again in a fresh transaction (nothing is acknowledged
  that is not on disk);
- a failing COMMIT fails every work of the group with StorageError (nothing of it was written);
- works run in the order they were submitted (per-session order of captures holds), announce ``on_commit``
  signals as in ``Database.transaction()`` (a rolled-back work's signals are dropped), and run in the group's task,
  not the submitter's (context variables of the submitter are not seen).

A write may also come as a ``body(raw, signals)``: the same write as one plain function on the writer's thread
(``submit_body``). When every write of a group has one, the whole transaction — BEGIN, the bodies with their
savepoints, COMMIT — is one hand-off to that thread instead of two per write plus one per statement (each hand-off
costs the loop tens of microseconds of CPU). A body returns ``DEFER``, before writing anything, when this run needs
its ``work`` (a capture that seals a block); that write and the rest of the group then go on in the same transaction
the usual way. The rules above hold for both paths alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from stratagate.storage.db import Database, Signals, StorageError, _rollback, open_signals
from stratagate.storage.sqlite import Connection, Raw, on_thread

T = TypeVar("T")
Work = Callable[[Connection], Awaitable[Any]]
Body = Callable[[Raw, Signals], Any]
"""A write as one function on the writer's thread: plain sqlite3 statements on ``raw``; the ``on_commit`` signals it
announces go into the dict it gets (``signals[(topic, arg)] = None``)."""

MAX_GROUP = 256
"""Works per transaction at most: bounds how long the first of a long burst waits for its answer."""


class _Defer:
    def __repr__(self) -> str:
        return "DEFER"


DEFER: Any = _Defer()
"""What a body returns, before writing anything, when this write must run as its ``work`` instead."""


@dataclass(slots=True)
class _Job:
    work: Work
    body: Body | None
    future: asyncio.Future[Any]


@dataclass
class _Run:
    """What the bodies did on the writer's thread, applied to the futures on the loop."""

    done: list[tuple[_Job, Any, Signals]] = field(default_factory=list)
    failed: list[tuple[_Job, Exception]] = field(default_factory=list)
    again: list[_Job] = field(default_factory=list)
    rest: list[_Job] = field(default_factory=list)
    """Not run yet: a body deferred to its work; the transaction is still open for them."""
    commit_error: sqlite3.Error | None = None


class GroupCommit:
    def __init__(self, db: Database):
        self._db = db
        self._queue: list[_Job] = []
        self._task: asyncio.Task[None] | None = None
        self.groups = 0
        """Transactions committed (tests and the bench read it)."""

    def submit(self, work: Callable[[Connection], Awaitable[T]]) -> asyncio.Future[T]:
        """Queue ``work`` now (synchronously: the submission order is the commit order); await the future for its
        result, which is set once the transaction holding it has committed."""
        return self._queued(work, None)

    def submit_body(self, body: Body, work: Callable[[Connection], Awaitable[T]]) -> asyncio.Future[T]:
        """As ``submit``, with the same write as ``body`` too (run on the writer's thread; see the module's doc)."""
        return self._queued(work, body)

    def _queued(self, work: Work, body: Body | None) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.append(_Job(work, body, future))
        if self._task is None or self._task.done():
            # A fresh context: the group serves many submitters and must not carry one's context variables.
            self._task = asyncio.create_task(self._drain(), name="group-commit", context=contextvars.Context())
        return future

    async def _drain(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[:MAX_GROUP], self._queue[MAX_GROUP:]
            try:
                await self._commit(batch)
            except asyncio.CancelledError as exc:  # shutdown: nobody of the batch or the queue is left waiting
                for job in batch + self._queue:
                    _fail(job.future, exc)
                self._queue = []
                raise
            except Exception as exc:  # e.g. a failing ROLLBACK TO: that batch fails (rolled back), the next may not
                for job in batch:
                    _fail(job.future, exc)

    async def _commit(self, batch: list[_Job]) -> None:
        pending = batch
        while pending:
            pending = [j for j in pending if not j.future.done()]  # a cancelled submitter's work is skipped
            if not pending:
                return
            pending = await self._one_transaction(pending)

    async def _one_transaction(self, pending: list[_Job]) -> list[_Job]:
        """Run ``pending`` in one transaction; answer the ones it settled; return the ones to run again."""
        db = self._db
        done: list[tuple[_Job, Any, Signals]] = []
        again: list[_Job] = []
        # A work alone (a sequential capture, the usual case) needs no savepoint: when it fails, the whole
        # transaction is its own to roll back.
        alone = len(pending) == 1
        async with db._write_lock:
            conn = db.writer
            try:
                if all(job.body is not None for job in pending):
                    run = await on_thread(conn, lambda raw: _run_bodies(raw, pending))
                    for job, exc in run.failed:
                        _fail(job.future, exc)
                    if run.commit_error is not None:
                        _commit_failed(run.done, run.commit_error)
                        return run.again
                    done, again, rest = run.done, run.again, run.rest
                elif await _begin(conn, pending):
                    rest = pending
                else:
                    return []
                if rest:
                    again = await _run_works(conn, rest, alone, done)
                    if conn.in_transaction:
                        try:
                            await conn.execute("COMMIT")
                        except sqlite3.Error as exc:
                            await _rollback(conn)
                            _commit_failed(done, exc)
                            return again
            except BaseException:
                await _rollback(conn)  # a no-op when the thread's function had already ended its transaction
                raise
            finally:
                open_signals(conn, None)
        if done:
            self.groups += 1
            merged: Signals = {}
            for _job, _result, signals in done:
                merged.update(signals)
            db.committed_now(merged)
            for job, result, _signals in done:
                if not job.future.done():
                    job.future.set_result(result)
        return again


async def _begin(conn: Connection, pending: list[_Job]) -> bool:
    """BEGIN IMMEDIATE for the works path; False (every work failed) when it could not start."""
    try:
        await conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        for job in pending:
            _fail(job.future, exc)
        return False
    except asyncio.CancelledError:
        await _rollback(conn)  # the BEGIN may still complete in the connection's thread
        raise
    return True


async def _run_works(
    conn: Connection, jobs: list[_Job], alone: bool, done: list[tuple[_Job, Any, Signals]]
) -> list[_Job]:
    """The works of ``jobs`` in the open transaction, each in its savepoint unless ``alone``; appends the good ones
    to ``done`` (which already holds the writes before them in this transaction) and returns the ones to run again
    in a fresh transaction (``done`` is then emptied: SQLite rolled it all back)."""
    for index, job in enumerate(jobs):
        signals: Signals = {}
        open_signals(conn, signals)
        if not alone:
            await conn.execute("SAVEPOINT grouped")
        try:
            result = await job.work(conn)
        except Exception as exc:
            _fail(job.future, exc)
            if alone:
                await _rollback(conn)
                return []
            if conn.in_transaction:
                await conn.execute("ROLLBACK TO grouped")
                await conn.execute("RELEASE grouped")
                continue
            # SQLite rolled the whole transaction back: the works before this one lost their rows.
            again = [j for j, _r, _s in done] + jobs[index + 1 :]
            done.clear()
            return again
        if not alone:
            await conn.execute("RELEASE grouped")
        done.append((job, result, signals))
    return []


def _run_bodies(raw: Raw, jobs: list[_Job]) -> _Run:
    """The whole transaction of ``jobs`` on the writer's thread, by their bodies, as ``_run_works`` and the COMMIT
    do it on the loop; stops (transaction open) at a body that defers to its work."""
    run = _Run()
    try:
        raw.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        run.failed = [(job, exc) for job in jobs]
        return run
    alone = len(jobs) == 1
    try:
        for index, job in enumerate(jobs):
            assert job.body is not None
            signals: Signals = {}
            if not alone:
                raw.execute("SAVEPOINT grouped")
            try:
                result = job.body(raw, signals)
            except Exception as exc:
                run.failed.append((job, exc))
                if alone:
                    _rollback_raw(raw)
                    return run
                if raw.in_transaction:
                    raw.execute("ROLLBACK TO grouped")
                    raw.execute("RELEASE grouped")
                    continue
                run.again = [j for j, _r, _s in run.done] + jobs[index + 1 :]
                run.done = []
                return run
            if not alone:
                raw.execute("RELEASE grouped")
            if result is DEFER:
                run.rest = jobs[index:]
                return run
            run.done.append((job, result, signals))
        try:
            raw.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback_raw(raw)
            run.commit_error = exc
        return run
    except BaseException:
        _rollback_raw(raw)
        raise


def _rollback_raw(raw: Raw) -> None:
    # As db._rollback: SQLite may have rolled back already (SQLITE_FULL); that error is no news.
    with contextlib.suppress(sqlite3.Error):
        raw.execute("ROLLBACK")


def _commit_failed(done: list[tuple[_Job, Any, Signals]], exc: sqlite3.Error) -> None:
    error = StorageError(f"commit failed, nothing was written: {exc}")
    error.__cause__ = exc
    for job, _result, _signals in done:
        _fail(job.future, error)


def _fail(future: asyncio.Future[Any], exc: BaseException) -> None:
    if future.done():
        return
    if isinstance(exc, asyncio.CancelledError):
        future.cancel()
    else:
        future.set_exception(exc)
