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
"""

from __future__ import annotations

import asyncio
import contextvars
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from stratagate.storage.db import Database, Signals, StorageError, _rollback, open_signals
from stratagate.storage.sqlite import Connection

T = TypeVar("T")
Work = Callable[[Connection], Awaitable[Any]]

MAX_GROUP = 256
"""Works per transaction at most: bounds how long the first of a long burst waits for its answer."""


class GroupCommit:
    def __init__(self, db: Database):
        self._db = db
        self._queue: list[tuple[Work, asyncio.Future[Any]]] = []
        self._task: asyncio.Task[None] | None = None
        self.groups = 0
        """Transactions committed (tests and the bench read it)."""

    def submit(self, work: Callable[[Connection], Awaitable[T]]) -> asyncio.Future[T]:
        """Queue ``work`` now (synchronously: the submission order is the commit order); await the future for its
        result, which is set once the transaction holding it has committed."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.append((work, future))
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
                for _work, future in batch + self._queue:
                    _fail(future, exc)
                self._queue = []
                raise
            except Exception as exc:  # e.g. a failing ROLLBACK TO: that batch fails (rolled back), the next may not
                for _work, future in batch:
                    _fail(future, exc)

    async def _commit(self, batch: list[tuple[Work, asyncio.Future[Any]]]) -> None:
        pending = batch
        while pending:
            pending = [(w, f) for w, f in pending if not f.done()]  # a cancelled submitter's work is skipped
            if not pending:
                return
            pending = await self._one_transaction(pending)

    async def _one_transaction(self, pending: list[tuple[Work, asyncio.Future[Any]]]) -> list[tuple[Work, Any]]:
        """Run ``pending`` in one transaction; answer the ones it settled; return the ones to run again."""
        db = self._db
        done: list[tuple[Work, asyncio.Future[Any], Any, Signals]] = []
        again: list[tuple[Work, asyncio.Future[Any]]] = []
        async with db._write_lock:
            conn = db.writer
            try:
                await conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                for _work, future in pending:
                    _fail(future, exc)
                return []
            except asyncio.CancelledError:
                await _rollback(conn)  # the BEGIN may still complete in the connection's thread
                raise
            # A work alone (a sequential capture, the usual case) needs no savepoint: when it fails, the whole
            # transaction is its own to roll back. Two statements, two thread hand-offs fewer.
            alone = len(pending) == 1
            try:
                for index, (work, future) in enumerate(pending):
                    signals: Signals = {}
                    open_signals(conn, signals)
                    if not alone:
                        await conn.execute("SAVEPOINT grouped")
                    try:
                        result = await work(conn)
                    except Exception as exc:
                        _fail(future, exc)
                        if alone:
                            await _rollback(conn)
                            break
                        if conn.in_transaction:
                            await conn.execute("ROLLBACK TO grouped")
                            await conn.execute("RELEASE grouped")
                            continue
                        # SQLite rolled the whole transaction back: the works before this one lost their rows.
                        again = [(w, f) for w, f, _r, _s in done] + pending[index + 1 :]
                        done = []
                        break
                    if not alone:
                        await conn.execute("RELEASE grouped")
                    done.append((work, future, result, signals))
                if conn.in_transaction:
                    try:
                        await conn.execute("COMMIT")
                    except sqlite3.Error as exc:
                        await _rollback(conn)
                        error = StorageError(f"commit failed, nothing was written: {exc}")
                        error.__cause__ = exc
                        for _w, future, _r, _s in done:
                            _fail(future, error)
                        return again
            except BaseException:
                await _rollback(conn)
                raise
            finally:
                open_signals(conn, None)
        if done:
            self.groups += 1
            merged: Signals = {}
            for _w, _f, _r, signals in done:
                merged.update(signals)
            db.committed_now(merged)
            for _w, future, result, _s in done:
                if not future.done():
                    future.set_result(result)
        return again


def _fail(future: asyncio.Future[Any], exc: BaseException) -> None:
    if future.done():
        return
    if isinstance(exc, asyncio.CancelledError):
        future.cancel()
    else:
        future.set_exception(exc)
