"""A full disk (or the STRATAGATE_DB_MAX_MB cap) under the job runner: logged once when it starts and once when it
ends, never with a traceback, and the queue is not retried in a busy loop."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from conftest import turn
from stratagate.capture.store import ensure_namespace
from stratagate.jobs import queue, runner
from stratagate.jobs.runner import JobRunner
from stratagate.storage.db import Database
from support.sidecar import RpcFailure, SidecarClient


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _full() -> sqlite3.OperationalError:
    return sqlite3.OperationalError("database or disk is full")


async def run_until_done(db: Database, kind: str, handler: Any) -> None:
    """A job runner with fast backoff, run until a job of ``kind`` reports done (at most a minute), then stopped."""
    finished = asyncio.Event()

    async def notify(method: str, payload: dict[str, Any]) -> None:
        if payload["status"] == "done":
            finished.set()

    job_runner = JobRunner(db, {kind: handler}, concurrency=1, backoff_base=0.01, backoff_cap=0.02, notify=notify)
    await job_runner.start()
    try:
        async with asyncio.timeout(60):
            await finished.wait()
    finally:
        await job_runner.stop()


async def test_a_full_disk_is_logged_once_per_state_change_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    db = Database(tmp_path / "memory.db")
    await db.open()
    async with db.transaction() as conn:
        ns = await ensure_namespace(conn, "proj")
        job_id = await queue.enqueue(conn, ns, "disk", 1, 20)
    claims = [0]
    real_claim = queue.claim_due

    async def claim_due(*args: Any, **kw: Any) -> Any:
        claims[0] += 1
        if claims[0] <= 3:  # the queue itself cannot be written at first
            raise _full()
        return await real_claim(*args, **kw)

    monkeypatch.setattr(queue, "claim_due", claim_due)
    monkeypatch.setattr(runner, "CLAIM_RETRY_S", 0.01)
    outcomes = ["full", "full", "room", "full", "full", "done"]
    runs: list[str] = []

    async def handler(job: Any) -> None:
        outcome = outcomes[len(runs)]
        runs.append(outcome)
        if outcome == "full":
            raise _full()
        if outcome == "room":  # the work committed; the job runs once more
            async with db.transaction() as conn:
                await conn.execute("UPDATE jobs SET status = 'queued', next_run_at = 0 WHERE id = ?", (job.id,))

    records = _Records()
    jobs_log = logging.getLogger("stratagate.jobs")
    jobs_log.addHandler(records)
    previous_level = jobs_log.level
    jobs_log.setLevel(logging.DEBUG)
    try:
        await run_until_done(db, "disk", handler)
    finally:
        jobs_log.removeHandler(records)
        jobs_log.setLevel(previous_level)
        await db.close()
    assert runs == outcomes and claims[0] > 3
    said = [r.getMessage() for r in records.records]
    assert [m.split(":")[0] for m in said] == [
        "storage is full (claiming jobs)", "storage has room again", "storage is full (a disk job)",
        "storage has room again",
    ], said
    assert not any(r.exc_info for r in records.records)
    assert job_id > 0


async def test_a_sidecar_on_a_full_database_logs_it_once_without_a_traceback(tmp_path: Path):
    client = await SidecarClient.start(
        tmp_path / "m.db", env={"STRATAGATE_DB_MAX_MB": "1", "STRATAGATE_MODEL_ROUTE": "none"}, process=True
    )
    try:
        for i in range(1, 400):
            try:
                await client.call("turn.capture", turn(i, user=f"turn {i} " + "lorem ipsum dolor " * 200))
            except RpcFailure as exc:
                assert exc.code == -32010
                break
        else:
            raise AssertionError("the database never filled up")
        full_from = len(client.notifications)

        def failed_on_full() -> int:
            return sum(
                1 for n in client.notifications[full_from:]
                if n.get("method") == "jobs.changed" and "full" in str(n["params"].get("error"))
            )

        await client.wait_for(lambda: failed_on_full() >= 3, timeout=120)  # jobs keep retrying while it lasts
    finally:
        await client.close()
    logged = "".join(client.stderr_lines)
    assert "Traceback" not in logged, logged[-3000:]
    assert logged.count("storage is full") == 1, logged[-3000:]
    assert "OperationalError" not in logged.split("storage is full", 1)[1], logged[-3000:]


async def test_a_failure_that_could_not_be_written_is_written_later_and_the_job_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The disk is full when a failed attempt is recorded: the row cannot say so. Once storage allows, the runner
    writes it (the job backs off and runs again in this process), instead of leaving it 'running' until a restart."""
    db = Database(tmp_path / "memory.db")
    await db.open()
    async with db.transaction() as conn:
        ns = await ensure_namespace(conn, "proj")
        job_id = await queue.enqueue(conn, ns, "flaky", 1, 20)
    real_mark = queue.mark_failed_attempt
    marks = [0]

    async def mark_failed_attempt(*args: Any, **kw: Any) -> Any:
        marks[0] += 1
        if marks[0] <= 2:  # the first record, and its first retry, find no room
            raise _full()
        return await real_mark(*args, **kw)

    monkeypatch.setattr(queue, "mark_failed_attempt", mark_failed_attempt)
    monkeypatch.setattr(runner, "CLAIM_RETRY_S", 0.01)
    runs: list[int] = []

    async def handler(job: Any) -> None:
        runs.append(job.attempts)
        if len(runs) == 1:
            raise _full()

    try:
        await run_until_done(db, "flaky", handler)
    finally:
        row = await db.fetchone("SELECT status, attempts FROM jobs WHERE id = ?", (job_id,))
        await db.close()
    assert runs == [1, 2] and marks[0] == 3
    assert row is not None and row["attempts"] == 2  # claimed twice: the second claim needed the recorded failure
