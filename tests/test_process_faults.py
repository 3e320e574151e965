"""Process faults at start-up, with real sidecar processes: several starting together on a new database, a
database locked by another process, and captures pipelined into a sidecar that has just restarted."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import sys
import threading
from pathlib import Path

import pytest

from conftest import model_env, turn
from stratagate.capture.models import CaptureParams
from stratagate.capture.order import ArrivalOrder, Place, holding
from stratagate.capture.store import capture_turn
from stratagate.config import load_settings
from stratagate.storage.db import Database
from stratagate.storage.schema import SCHEMA_VERSION
from stratagate.tokens import count_tokens
from support.model_server import ScriptedModelServer, delay
from support.sidecar import REPO, SidecarClient

# A deadline for a hang, not a timing assertion.
HANG = 120


def sidecar_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env["PYTHONPATH"] = str(REPO / "sidecar")
    env["STRATAGATE_DENSE"] = "off"
    env.update(extra)
    return env


async def spawn(db: Path, **env: str) -> asyncio.subprocess.Process:
    """A `stratagate serve` process the test talks to by hand (SidecarClient.start waits for a ping)."""
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "stratagate", "serve", "--db", str(db),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=sidecar_env(**env), limit=64 * 1024 * 1024,
    )


# ---- concurrent starts on a new database ------------------------------------------------------------------------

ROUNDS = 3
STARTS = 4


async def test_sidecars_started_together_on_a_new_database_all_serve(tmp_path: Path) -> None:
    for round_no in range(ROUNDS):
        # Folders that do not exist yet either: every process creates them (0700) and the file (0600) at once.
        db = tmp_path / f"round{round_no}" / "stratagate" / "memory.db"
        clients = await asyncio.gather(
            *(SidecarClient.start(db, env=sidecar_env(), process=True) for _ in range(STARTS)), return_exceptions=True
        )
        try:
            started = [c for c in clients if isinstance(c, SidecarClient)]
            assert len(started) == STARTS, [c for c in clients if not isinstance(c, SidecarClient)]
            for client in started:
                assert (await client.call("system.ping"))["pong"] is True
                info = await client.call("system.info")
                assert info["schema_version"] == info["expected_schema_version"] == SCHEMA_VERSION
        finally:
            codes = await asyncio.gather(*(c.close() for c in clients if isinstance(c, SidecarClient)))
        assert codes == [0] * STARTS
        conn = sqlite3.connect(db)
        try:
            # Each migration ran exactly once, whoever won the race.
            migrated = conn.execute("SELECT COUNT(*) FROM audit_log WHERE action = 'schema.migrated'").fetchone()[0]
            keys = conn.execute("SELECT COUNT(*) FROM meta WHERE key = 'redaction_key'").fetchone()[0]
        finally:
            conn.close()
        assert migrated == SCHEMA_VERSION and keys == 1
        assert stat.S_IMODE(db.stat().st_mode) == 0o600
        assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(db.parent.parent.stat().st_mode) == 0o700


# ---- a locked database ------------------------------------------------------------------------------------------


def hold_lock(db: Path, kind: str) -> sqlite3.Connection:
    """Another process (this one) holding an exclusive lock on ``db``, as a sqlite3 shell or a backup would."""
    conn = sqlite3.connect(db, isolation_level=None)
    if kind == "exclusive-mode":
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")  # not even readers get in
    conn.execute("BEGIN EXCLUSIVE")
    if kind != "new":
        conn.execute("INSERT INTO meta(key, value) VALUES ('lock-holder', 'test')")
    return conn


async def existing_db(tmp_path: Path) -> Path:
    db = tmp_path / "memory.db"
    client = await SidecarClient.start(db, env=sidecar_env(), process=True)
    assert await client.close() == 0
    return db


LOCKS = ["new", "existing", "exclusive-mode"]


@pytest.mark.parametrize("kind", LOCKS)
async def test_a_locked_database_fails_start_up_after_the_bound_with_one_clear_line(tmp_path: Path,
                                                                                     kind: str) -> None:
    db = tmp_path / "memory.db" if kind == "new" else await existing_db(tmp_path)
    holder = hold_lock(db, kind)
    try:
        proc = await spawn(db, STRATAGATE_DB_LOCK_TIMEOUT_S="1")
        async with asyncio.timeout(HANG):
            stdout, stderr = await proc.communicate()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert proc.returncode == 2
    text = stderr.decode()
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if "cannot start" in line]
    assert len(errors) == 1, text
    assert f"the database {db} is locked by another process" in errors[0]
    assert "STRATAGATE_DB_LOCK_TIMEOUT_S" in errors[0] and "stop the program holding it" in errors[0]
    # The host hears it too, once, before the process exits.
    assert b'"method":"system.fatal"' in stdout and b"is locked by another process" in stdout


@pytest.mark.parametrize("kind", LOCKS)
async def test_start_up_proceeds_when_the_lock_is_released_within_the_bound(tmp_path: Path, kind: str) -> None:
    db = tmp_path / "memory.db" if kind == "new" else await existing_db(tmp_path)
    holder = hold_lock(db, kind)
    released = False
    proc = await spawn(db, STRATAGATE_DB_LOCK_TIMEOUT_S=str(HANG))
    try:
        assert proc.stderr is not None
        # The sidecar says it is waiting (and for how long): release the lock only then.
        async with asyncio.timeout(HANG):
            while b"waiting up to" not in (line := await proc.stderr.readline()):
                assert line, "the sidecar exited without waiting for the lock"
        assert proc.returncode is None
        holder.execute("ROLLBACK")
        holder.close()
        released = True
        client = SidecarClient(proc, None)
        assert (await client.call("system.ping", timeout=HANG))["pong"] is True
        info = await client.call("system.info")
        assert info["schema_version"] == SCHEMA_VERSION
        assert await client.close() == 0
    finally:
        if not released:
            holder.close()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


# ---- captures commit in arrival order, right after restarts -----------------------------------------------------

RESTARTS = 10
PER_RESTART = 16


async def test_captures_pipelined_into_a_restarted_sidecar_with_pending_jobs_commit_in_arrival_order(
    tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    db = tmp_path / "memory.db"
    # Two turns a block, and the model holds every call: each restart leaves block_summary jobs running or queued,
    # and the next start requeues and claims them while the captures come in.
    held = threading.Event()
    model_server.default = lambda _body: delay(HANG, until=held)
    env = model_env(model_server, STRATAGATE_BLOCK_TURNS="2")
    sent: dict[str, list[str]] = {}
    for round_no in range(RESTARTS):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "stratagate", "serve", "--db", str(db),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=sidecar_env(**env), limit=64 * 1024 * 1024,
        )
        client = SidecarClient(proc, None)
        futures = []
        # Captures go in at once, not after a ping: while the sidecar starts, its tokenizer warms up and jobs are
        # requeued. A malformed line between two captures is answered at once (-32700, no dispatch), so waiting
        # for that answer spreads the captures over the whole start-up without any sleep.
        for i in range(PER_RESTART):
            session = f"r{round_no}-{'ab'[i % 2]}"
            params = turn(i, session=session)
            sent.setdefault(session, []).append(params["receipt"])
            futures.append(await client.request("turn.capture", params))
            await client.send_line(b"{not json")
            await client.wait_for(lambda c=client, n=i + 1: len(c.orphans) >= n, timeout=HANG)
        async with asyncio.timeout(HANG):
            replies = await asyncio.gather(*futures)
        assert all("result" in r and r["result"]["duplicate"] is False for r in replies), replies
        await client.kill9()
        conn = sqlite3.connect(db)
        try:
            pending = conn.execute("SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')").fetchone()[0]
        finally:
            conn.close()
        assert pending > 0  # the next start has jobs to requeue
    held.set()
    conn = sqlite3.connect(db)
    try:
        for session, receipts in sent.items():
            stored = [r[0] for r in conn.execute(
                "SELECT t.receipt FROM turns t JOIN sessions s ON s.id = t.session_id WHERE s.key = ? ORDER BY t.seq",
                (session,))]
            assert stored == receipts, session
    finally:
        conn.close()


async def test_a_capture_that_reaches_the_writer_first_still_waits_for_the_one_that_arrived_before(
    tmp_path: Path,
) -> None:
    """The cause, reproduced in one process: capture A waits for the tokenizer; the tokenizer finishes in the same
    loop turn in which capture B's first step runs. B finds it ready and would take the writer lock before A is
    woken. With places taken at arrival, B waits for A."""
    db = Database(tmp_path / "memory.db")
    await db.open()
    settings = load_settings({"db": db.path}, environ={})
    loop = asyncio.get_running_loop()
    tokenizer: asyncio.Future[None] = loop.create_future()
    order = ArrivalOrder()

    async def capture(i: int, place: Place) -> None:
        with holding(place):
            await tokenizer  # what turn.capture awaits before it writes
            await capture_turn(db, settings, CaptureParams(**turn(i)), count_tokens)

    try:
        first = asyncio.create_task(capture(1, order.take()))
        await asyncio.sleep(0)  # one loop turn (not a timed wait): A runs up to its wait for the tokenizer
        loop.call_soon(tokenizer.set_result, None)  # completes before B's first step, wakes A after it
        second = asyncio.create_task(capture(2, order.take()))
        await asyncio.gather(first, second)
        receipts = [r["receipt"] for r in await db.fetchall("SELECT receipt FROM turns ORDER BY seq")]
    finally:
        await db.close()
    assert receipts == [turn(1)["receipt"], turn(2)["receipt"]]
