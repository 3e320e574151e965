"""The declared pipeline (jobs/pipeline.py): one place for job kinds, after-commit signals, attempts from settings,
wake-ups from another process (PRAGMA data_version) and job leases between two sidecars on one database."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import model_env, turn
from stratagate.app import App, build_runner
from stratagate.capture.store import ensure_namespace
from stratagate.config import Settings
from stratagate.jobs import lease, pipeline, queue
from stratagate.jobs.pipeline import BLOCK_SUMMARY, EMBEDDING, EVENT_EXTRACTION, GRAPH_PROJECTION, KINDS, MAINTENANCE
from stratagate.maintenance.run import Maintenance
from stratagate.search.vectors import DenseIndex
from stratagate.storage.db import Database, on_commit
from support.model_server import ScriptedModelServer, delay
from support.sidecar import SidecarClient

REPO = Path(__file__).resolve().parents[1]
SIDECAR = REPO / "sidecar" / "stratagate"


# --- one declaration ------------------------------------------------------------------------------------------------


def test_no_module_but_the_pipeline_spells_a_job_kind():
    """Adding a stage touches jobs/pipeline.py and the stage's module only: nobody else lists kinds — as a string
    constant, or quoted inside SQL. (A table may share a kind's name: graph_projection; released migrations are
    history and are not scanned.)"""
    from stratagate.storage.schema import MIGRATIONS

    tables = set(re.findall(r"CREATE (?:VIRTUAL )?TABLE (\w+)", "".join(MIGRATIONS)))
    offenders = []
    skipped = {SIDECAR / "jobs" / "pipeline.py", *(SIDECAR / "storage").glob("schema*.py")}
    for path in sorted(set(SIDECAR.rglob("*.py")) - skipped):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                hits = [
                    k for k in KINDS if (k == node.value and k not in tables) or re.search(rf"'{k}'", node.value)
                ]
                if hits:
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno} {hits}")
    assert offenders == []


def test_the_runner_handles_exactly_the_declared_stages(tmp_path: Path):
    app = App(Settings(db=tmp_path / "memory.db", dense=False))
    assert set(app.runner._handlers) == set(KINDS)
    assert set(app.runner._queues) == {s.kind for s in pipeline.STAGES if s.queue}
    for stage in pipeline.STAGES:
        assert set(stage.follow_ups) <= set(KINDS)


def test_the_docs_show_the_pipeline_as_declared():
    protocol = (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
    section = protocol.split("### Job kinds", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    listed = re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.M)
    assert listed == list(KINDS)
    architecture = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert pipeline.diagram() in architecture


# --- after-commit signals -------------------------------------------------------------------------------------------


async def test_after_commit_signals_run_once_after_commit_and_never_after_rollback(tmp_path: Path):
    db = Database(tmp_path / "memory.db")
    await db.open()
    seen: list[Any] = []
    db.listen("test.topic", seen.append)
    try:
        async with db.transaction() as conn:
            on_commit(conn, "test.topic", 7)
            on_commit(conn, "test.topic", 7)  # announced twice, told once
            on_commit(conn, "test.topic", 8)
            assert seen == []  # nothing before COMMIT
        assert seen == [7, 8]
        with pytest.raises(RuntimeError, match="boom"):
            async with db.transaction() as conn:
                on_commit(conn, "test.topic", 9)
                raise RuntimeError("boom")
        assert seen == [7, 8]
        with pytest.raises(RuntimeError, match=r"outside Database\.transaction"):
            on_commit(db.writer, "test.topic", 1)
    finally:
        await db.close()


# --- attempts from settings -----------------------------------------------------------------------------------------


async def test_the_max_attempts_setting_reaches_every_stage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Rows queued with the default limit (as the CLI queues them) get the running process's limit when claimed."""
    from stratagate.search import dense

    monkeypatch.setattr(dense, "_enabled", False)  # the embedding job then finishes at once
    settings = Settings(db=tmp_path / "memory.db", dense=False, job_max_attempts=2)
    db = Database(settings.db)
    await db.open()
    async with db.transaction() as conn:
        ns = await ensure_namespace(conn, "proj")
        for kind in (BLOCK_SUMMARY, EVENT_EXTRACTION, EMBEDDING, MAINTENANCE):
            await queue.enqueue(conn, ns, kind, 999)  # subjects that do not exist: fail (or finish) at once
        await conn.execute(
            "INSERT INTO jobs(namespace_id, kind, subject_id, status, attempts, max_attempts, next_run_at,"
            " created_at, updated_at) VALUES (?, ?, 998, 'queued', 0, 5, 0, '', '')",
            (ns, GRAPH_PROJECTION),
        )
    assert {r["max_attempts"] for r in await db.fetchall("SELECT max_attempts FROM jobs")} == {5}
    finished: set[str] = set()
    changed = asyncio.Event()

    async def notify(method: str, payload: dict[str, Any]) -> None:
        # The maintenance job runs a pass and then queues its own row again for the next interval.
        rescheduled = payload["kind"] == MAINTENANCE and payload["status"] == "queued"
        if payload["status"] in ("done", "failed") or rescheduled:
            finished.add(payload["kind"])
            changed.set()

    deps = pipeline.StageDeps(
        db=db, settings=settings, gateway=None, count=len, dense=DenseIndex(db), maintenance=Maintenance(db, settings)
    )
    runner = build_runner(db, settings, deps, notify=notify)
    await runner.start()
    try:
        async with asyncio.timeout(30):
            while finished != set(KINDS):
                changed.clear()
                await changed.wait()
    finally:
        await runner.stop()
    rows = await db.fetchall("SELECT kind, max_attempts FROM jobs")
    assert {r["kind"]: r["max_attempts"] for r in rows} == dict.fromkeys(KINDS, 2)
    await db.close()


# --- wake-ups -------------------------------------------------------------------------------------------------------


def job_notes(client: SidecarClient, kind: str, status: str) -> list[dict[str, Any]]:
    return [
        n["params"]
        for n in client.notifications
        if n["method"] == "jobs.changed" and n["params"]["kind"] == kind and n["params"]["status"] == status
    ]


async def test_a_remembered_event_is_embedded_right_after_its_commit(tmp_path: Path, model_server: ScriptedModelServer):
    client = await SidecarClient.start(tmp_path / "m.db", env=model_env(model_server, STRATAGATE_DENSE="on"))
    try:
        fact = {"text": "The project deploys with Helm charts.", "type": "decision"}
        assert (await client.tool("proj", "s1", "memory_remember", fact))["status"] == "active"
        # No search, no capture: the remember's own commit queued the embedding job and woke the runner.
        await client.wait_notification(
            "jobs.changed", lambda p: p["kind"] == EMBEDDING and p["status"] == "done", timeout=120
        )
        info = await client.call("system.info")
        assert info["dense"]["vectors"]["event"] == 1
    finally:
        await client.close()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env["PYTHONPATH"] = str(REPO / "sidecar")
    env["STRATAGATE_DENSE"] = "off"
    return subprocess.run(
        [sys.executable, "-m", "stratagate", *args], capture_output=True, text=True, env=env, timeout=120
    )


async def test_jobs_queued_by_the_import_cli_wake_the_running_sidecar(
    tmp_path: Path, model_server: ScriptedModelServer
):
    db = tmp_path / "m.db"
    client = await SidecarClient.start(db, env=model_env(model_server, STRATAGATE_JOB_WATCH_INTERVAL="0.2"))
    try:
        await client.call("system.ping")
        source = tmp_path / "mem0.json"
        source.write_text(json.dumps([{"memory": "The team uses pnpm for every package."}]), encoding="utf-8")
        done = await asyncio.to_thread(run_cli, "import", str(source), "--db", str(db), "--namespace", "proj")
        assert done.returncode == 0, done.stderr
        assert "inserted: 1" in done.stdout
        # Nothing is sent to the sidecar from here on: its data_version poll must find the import's job.
        projected = await client.wait_notification(
            "jobs.changed", lambda p: p["kind"] == GRAPH_PROJECTION and p["status"] == "done", timeout=60
        )
        assert projected["namespace"] == "proj"
        # The projection's embedding follow-up is not queued while the dense channel is off.
        kinds = [j["kind"] for j in (await client.call("jobs.list"))["jobs"]]
        assert kinds == [GRAPH_PROJECTION]
    finally:
        await client.close()


async def test_the_data_version_poll_never_breaks_a_vacuum_or_checkpoint_queued_beside_it(tmp_path: Path):
    """The poll reads on the writer connection outside the write lock. Were its statement left active between two
    calls on that connection's thread, an erase's VACUUM or checkpoint queued in between would fail ("SQL statements
    in progress", "database table is locked"): the erase flake of CI stop 18."""
    db = Database(tmp_path / "memory.db")
    await db.open()
    try:
        for _ in range(50):  # gather queues both on the connection's thread in one go, the interleaving that broke
            polled, compacted = await asyncio.gather(db.data_version(), db.compact_securely(), return_exceptions=True)
            assert isinstance(polled, int) and compacted is None, (polled, compacted)
        async with db.exclusive() as conn:
            polls = [asyncio.ensure_future(db.data_version()) for _ in range(5)]
            row = await (await conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")).fetchone()
            assert row[0] == 0  # not busy, no error: no poll held a read open across the call
            await asyncio.gather(*polls)
    finally:
        await db.close()


# --- leases ---------------------------------------------------------------------------------------------------------


def running_rows(db: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute("SELECT id, kind, status, attempts, lease_owner, heartbeat_at FROM jobs").fetchall()
        return [dict(r) for r in rows]
    finally:
        conn.close()


async def until(predicate: Any, what: str, timeout: float = 60) -> Any:  # noqa: ASYNC109
    """Poll a database-side predicate with a bounded deadline (no other process tells us when it flips)."""
    deadline = time.monotonic() + timeout
    while not (value := await asyncio.to_thread(predicate)):
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.05)
    return value


async def test_a_second_sidecar_never_requeues_live_work_but_takes_over_a_dead_owners_job(
    tmp_path: Path, model_server: ScriptedModelServer
):
    db = tmp_path / "m.db"
    env = model_env(
        model_server,
        STRATAGATE_BLOCK_TURNS="1",
        STRATAGATE_MODEL_TIMEOUT="300",  # A's attempt is held by the test, never timed out
        STRATAGATE_JOB_HEARTBEAT_INTERVAL="0.1",
        STRATAGATE_JOB_LEASE_TIMEOUT="3600",  # only a dead pid frees a lease in this test
    )
    hold = threading.Event()
    model_server.push(delay(600, until=hold))  # A's summary request waits here
    a = await SidecarClient.start(db, env=env, process=True)
    b: SidecarClient | None = None
    try:
        with model_server.gate(hold):
            await a.call("turn.capture", turn(1))  # seals a block: its block_summary job runs in A
            await asyncio.to_thread(model_server.wait_for_requests, 1, 60)
            (job,) = [r for r in running_rows(db) if r["kind"] == BLOCK_SUMMARY]
            assert job["status"] == "running" and f":{a.proc.pid}:" in job["lease_owner"]

            # Its start-up recovery ran before it answered the ping.
            b = await SidecarClient.start(db, env=env, process=True)
            # Let B's watcher sweep many times: A's heartbeat advancing twice spans several of B's 0.1 s ticks.
            first = job["heartbeat_at"]
            await until(lambda: running_rows(db)[0]["heartbeat_at"] > first, "A's heartbeat")
            second = running_rows(db)[0]["heartbeat_at"]
            await until(lambda: running_rows(db)[0]["heartbeat_at"] > second, "A's heartbeat again")
            (still,) = [r for r in running_rows(db) if r["kind"] == BLOCK_SUMMARY]
            assert still["status"] == "running" and still["attempts"] == 1
            assert still["lease_owner"] == job["lease_owner"]
            assert len(model_server.requests) == 1  # B neither re-queued nor ran it
            assert job_notes(b, BLOCK_SUMMARY, "done") == []

            await a.kill9()
            # B's watcher finds A's pid dead, re-queues the job and runs it (the scripted default answers).
            await b.wait_notification(
                "jobs.changed", lambda p: p["kind"] == BLOCK_SUMMARY and p["status"] == "done", timeout=60
            )
        assert len(model_server.requests) == 2
        (finished,) = [r for r in running_rows(db) if r["kind"] == BLOCK_SUMMARY]
        assert finished["status"] == "done" and finished["attempts"] == 2 and finished["lease_owner"] is None
    finally:
        hold.set()
        if b is not None:
            await b.close()
        await a.close()


def test_liveness_of_lease_owners():
    me = lease.this_process()
    assert lease.alive_here(me.token) is True
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    dead = lease.Owner(me.host, child.pid, me.start)
    assert lease.alive_here(dead.token) is False
    if me.start.startswith("token/"):
        pytest.skip("no /proc process identity on this platform")
    reused = lease.Owner(me.host, me.pid, me.start.rsplit("/", 1)[0] + "/1")  # our pid, another start time
    assert lease.alive_here(reused.token) is False
    assert lease.alive_here(f"another-host:{me.pid}:{me.start}") is None


async def test_a_lease_on_another_host_is_freed_only_by_a_stale_heartbeat(tmp_path: Path):
    db = Database(tmp_path / "memory.db")
    await db.open()
    async with db.transaction() as conn:
        ns = await ensure_namespace(conn, "proj")
        job_id = await queue.enqueue(conn, ns, BLOCK_SUMMARY, 1)
    now = time.time()
    (job,) = await queue.claim_due(db, 1, now, owner="another-host:42:token/ab")
    assert job.id == job_id
    assert await queue.requeue_interrupted(db, lease_timeout=60, now=now + 59) == 0
    assert await queue.get_job(db, job_id) is not None
    assert (await queue.get_job(db, job_id)).status == "running"  # type: ignore[union-attr]
    assert await queue.requeue_interrupted(db, lease_timeout=60, now=now + 61) == 1
    row = await db.fetchone("SELECT status, lease_owner, heartbeat_at FROM jobs WHERE id = ?", (job_id,))
    assert dict(row) == {"status": "queued", "lease_owner": None, "heartbeat_at": None}  # type: ignore[arg-type]
    await db.close()


# --- lost follow-ups ------------------------------------------------------------------------------------------------


async def test_a_follow_up_lost_before_it_was_queued_is_re_derived_at_start(
    tmp_path: Path, model_server: ScriptedModelServer
):
    """The crash window between a handler's commit and the runner's follow-up transaction: the extraction wrote its
    events and their projection batch, but the process died before the projection job was queued."""
    from stratagate.capture.store import ensure_session
    from stratagate.events import store as events
    from stratagate.events.models import NewEvent
    from stratagate.events.projection_queue import add_batches, recover_jobs

    path = tmp_path / "m.db"
    db = Database(path)
    await db.open()
    async with db.transaction() as conn:
        ns = await ensure_namespace(conn, "proj")
        sess, _ = await ensure_session(conn, ns, "s1")
        text = "The project uses pnpm."
        event = await events.insert_event(
            conn,
            NewEvent(namespace_id=ns, session_id=sess, origin="extraction", title=text, summary=text, narrative=text,
                     mentioned_at="2026-05-01T10:00:00.000Z", fingerprint=events.fingerprint(text)),
            "model",
        )
        (batch_id,) = await add_batches(conn, ns, [event.id], "extraction blk_1")
    assert await db.scalar("SELECT COUNT(*) FROM jobs") == 0
    await db.close()

    client = await SidecarClient.start(path, env=model_env(model_server))
    try:
        done = await client.wait_notification(
            "jobs.changed", lambda p: p["kind"] == GRAPH_PROJECTION and p["status"] == "done", timeout=60
        )
        assert done["subject"] == f"batch_{batch_id}"
    finally:
        await client.close()
    db = Database(path)
    await db.open()
    try:
        assert await recover_jobs(db, 5) == 0  # idempotent: the batch has its job now
        assert await db.scalar("SELECT state FROM graph_projection WHERE event_id = ?", (event.id,)) == "done"
    finally:
        await db.close()


async def test_a_namespace_extracts_its_blocks_in_order(tmp_path):
    """A block's extraction is not claimed while an earlier block of its namespace has its summary or extraction
    queued or running and no events admitted yet; a later block of another namespace, or one after an earlier block
    whose (fallback) events are in, is claimed at once. Nothing is claimed twice and nothing waits on a later block."""
    from stratagate.jobs.queue import claim_due, enqueue, next_due_at
    from stratagate.storage.db import Database

    db = Database(tmp_path / "m.db")
    await db.open()
    try:
        async with db.transaction() as conn:
            for ns in (1, 2):
                await conn.execute("INSERT INTO namespaces(id, name, created_at) VALUES (?, ?, '2026-01-01')",
                                   (ns, f"ns{ns}"))
                await conn.execute("INSERT INTO sessions(id, namespace_id, key, created_at) VALUES (?, ?, 's', "
                                   "'2026-01-01')", (ns, ns))
            for block, ns, seq in ((1, 1, 1), (2, 1, 2), (3, 2, 1), (4, 1, 3)):
                await conn.execute(
                    "INSERT INTO blocks(id, namespace_id, session_id, seq, first_turn, last_turn, status, sealed_at,"
                    " l5_tokens, l4, l4_tokens, l3, l3_tokens, anchor_pos) VALUES (?, ?, ?, ?, 1, 1, 'ready',"
                    " '2026-01-01', 1, 'x', 1, 'x', 1, 0)", (block, ns, ns, seq))
            await enqueue(conn, 1, BLOCK_SUMMARY, 1)  # block 1 still being summarised
            for block, ns in ((2, 1), (3, 2), (4, 1)):
                await enqueue(conn, ns, EVENT_EXTRACTION, block)
        first = await claim_due(db, 10)
        # Block 1's summary and the other namespace's block 3; blocks 2 and 4 wait for block 1.
        assert sorted((j.kind, j.subject_id) for j in first) == [(BLOCK_SUMMARY, 1), (EVENT_EXTRACTION, 3)]
        assert await next_due_at(db) is None  # the held-back jobs are not due: the runner does not spin on them
        async with db.transaction() as conn:  # block 1's events are in (rules, or a fallback), its job still retries
            await conn.execute("UPDATE blocks SET events_source = 'fallback' WHERE id = 1")
        second = await claim_due(db, 10)
        assert [(j.kind, j.subject_id) for j in second] == [(EVENT_EXTRACTION, 2)]  # block 4 waits for block 2
        async with db.transaction() as conn:
            await conn.execute("UPDATE jobs SET status = 'done' WHERE kind = ? AND subject_id = 2", (EVENT_EXTRACTION,))
        assert [(j.kind, j.subject_id) for j in await claim_due(db, 10)] == [(EVENT_EXTRACTION, 4)]
    finally:
        await db.close()
