"""Nothing lost: kill -9 in the middle of a stream of captures, restart, re-send what was not acknowledged."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from conftest import model_env, turn
from support.model_server import ScriptedModelServer
from support.sidecar import SidecarClient

TOTAL = 150


async def test_kill9_mid_stream_then_resend_stores_each_turn_exactly_once(tmp_path: Path,
                                                                         model_server: ScriptedModelServer):
    db = tmp_path / "memory.db"
    env = model_env(model_server)
    client = await SidecarClient.start(db, env=env, process=True)
    futures = {}
    for i in range(1, TOTAL + 1):
        futures[i] = await client.request("turn.capture", turn(i, tools=[
            {"name": "bash", "arguments": {"command": f"echo {i}"}, "result": f"{i}\n"}]))
    # Kill once a good part of the stream has been acknowledged, while the rest is still in flight.
    await client.wait_for(lambda: sum(f.done() for f in futures.values()) >= TOTAL // 3, timeout=60)
    await client.kill9()
    acknowledged = {i for i, f in futures.items() if f.done() and not f.exception() and "result" in f.result()}
    assert 0 < len(acknowledged) < TOTAL

    client = await SidecarClient.start(db, env=env, process=True)
    try:
        resent = {}
        for i in range(1, TOTAL + 1):
            if i not in acknowledged:
                resent[i] = await client.call("turn.capture", turn(i, tools=[
                    {"name": "bash", "arguments": {"command": f"echo {i}"}, "result": f"{i}\n"}]))
        # Some turns may have been durable but unacknowledged: they come back as duplicates, not twice.
        assert all(r["duplicate"] in (True, False) for r in resent.values())
        info = await client.call("system.info")
        assert info["counts"]["turns"] == TOTAL
        assert info["counts"]["messages"] == TOTAL * 3
        listing = await client.tool("proj", "s1", "memory_get_blocks")
        assert len(listing["blocks"]) == TOTAL // 6 and listing["open_turns"] == TOTAL % 6
        for block in listing["blocks"]:
            first, last = block["turns"]
            assert last - first == 5
    finally:
        await client.close()

    conn = sqlite3.connect(db)
    receipts = [r[0] for r in conn.execute("SELECT receipt FROM turns ORDER BY seq")]
    assert len(receipts) == len(set(receipts)) == TOTAL
    # Each turn's words are stored once, with its own tool record.
    rows = conn.execute("SELECT content FROM messages WHERE role = 'user'").fetchall()
    assert sorted(r[0] for r in rows) == sorted(turn(i)["user"] for i in range(1, TOTAL + 1))
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


async def test_job_running_when_the_process_died_runs_again(tmp_path: Path, model_server: ScriptedModelServer):
    import threading

    from conftest import summary_arguments
    from support.model_server import auto_tool_call, delay

    hold = threading.Event()
    with model_server.gate(hold):
        model_server.push(delay(60, until=hold))
        db = tmp_path / "memory.db"
        env = model_env(model_server)
        client = await SidecarClient.start(db, env=env, args=["--block-turns", "1"], process=True)
        await client.call("turn.capture", turn(1))
        await asyncio.to_thread(model_server.wait_for_in_flight, 1, 30)
        running = await client.call("jobs.list", {"status": "running"})
        assert len(running["jobs"]) == 1
        await client.kill9()
        hold.set()
    model_server.default = auto_tool_call(summary_arguments)
    client = await SidecarClient.start(db, env=env, args=["--block-turns", "1"], process=True)
    try:
        done = await client.wait_notification("jobs.changed", lambda p: p["status"] == "done")
        assert done["attempts"] == 2  # the interrupted attempt counts, the job was not lost
        listing = await client.tool("proj", "s1", "memory_get_blocks")
        assert listing["blocks"][0]["status"] == "ready"
    finally:
        await client.close()


async def test_full_database_refuses_the_turn_clearly_and_keeps_everything_else(tmp_path: Path):
    """SQLITE_FULL (a full disk, or the STRATAGATE_DB_MAX_MB cap) rejects one capture, loses nothing."""
    from support.sidecar import RpcFailure

    client = await SidecarClient.start(tmp_path / "m.db", env={"STRATAGATE_DB_MAX_MB": "1"}, process=True)
    try:
        stored = 0
        failure = None
        for i in range(1, 400):
            try:
                await client.call("turn.capture", turn(i, user=f"turn {i} " + "lorem ipsum dolor " * 200))
                stored += 1
            except RpcFailure as exc:
                failure = exc
                break
        assert failure is not None and stored > 0
        assert failure.code == -32010
        assert "NOT stored" in failure.message and "full" in failure.message
        assert "same receipt" in failure.message
        # Still serving; what was stored is intact and readable.
        info = await client.call("system.info")
        assert info["counts"]["turns"] == stored
        hits = await client.tool("proj", "s1", "memory_search_raw", {"query": "lorem", "limit": 50})
        assert len(hits["hits"]) == min(50, stored)
    finally:
        await client.close()


async def test_job_cut_off_by_a_clean_shutdown_gets_its_attempt_back(tmp_path: Path, model_server: ScriptedModelServer):
    import threading

    from conftest import summary_arguments
    from support.model_server import auto_tool_call, delay

    hold = threading.Event()
    db = tmp_path / "memory.db"
    env = model_env(model_server)
    with model_server.gate(hold):
        model_server.push(delay(60, until=hold))
        client = await SidecarClient.start(db, env=env, args=["--block-turns", "1"], process=True)
        await client.call("turn.capture", turn(1))
        await asyncio.to_thread(model_server.wait_for_in_flight, 1, 30)
        assert await client.close() == 0  # system.shutdown while the summary call is in flight
        hold.set()
    jobs = sqlite3.connect(db).execute("SELECT status, attempts FROM jobs").fetchall()
    assert jobs == [("queued", 0)]
    model_server.default = auto_tool_call(summary_arguments)
    client = await SidecarClient.start(db, env=env, args=["--block-turns", "1"], process=True)
    try:
        done = await client.wait_notification("jobs.changed", lambda p: p["status"] == "done")
        assert done["attempts"] == 1
    finally:
        await client.close()
