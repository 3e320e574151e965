"""Persisted job queue: backoff, attempt cap, manual retry, and no head-of-line blocking."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from conftest import model_env, summary_arguments, turn
from stratagate.jobs.queue import backoff_seconds
from support.model_server import ScriptedModelServer, auto_tool_call, http_error, tool_call
from support.sidecar import SidecarClient


@given(st.integers(min_value=1, max_value=60), st.floats(min_value=0.01, max_value=30),
       st.floats(min_value=0.01, max_value=600))
def test_backoff_is_exponential_capped_and_jittered(attempts: int, base: float, cap: float):
    delay = backoff_seconds(attempts, base, cap)
    nominal = min(cap, base * 2 ** (attempts - 1))
    assert 0.8 * nominal - 1e-9 <= delay <= 1.2 * nominal + 1e-9


async def test_poisoned_job_never_delays_the_others(tmp_path: Path, model_server: ScriptedModelServer):
    healthy = auto_tool_call(summary_arguments)

    def decide(body: dict):
        if "POISON" in body["messages"][-1]["content"]:
            return http_error(500, "poisoned block")
        return healthy(body)

    model_server.default = decide
    env = model_env(model_server, STRATAGATE_JOB_MAX_ATTEMPTS="100", STRATAGATE_MODEL_CONCURRENCY="1")
    client = await SidecarClient.start(tmp_path / "m.db", env=env, args=["--block-turns", "1"])
    try:
        await client.call("turn.capture", turn(1, user="POISON pill"))
        for i in range(2, 6):
            await client.call("turn.capture", turn(i))
        for subject in range(2, 6):
            await client.wait_notification("jobs.changed",
                                           lambda p, s=subject: p["subject"] == f"blk_{s}" and p["status"] == "done")
        listing = await client.tool("proj", "s1", "memory_get_blocks")
        # The poisoned block is readable meanwhile, with views written by rule (issue 12: the fallback).
        assert [b["status"] for b in listing["blocks"]] == ["ready", "ready", "ready", "ready", "ready"]
        assert (await client.call("system.info"))["counts"]["block_views"] == {"model": 4, "extractive": 0,
                                                                              "fallback": 1}
        jobs = (await client.call("jobs.list", {"namespace": "proj"}))["jobs"]
        poisoned = [j for j in jobs if j["subject"] == "blk_1" and j["kind"] == "block_summary"]
        assert poisoned[0]["status"] in ("queued", "running")  # still retrying, with backoff, on its own row
        assert poisoned[0]["attempts"] >= 1 and "500" in poisoned[0]["last_error"]
        assert all(j["status"] == "done" for j in jobs if j["subject"] != "blk_1")
        # The fallback block's extraction asks the poisoned model too: it retries on its own row as well.
    finally:
        await client.close()


async def test_failed_attempts_back_off_and_stop_at_the_cap(tmp_path: Path, model_server: ScriptedModelServer):
    model_server.default = lambda body: http_error(503, "overloaded")
    env = model_env(model_server, STRATAGATE_JOB_MAX_ATTEMPTS="3")
    client = await SidecarClient.start(tmp_path / "m.db", env=env, args=["--block-turns", "1"])
    try:
        await client.call("turn.capture", turn(1))
        failed = await client.wait_notification("jobs.changed", lambda p: p["status"] == "failed"
                                                and p["kind"] == "block_summary")
        assert failed["attempts"] == 3
        assert "503" in failed["error"]
        # Only the summary job's notes: the fallback views queue an extraction job that fails on its own (issue 12).
        queued_notes = [n["params"] for n in client.notifications
                        if n["params"]["status"] == "queued" and n["params"]["kind"] == "block_summary"]
        assert [n["attempts"] for n in queued_notes] == [1, 2]
        job = failed["job"]
    finally:
        await client.close()
    import sqlite3

    conn = sqlite3.connect(tmp_path / "m.db")
    rows = conn.execute("SELECT at, after FROM audit_log WHERE action = 'job.attempt_failed' AND subject_id = ?"
                        " ORDER BY id", (job,)).fetchall()
    assert len(rows) == 2
    waits = [json.loads(after)["next_run_at"] for _, after in rows]
    assert all(w is not None for w in waits)
    assert conn.execute("SELECT COUNT(*) FROM audit_log WHERE action = 'job.failed' AND subject_id = ?",
                        (job,)).fetchone()[0] == 1
    conn.close()


async def test_retry_all_failed_jobs_of_a_namespace(tmp_path: Path, model_server: ScriptedModelServer):
    model_server.default = lambda body: http_error(400, "bad request forever")  # not retryable: fails at once
    client = await SidecarClient.start(tmp_path / "m.db", env=model_env(model_server), args=["--block-turns", "1"])
    try:
        await client.call("turn.capture", turn(1))
        await client.call("turn.capture", turn(1, namespace="other"))
        # Each namespace: the summary fails, its fallback views queue an extraction that fails too (issue 12).
        await client.wait_for(lambda: sum(1 for n in client.notifications if n["params"]["status"] == "failed") >= 4)
        healthy = auto_tool_call(summary_arguments)
        model_server.default = lambda body: (
            tool_call("stratagate_extract_events", {"events": []})
            if body["tool_choice"]["function"]["name"] == "stratagate_extract_events" else healthy(body)
        )
        retried = await client.call("jobs.retry", {"namespace": "proj"})
        assert len(retried["retried"]) == 2
        await client.wait_notification("jobs.changed", lambda p: p["status"] == "done" and p["kind"] == "block_summary")
        assert (await client.call("jobs.list", {"namespace": "other", "status": "failed"}))["jobs"]
        assert not (await client.call("jobs.list", {"namespace": "proj", "status": "failed"}))["jobs"]
    finally:
        await client.close()


async def test_a_job_claimed_but_not_started_at_stop_is_given_back(tmp_path: Path, monkeypatch) -> None:
    """stop() right after a claim cancels a job task that never ran: the row goes back to 'queued' with its attempt
    given back, not left 'running' until its lease runs out."""
    import asyncio

    from stratagate.capture.store import ensure_namespace
    from stratagate.jobs import queue
    from stratagate.jobs.runner import JobRunner
    from stratagate.storage.db import Database

    db = Database(tmp_path / "memory.db")
    await db.open()
    async with db.transaction() as conn:
        ns = await ensure_namespace(conn, "proj")
        job_id = await queue.enqueue(conn, ns, "never", 1, 20)
    claimed = asyncio.Event()
    real_claim = queue.claim_due

    async def claim_due(*args, **kw):
        jobs = await real_claim(*args, **kw)
        if jobs:
            # The test's waiter is scheduled now, before the runner creates the job's task: FIFO, so stop() runs
            # between the claim and the task's first step.
            claimed.set()
        return jobs

    ran: list[int] = []

    async def handler(job) -> None:
        ran.append(job.id)

    monkeypatch.setattr(queue, "claim_due", claim_due)
    job_runner = JobRunner(db, {"never": handler}, concurrency=1, backoff_base=0.01, backoff_cap=0.02)
    await job_runner.start()
    try:
        await claimed.wait()
        await job_runner.stop()
        row = await db.fetchone("SELECT status, attempts FROM jobs WHERE id = ?", (job_id,))
    finally:
        await db.close()
    assert ran == []
    assert row is not None and row["status"] == "queued" and row["attempts"] == 0


async def test_the_fallback_look_up_reads_only_fallback_blocks(tmp_path: Path) -> None:
    """Every model answer looks for fallback blocks to upgrade: the look-up goes through the partial index of
    fallback blocks, never through every summary job (each would read its block's row, long views included)."""
    from stratagate.blocks.upgrade import FALLBACK_JOBS
    from stratagate.storage.db import Database

    db = Database(tmp_path / "memory.db")
    await db.open()
    try:
        for namespace in (1, None):
            rows = await db.fetchall("EXPLAIN QUERY PLAN " + FALLBACK_JOBS, ("block_summary", namespace, namespace, 8))
            plan = [r["detail"] for r in rows]
            assert any("blocks_fallback" in step for step in plan), plan
            assert not any(step.startswith("SCAN j") for step in plan), plan
    finally:
        await db.close()
