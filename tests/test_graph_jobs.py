"""Projection jobs on a real SQLite file with the real job runner: batches, persisted per-event progress, retries,
and a failing batch that never holds up the others."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from stratagate.capture.store import ensure_namespace, ensure_session
from stratagate.events import store as events
from stratagate.events.models import NewEvent
from stratagate.events.projection_queue import BATCH_SIZE, enqueue_projection
from stratagate.graph import projection
from stratagate.graph.projection import GraphProjector
from stratagate.jobs.queue import GRAPH_PROJECTION
from stratagate.jobs.runner import JobRunner
from stratagate.storage.db import Database

TOOLS = ["npm", "vite", "jest", "docker", "redis", "eslint", "prettier", "sqlite", "react", "ruff"]


def new_event(ns: int, sess: int, text: str) -> NewEvent:
    return NewEvent(
        namespace_id=ns,
        session_id=sess,
        origin="extraction",
        title=text,
        summary=text,
        narrative=text,
        mentioned_at="2026-05-01T10:00:00.000Z",
        fingerprint=events.fingerprint(text),
    )


async def test_batches_keep_progress_and_a_failing_batch_blocks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    db = Database(tmp_path / "memory.db")
    await db.open()
    async with db.transaction() as conn:
        ns = await ensure_namespace(conn, "proj")
        sess, _ = await ensure_session(conn, ns, "s1")
        ids = [
            (await events.insert_event(conn, new_event(ns, sess, f"The project uses {t}."), "model")).id for t in TOOLS
        ]
        jobs = await enqueue_projection(conn, ns, ids, "test")
    assert len(jobs) == 2 and len(ids) > BATCH_SIZE  # 8 + 2

    calls: Counter[int] = Counter()
    poisoned = ids[2]
    real = projection.project_event

    async def flaky(conn: Any, event: Any, actor: Any, **kw: Any) -> dict[str, Any]:
        calls[event.id] += 1
        if event.id == poisoned and calls[event.id] == 1:
            raise RuntimeError("projection exploded once")
        return await real(conn, event, actor, **kw)

    monkeypatch.setattr(projection, "project_event", flaky)
    finished: dict[str, str] = {}
    changed = asyncio.Event()

    async def notify(method: str, payload: dict[str, Any]) -> None:
        if payload["kind"] != GRAPH_PROJECTION:
            # Each finished batch queues the namespace's embedding job, which this runner has no handler for: when it
            # fails relative to the batches depends on scheduling, and it is not what this test is about.
            return
        finished.setdefault(payload["subject"], "")
        finished[payload["subject"]] += payload["status"][0]  # d(one), q(ueued again), f(ailed)
        changed.set()

    runner = JobRunner(
        db, {GRAPH_PROJECTION: GraphProjector(db)}, concurrency=1, backoff_base=0.01, backoff_cap=0.02, notify=notify
    )
    await runner.start()
    try:
        async with asyncio.timeout(30):
            while [s[-1:] for s in finished.values()].count("d") < 2:
                changed.clear()
                await changed.wait()
    finally:
        await runner.stop()

    assert finished == {"batch_1": "qd", "batch_2": "d"}  # the first batch failed once, then finished
    # Progress was kept per event: the events before the poisoned one were not projected twice.
    assert [calls[i] for i in ids] == [1, 1, 2, 1, 1, 1, 1, 1, 1, 1]
    states = await db.fetchall("SELECT state FROM graph_projection ORDER BY event_id")
    assert [r["state"] for r in states] == ["done"] * len(ids)
    facts = await db.fetchall("SELECT status FROM graph_facts")
    assert len(facts) == len(TOOLS) and {r["status"] for r in facts} == {"active"}
    await db.close()


async def test_a_job_that_requeues_itself_is_reported_queued_not_done(tmp_path: Path):
    """A handler may hand its row back to the queue (the embedding job does after a long run): jobs.changed must
    say 'queued', as the row does, not 'done'."""
    from stratagate.jobs.queue import enqueue

    db = Database(tmp_path / "memory.db")
    await db.open()
    async with db.transaction() as conn:
        ns = await ensure_namespace(conn, "proj")
        job_id = await enqueue(conn, ns, "self_requeue", 1, 3)
    runs: list[int] = []
    seen: list[str] = []
    changed = asyncio.Event()

    async def handler(job: Any) -> None:
        runs.append(job.id)
        async with db.transaction() as conn:
            await conn.execute("UPDATE jobs SET status = 'queued', next_run_at = 4e9 WHERE id = ?", (job.id,))

    async def notify(method: str, payload: dict[str, Any]) -> None:
        seen.append(payload["status"])
        changed.set()

    runner = JobRunner(db, {"self_requeue": handler}, concurrency=1, backoff_base=0.01, backoff_cap=0.02,
                       notify=notify)
    await runner.start()
    try:
        async with asyncio.timeout(30):
            await changed.wait()
    finally:
        await runner.stop()
    assert runs == [job_id] and seen == ["queued"]
    assert await db.scalar("SELECT status FROM jobs WHERE id = ?", (job_id,)) == "queued"
    await db.close()


async def test_an_event_superseded_before_its_projection_projects_a_closed_fact(tmp_path: Path):
    """Projection is its own job: when a later block's extraction supersedes an event before that event is projected,
    its fact must not come out current beside its successor's ("uses mysql" and "uses postgresql" both current)."""
    db = Database(tmp_path / "memory.db")
    await db.open()
    try:
        async with db.transaction() as conn:
            ns = await ensure_namespace(conn, "proj")
            sess, _ = await ensure_session(conn, ns, "s1")
            old = await events.insert_event(conn, new_event(ns, sess, "The project uses mysql."), "model")
            later = new_event(ns, sess, "The project uses postgresql.").model_copy(
                update={"mentioned_at": "2026-06-01T10:00:00.000Z", "type": "change"})
            new = await events.insert_event(conn, later, "model")
            await events.supersede(conn, old, new, "model")
            for ev in (new, old):  # the successor first, as when the older event's projection job runs late
                current = await events.get_event(conn, ev.id)
                await projection.project_event(conn, current, "model")
            rows = await (await conn.execute(
                "SELECT n.name, f.status, f.valid_to FROM graph_facts f JOIN graph_edges e ON e.id = f.edge_id"
                " JOIN graph_nodes n ON n.id = e.dst_id"
            )).fetchall()
        state = {r[0]: (r[1], r[2]) for r in rows}
        assert state["postgresql"] == ("active", None)
        assert state["mysql"] == ("superseded", "2026-06-01T10:00:00.000Z")
    finally:
        await db.close()
