"""Sealing a session's open tail: the last turns that do not fill a block become one short block when the session
goes idle, when DSH closes it, and when the sidecar shuts down, so every turn reaches a summary and events.

- Idle: ``TailSealer.sweep(now)`` seals every session whose newest open turn was captured before ``now`` minus
  ``session_idle_minutes``. The sweep reads the partial index ``turns_unsealed`` (open turns only: a few per live
  session), runs at start (tails that went idle while the sidecar was down) and then every minute or so; the clock
  is injectable and ``session.seal_idle`` takes ``now``, so nothing in a test waits for wall-clock time.
- Close: ``session.close`` seals that session's tail at once.
- Shutdown: the tails of the sessions this process captured into, within a time budget; a tail left over (budget
  spent, process killed) is still open in the database and the next start's sweep seals it once it is idle.

Each session is sealed in its own write (the group committer, in order with captures) that re-reads its open turns:
a turn is sealed once whoever gets there first, and a turn captured after a seal starts the session's next block.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from stratagate.blocks.seal import seal
from stratagate.config import Settings
from stratagate.storage.db import Database, StorageError
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import to_iso

log = logging.getLogger("stratagate.tails")

SWEEP_BATCH = 64
"""Sessions read per sweep query (the sweep repeats until a query returns fewer)."""
SWEEP_EVERY_S = 60.0
"""Longest time between two sweeps (shorter when the idle time is shorter)."""
SHUTDOWN_BUDGET_S = 1.0
"""Time shutdown spends sealing tails; what is left stays open and is sealed after the next start."""

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


IDLE_SQL = (
    "SELECT session_id FROM turns WHERE block_id IS NULL AND session_id > ?"
    " GROUP BY session_id HAVING MAX(captured_at) < ? ORDER BY session_id LIMIT ?"
)
"""Sessions with open turns whose newest was captured before a time: a covering scan of the partial index
``turns_unsealed`` (open turns only), never of ``turns``."""


async def idle_sessions(conn: Connection, before: str, limit: int, after: int = 0) -> list[int]:
    """Sessions (id > ``after``) with open turns, the newest captured before ``before``."""
    rows = await conn.execute_fetchall(IDLE_SQL, (after, before, limit))
    return [int(r[0]) for r in rows]


async def seal_session(
    conn: Connection, session_id: int, settings: Settings, count: Callable[[str], int], reason: str,
    before: str | None = None,
) -> list[int]:
    """Seal the session's open turns (inside the caller's transaction); with ``before``, only if its newest open turn
    is still older than that (a turn captured since the sweep read the index keeps the tail open)."""
    row = await (
        await conn.execute(
            "SELECT s.namespace_id, MAX(t.captured_at) FROM sessions s JOIN turns t ON t.session_id = s.id"
            " WHERE s.id = ? AND t.block_id IS NULL",
            (session_id,),
        )
    ).fetchone()
    if row is None or row[1] is None or (before is not None and row[1] >= before):
        return []
    return await seal(
        conn, int(row[0]), session_id, settings.block_turns, count, settings.job_max_attempts, tail_reason=reason
    )


class TailSealer:
    """Seals open tails for the App: the idle sweep (and its loop), session close and shutdown."""

    def __init__(self, db: Database, settings: Settings, count: Callable[[str], int], clock: Clock = utc_now):
        self.db = db
        self.settings = settings
        self.count = count
        self.clock = clock
        self.touched: set[int] = set()
        """Sessions this process captured a turn into: the ones shutdown seals."""
        self._storage_failing = False

    def _failed(self, exc: Exception, what: str) -> None:
        """A seal that could not be written leaves its turns open (sealed by a later sweep or the next start). Storage
        trouble (a full disk, the size cap) is said once, in one line, until a sweep succeeds again."""
        if isinstance(exc, sqlite3.Error | StorageError):
            if not self._storage_failing:
                log.warning("%s: %s; the open turns stay open and are sealed later", what, exc)
            self._storage_failing = True
        else:
            log.exception("%s failed", what)

    def captured(self, session_id: object) -> None:
        """After-commit listener of captured turns (``TURN_CAPTURED``: the session id)."""
        if isinstance(session_id, int):
            self.touched.add(session_id)

    def _submit(self, session_id: int, reason: str, before: str | None = None) -> asyncio.Future[list[int]]:
        async def work(conn: Connection) -> list[int]:
            return await seal_session(conn, session_id, self.settings, self.count, reason, before)

        return self.db.group.submit(work)

    async def _seal(self, session_id: int, reason: str, before: str | None = None) -> list[int]:
        return await self._submit(session_id, reason, before)

    async def close(self, session_id: int) -> list[int]:
        """DSH closed the session: seal its tail now."""
        self.touched.discard(session_id)
        return await self._seal(session_id, "close")

    async def sweep(self, now: datetime | None = None) -> list[int]:
        """Seal every tail idle since before ``now`` (default: the clock) minus the idle time; the new block keys.
        An idle time of 0 turns idle sealing off."""
        minutes = self.settings.session_idle_minutes
        if minutes <= 0:
            return []
        before = to_iso((now or self.clock()) - timedelta(minutes=minutes))
        sealed: list[int] = []
        after = 0
        while True:
            batch = await idle_sessions(self.db.reader, before, SWEEP_BATCH, after)
            # Submitted together: the group committer writes them in one transaction (one fsync), each in its own
            # savepoint, so a first start after many idle sessions costs little.
            results = await asyncio.gather(*(self._submit(s, "idle", before) for s in batch), return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException):
                    raise result
                sealed += result
            if len(batch) < SWEEP_BATCH:
                return sealed
            after = batch[-1]

    async def run(self) -> None:
        """Sweep at start, then every minute or so (a quarter of the idle time when that is shorter)."""
        while True:
            try:
                sealed = await self.sweep()
                self._storage_failing = False
                if sealed:
                    log.info("sealed %d idle session tail(s)", len(sealed))
            except Exception as exc:  # the next sweep tries again; nothing is lost, the turns stay open
                self._failed(exc, "sealing idle session tails")
            minutes = self.settings.session_idle_minutes
            await asyncio.sleep(min(SWEEP_EVERY_S, max(1.0, minutes * 15.0)) if minutes > 0 else SWEEP_EVERY_S)

    async def at_shutdown(self, budget_s: float = SHUTDOWN_BUDGET_S) -> int:
        """Seal the tails of the sessions this process captured into, one write each, while ``budget_s`` lasts;
        return how many sessions are left open (sealed after the next start). A write already running is waited
        for (it is short: fewer turns than a block) up to a hard cap; a write not started yet is dropped."""
        pending = sorted(self.touched)
        deadline = time.monotonic() + budget_s
        while pending and time.monotonic() < deadline:
            write = self._submit(pending[0], "shutdown")
            try:
                await asyncio.wait_for(asyncio.shield(write), timeout=deadline - time.monotonic() + budget_s)
            except TimeoutError:
                write.cancel()
                break
            except Exception as exc:  # the turns stay open: the next start seals them
                self._failed(exc, "sealing session tails at shutdown")
                break
            self.touched.discard(pending.pop(0))
        if pending:
            log.info("%d session tail(s) left open at shutdown (sealed after the next start)", len(pending))
        return len(pending)
