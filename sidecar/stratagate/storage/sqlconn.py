"""An asyncio SQLite connection that runs short statements on the event loop and only what can block in a thread.

aiosqlite hands every call to the connection's thread: 0.08-0.1 ms of hand-off per statement, most of a capture's
19 statements. Here a statement runs inline (10-30 us) unless it can block, and then it runs on the connection's own
worker thread (one per connection, FIFO):

- ``BEGIN IMMEDIATE``/``EXCLUSIVE`` is tried inline without waiting (busy_timeout 0); when another process holds
  the lock it is retried in the thread with the connection's normal busy timeout: the loop never waits on a lock.
- ``COMMIT`` (fsync, auto-checkpoint), VACUUM, checkpoints, ``PRAGMA optimize``/``journal_mode``, scripts, and a
  write outside a transaction (an implicit commit) run in the thread; so does everything while ``offload`` is set
  (``Database.exclusive()``).
- While a thread step is queued or running, later statements queue behind it in the thread: order is kept and two
  threads never use one sqlite3 handle at once.
- With ``read_budget_s`` (the reader, ``query_only``: every statement is a read), an inline statement that runs
  longer is interrupted and re-run in the thread (safe for reads only: SQLite rolls back a whole transaction whose
  write is interrupted).
- A statement text that once took longer than ``SLOW_S`` inline goes to the thread from then on.
- Rows are fetched where the statement ran and its sqlite3 cursor closed there (see ``Cursor``).
- A run of inline statements yields to the loop every ``YIELD_S``, so many small statements never stall it.

The surface is the part of aiosqlite's the code uses: ``await conn.execute(...)`` gives a cursor with async
``fetchone``/``fetchall``/``fetchmany``/``close`` and ``lastrowid``/``rowcount``; ``execute_fetchall``,
``executemany``, ``executescript``, ``in_transaction``, ``total_changes``, ``row_factory``, ``close``.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

SLOW_S = 0.005
"""An inline statement that took longer ``SLOW_STRIKES`` times in a row is run in the thread from then on (it would
stall the loop again). In a row: on a busy machine a preempted statement looks slow once."""
SLOW_STRIKES = 2
YIELD_S = 0.002
"""A run of inline statements gives the loop a turn after this long."""
PROGRESS_OPS = 2000
"""SQLite VM steps between two budget checks of an inline read (a check costs ~0.1 us)."""

INLINE, THREAD, BEGIN_LOCK = "inline", "thread", "begin"

_THREADED = re.compile(
    r"\s*(COMMIT|END|VACUUM|ANALYZE|REINDEX|ATTACH|DETACH"
    r"|PRAGMA\s+(main\.)?(wal_checkpoint|optimize|journal_mode|integrity_check|quick_check|incremental_vacuum))\b",
    re.IGNORECASE,
)
_BEGIN_LOCK = re.compile(r"\s*BEGIN\s+(IMMEDIATE|EXCLUSIVE)\b", re.IGNORECASE)
_READ = re.compile(r"\s*(SELECT|VALUES|EXPLAIN|PRAGMA\s+[\w.]+\s*(\(\s*[\w.]*\s*\))?\s*;?\s*$)", re.IGNORECASE)


@lru_cache(maxsize=4096)
def _kind(sql: str) -> str:
    if _BEGIN_LOCK.match(sql):
        return BEGIN_LOCK
    if _THREADED.match(sql):
        return THREAD
    return INLINE


@lru_cache(maxsize=4096)
def _is_read(sql: str) -> bool:
    return bool(_READ.match(sql))


def _interrupted(exc: sqlite3.Error) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and "interrupt" in str(exc).lower()


def _lock_error(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


class Cursor:
    """The result of ``execute``: its rows, fetched where the statement ran, and its lastrowid/rowcount.

    No sqlite3 cursor outlives the step that ran it: a live cursor freed later on another thread (by reference
    counting or the cycle collector) resets its statement while the worker uses the connection, and that clobbers the
    connection's error code mid-call (seen as "SystemError: ... returned NULL without setting an exception" when a
    lock wait failed at start-up)."""

    def __init__(self, rows: list[Any], lastrowid: int | None = None, rowcount: int = -1):
        self._rows = rows
        self._pos = 0
        self.lastrowid = lastrowid
        self.rowcount = rowcount

    async def fetchone(self) -> Any:
        if self._pos >= len(self._rows):
            return None
        self._pos += 1
        return self._rows[self._pos - 1]

    async def fetchall(self) -> list[Any]:
        rest, self._pos = self._rows[self._pos :], len(self._rows)
        return rest

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        end = self._pos + (size or 1)
        chunk, self._pos = self._rows[self._pos : end], min(end, len(self._rows))
        return chunk

    async def close(self) -> None:
        self._rows, self._pos = [], 0

    async def __aenter__(self) -> Cursor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class ReadCursor(Protocol):
    async def fetchone(self) -> Any: ...

    async def fetchall(self) -> Iterable[Any]: ...


class ReadConnection(Protocol):
    """What a read needs of a connection. ``Connection`` has it, and so has an aiosqlite connection: the CLI's
    `stratagate stats` and maintenance dry run read through a read-only aiosqlite one (safe while a sidecar runs)."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Awaitable[ReadCursor]: ...

    def execute_fetchall(self, sql: str, parameters: Any = ..., /) -> Awaitable[Iterable[Any]]: ...


def _drained(cursor: sqlite3.Cursor) -> Cursor:
    """Fetch everything and close the sqlite3 cursor, on the thread that ran the statement."""
    try:
        rows = cursor.fetchall()
        return Cursor(rows, cursor.lastrowid, cursor.rowcount)
    finally:
        cursor.close()


class Connection:
    def __init__(self, raw: sqlite3.Connection, thread: ThreadPoolExecutor, read_budget_s: float | None = None):
        self._raw = raw
        self._thread = thread
        # Thread steps handed out (by the loop) and finished (by the worker): while they differ, queue behind them.
        # Counters, not the futures: a finished future holds its result (a cursor), which keeps a statement active.
        self._submitted = 0
        self._finished = 0
        self._slow: set[str] = set()
        self._strikes: dict[str, int] = {}
        self._yielded = time.perf_counter()
        self.offload = False
        """Run every statement in the thread (``Database.exclusive()``: VACUUM, checkpoints, merges)."""
        self.signals: dict[tuple[str, Hashable], None] | None = None
        """What ``storage.db.on_commit`` announced in the transaction open on this connection (None outside one)."""
        self.caches: dict[str, Any] = {}
        """What the layers above remember per connection (keyed by their module: event term counts, dense matrices);
        it goes with the connection."""
        self.read_budget_s = read_budget_s
        self._deadline = 0.0  # of the inline read running now (0: none; the progress handler lets it run)
        if read_budget_s is not None:
            raw.set_progress_handler(self._over_budget, PROGRESS_OPS)

    @classmethod
    async def connect(cls, path: str, name: str, read_budget_s: float | None = None) -> Connection:
        thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"sqlite-{name}")
        # Opened on its own worker thread (opening reads the file). check_same_thread=False: the loop thread and the
        # worker share the handle, never at once (see _inline_ok).
        try:
            raw = await asyncio.wrap_future(
                thread.submit(sqlite3.connect, path, isolation_level=None, check_same_thread=False)
            )
        except BaseException:
            thread.shutdown(wait=False)
            raise
        return cls(raw, thread, read_budget_s)

    # --- what the code reads off the connection ------------------------------------------------------------------

    @property
    def row_factory(self) -> Any:
        return self._raw.row_factory

    @row_factory.setter
    def row_factory(self, factory: Any) -> None:
        self._raw.row_factory = factory

    @property
    def in_transaction(self) -> bool:
        return self._raw.in_transaction

    @property
    def total_changes(self) -> int:
        return self._raw.total_changes

    # --- running -------------------------------------------------------------------------------------------------

    def _over_budget(self) -> int:
        return 1 if self._deadline and time.perf_counter() > self._deadline else 0

    def _inline_ok(self, sql: str | None = None) -> bool:
        if self.offload or self._finished != self._submitted:
            return False
        return sql is None or sql not in self._slow

    async def _in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        def step() -> T:
            try:
                return fn(*args)
            finally:
                self._finished += 1  # only the worker writes it

        self._submitted += 1
        future = self._thread.submit(step)
        try:
            return await asyncio.wrap_future(future)
        finally:
            self._yielded = time.perf_counter()  # we were suspended: the loop had its turn

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(raw sqlite3 connection)`` in this connection's thread (a heavy read, a backup)."""
        return await self._in_thread(fn, self._raw)

    async def _give_turn(self) -> None:
        if time.perf_counter() - self._yielded > YIELD_S:
            await asyncio.sleep(0)
            self._yielded = time.perf_counter()

    def _route(self, sql: str) -> str:
        kind = _kind(sql)
        if kind == INLINE and self.read_budget_s is None and not self._raw.in_transaction and not _is_read(sql):
            return THREAD  # an autocommit write takes the lock and commits (fsync)
        if kind == INLINE and not self._inline_ok(sql):
            return THREAD
        return kind

    def _timed(self, sql: str, fn: Callable[[], T]) -> T:
        """Run inline; with a read budget, interrupt at the deadline (sqlite3.OperationalError 'interrupted').
        Wall time (thread CPU time would be better, but clock_gettime(THREAD_CPUTIME) is a slow syscall here)."""
        start = time.perf_counter()
        if self.read_budget_s is not None:
            self._deadline = start + self.read_budget_s
        try:
            result = fn()
        finally:
            self._deadline = 0.0
        # Only a statement that finished counts here: an interrupted read (stopped at its 4 ms budget, under SLOW_S)
        # is struck by _inline_read, and clearing its strike here would keep it inline for ever.
        if time.perf_counter() - start > SLOW_S:
            self._strike(sql)
        elif self._strikes:
            self._strikes.pop(sql, None)
        return result

    def _strike(self, sql: str) -> None:
        if len(self._strikes) > 4096:  # SQL texts built with values inside: keep the memory bounded
            self._strikes.clear()
        strikes = self._strikes[sql] = self._strikes.get(sql, 0) + 1
        if strikes >= SLOW_STRIKES:
            self._slow.add(sql)

    async def _inline_read(self, sql: str, fn: Callable[[], T]) -> tuple[bool, T | None]:
        """(True, result), or (False, None) when the read ran over its budget: then re-run it in the thread."""
        try:
            return True, self._timed(sql, fn)
        except sqlite3.OperationalError as exc:
            if self.read_budget_s is None or not _interrupted(exc):
                raise
            self._strike(sql)
            return False, None

    async def execute(self, sql: str, parameters: Sequence[Any] | dict[str, Any] = ()) -> Cursor:
        await self._give_turn()  # before routing: another task may queue a thread step meanwhile
        kind = self._route(sql)
        if kind == BEGIN_LOCK:
            await self._begin(sql)
            return Cursor([])
        if kind == THREAD:
            return await self._in_thread(lambda: _drained(self._raw.execute(sql, parameters)))
        if self.read_budget_s is not None:  # the reader: fetch at once, so the budget covers the whole read
            done, rows = await self._inline_read(sql, lambda: _drained(self._raw.execute(sql, parameters))._rows)
            if done:
                return Cursor(rows or [])
            return await self._in_thread(lambda: _drained(self._raw.execute(sql, parameters)))
        return self._timed(sql, lambda: _drained(self._raw.execute(sql, parameters)))

    async def execute_fetchall(self, sql: str, parameters: Sequence[Any] | dict[str, Any] = ()) -> list[Any]:
        await self._give_turn()
        kind = self._route(sql)
        if kind == BEGIN_LOCK:
            await self._begin(sql)
            return []
        if kind == INLINE:
            done, rows = await self._inline_read(sql, lambda: _drained(self._raw.execute(sql, parameters))._rows)
            if done:
                return rows or []
        return await self._in_thread(lambda: _drained(self._raw.execute(sql, parameters))._rows)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Cursor:
        await self._give_turn()
        if self._route(sql) == INLINE:
            return self._timed(sql, lambda: _drained(self._raw.executemany(sql, rows)))
        return await self._in_thread(lambda: _drained(self._raw.executemany(sql, rows)))

    async def executescript(self, script: str) -> Cursor:
        return await self._in_thread(lambda: _drained(self._raw.executescript(script)))

    async def _begin(self, sql: str) -> None:
        """Take the write lock without waiting on the loop; wait for another process's lock in the thread."""
        if self._inline_ok():
            raw = self._raw
            busy_ms = int(_drained(raw.execute("PRAGMA busy_timeout"))._rows[0][0])
            raw.execute("PRAGMA busy_timeout = 0")
            try:
                raw.execute(sql)
                return
            except sqlite3.OperationalError as exc:
                if not _lock_error(exc) or busy_ms == 0:
                    raise
            finally:
                raw.execute(f"PRAGMA busy_timeout = {busy_ms}")
        await self._in_thread(self._raw.execute, sql)

    async def close(self) -> None:
        try:
            await self._in_thread(self._raw.close)
        finally:
            self._thread.shutdown(wait=False)
