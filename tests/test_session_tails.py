"""A session's open tail (the last turns that do not fill a block) is sealed as a short block when the session goes
idle, when DSH closes it, and at shutdown; a sidecar killed meanwhile seals it after its next start. Real sidecars
(in this process, or a child for the kill), real SQLite files; time is the sweep's ``now``, never a sleep."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import tempfile
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import model_env, turn
from stratagate.blocks.tail import IDLE_SQL, SWEEP_BATCH, TailSealer
from stratagate.capture.models import CaptureParams
from stratagate.capture.store import capture_turn
from stratagate.config import Settings
from stratagate.storage.db import TURN_CAPTURED, Database
from support.model_server import ScriptedModelServer
from support.sidecar import SidecarClient
from test_events_extraction import EXTRACT, Script, draft, user_msg

ZERO = {"STRATAGATE_MODEL_ROUTE": "none", "STRATAGATE_DENSE": "off"}
# Six ordinary turns fill the first block; the tail carries the session's conclusion.
TAIL = [
    ("Let's switch the package manager to pnpm.", "Okay, I'll switch to pnpm and update the lockfile."),
    ("We need to finish the prototype next week.", "Got it, the prototype is due next week."),
    ("Never push directly to main.", "Understood: no direct pushes to main."),
    ("I prefer two-space indentation.", "Noted, two spaces."),
    ("ok", "Anything else?"),
]


def later(minutes: float) -> str:
    return (datetime.now(UTC) + timedelta(minutes=minutes)).isoformat()


async def capture_session(client: SidecarClient, tail: int, session: str = "s1") -> list[str]:
    sealed: list[str] = []
    for i in range(1, 7 + tail):
        extra = {}
        if i > 6:
            user, assistant = TAIL[i - 7]
            extra = {"user": user, "assistant": assistant}
        sealed += (await client.call("turn.capture", turn(i, session=session, **extra)))["sealed_block_ids"]
    return sealed


async def blocks(client: SidecarClient, session: str = "s1") -> dict[str, Any]:
    return await client.tool("proj", session, "memory_get_blocks")


async def job_done(client: SidecarClient, kind: str, block: str) -> None:
    await client.wait_notification(
        "jobs.changed", lambda p: p["kind"] == kind and p["subject"] == block and p["status"] == "done"
    )


def db_rows(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql, args).fetchall()


@pytest.mark.parametrize("tail", [2, 3, 4, 5])
async def test_idle_tail_reaches_summary_and_events_by_rule(tmp_path: Path, tail: int):
    client = await SidecarClient.start(tmp_path / "m.db", env=ZERO)
    try:
        (first,) = await capture_session(client, tail)
        assert (await blocks(client))["open_turns"] == tail
        # Idle for less than the default ten minutes: nothing is sealed.
        assert (await client.call("session.seal_idle", {"now": later(9)}))["sealed_block_ids"] == []
        assert (await blocks(client))["open_turns"] == tail
        (last,) = (await client.call("session.seal_idle", {"now": later(11)}))["sealed_block_ids"]
        # Idempotent: a second sweep finds nothing open.
        assert (await client.call("session.seal_idle", {"now": later(60)}))["sealed_block_ids"] == []
        await job_done(client, "block_summary", last)
        await job_done(client, "event_extraction", last)
        listing = await blocks(client)
        assert [b["turns"] for b in listing["blocks"]] == [[1, 6], [7, 6 + tail]]
        assert listing["open_turns"] == 0
        summary = await client.tool("proj", "s1", "memory_expand_block", {"id": last, "level": 1})
        assert summary["status"] == "ready" and "pnpm" in summary["view"]
        assert first != last
    finally:
        await client.close()
    (events,) = db_rows(tmp_path / "m.db", "SELECT COUNT(*) FROM events e JOIN blocks b ON b.id = e.block_id"
                                          " WHERE b.first_turn = 7")
    assert events[0] >= 1  # the switch to pnpm, at least, became an event of the tail block
    sealed = db_rows(tmp_path / "m.db", "SELECT after FROM audit_log WHERE action = 'block.sealed' ORDER BY id")
    assert [json.loads(a).get("tail") for (a,) in sealed] == [None, "idle"]


async def test_idle_tail_reaches_the_model_summary_and_extracted_events(tmp_path: Path,
                                                                        model_server: ScriptedModelServer):
    script = Script()
    model_server.default = script
    client = await SidecarClient.start(tmp_path / "m.db", env=model_env(model_server))
    try:
        (first,) = await capture_session(client, 3)
        await job_done(client, "event_extraction", first)  # the first block's extraction: no events
        script.answers.append(lambda p: {"events": [draft(
            "The repository switched from npm to pnpm.", user_msg(p), title="Switch to pnpm", type="change",
            quotes=["switch the package manager to pnpm"])]})
        (last,) = (await client.call("session.seal_idle", {"now": later(11)}))["sealed_block_ids"]
        await job_done(client, "event_extraction", last)
        hits = (await client.tool("proj", "s1", "memory_search_events", {"query": "pnpm"}))["hits"]
        (hit,) = [h for h in hits if h["title"] == "Switch to pnpm"]
        assert (await client.tool("proj", "s1", "memory_expand_event", {"id": hit["id"]}))["block_id"] == last
        view = await client.tool("proj", "s1", "memory_expand_block", {"id": last, "level": 0})
        assert view["status"] == "ready" and view["view"].startswith("Turns 7–9")
        # The model saw the tail's turns, and only them.
        assert [m["text"] for m in script.payloads[-1]["messages"] if m["role"] == "user"] == [u for u, _ in TAIL[:3]]
    finally:
        await client.close()
    assert EXTRACT in {r["tool_choice"]["function"]["name"] for r in model_server.requests}


async def test_close_seals_the_tail_and_later_turns_start_a_new_block(tmp_path: Path):
    client = await SidecarClient.start(tmp_path / "m.db", env=ZERO)
    try:
        for i in (1, 2, 3):
            await client.call("turn.capture", turn(i))
        await client.call("turn.capture", turn(1, session="s2"))
        assert (await client.call("session.close", {"namespace": "proj", "session": "nobody"})) == {
            "sealed_block_ids": []}
        (tail,) = (await client.call("session.close", {"namespace": "proj", "session": "s1"}))["sealed_block_ids"]
        assert (await client.call("session.close", {"namespace": "proj", "session": "s1"}))["sealed_block_ids"] == []
        assert (await blocks(client, "s2"))["open_turns"] == 1  # another session's tail stays open
        # A re-sent turn (same receipt) is a duplicate: it reopens nothing.
        again = await client.call("turn.capture", turn(3))
        assert again["duplicate"] and (await blocks(client))["open_turns"] == 0
        # The session goes on: its next turns start a new block, full at six turns.
        sealed = []
        for i in range(4, 10):
            sealed += (await client.call("turn.capture", turn(i)))["sealed_block_ids"]
        listing = await blocks(client)
        assert [b["turns"] for b in listing["blocks"]] == [[1, 3], [4, 9]]
        assert [b["id"] for b in listing["blocks"]] == [tail, *sealed]
        await job_done(client, "block_summary", tail)
    finally:
        await client.close()


async def test_a_short_block_decays_like_any_other(tmp_path: Path):
    client = await SidecarClient.start(tmp_path / "m.db", env=ZERO)
    try:
        await capture_session(client, 2)  # turns 1–6 (full), 7–8 (the tail)
        await client.call("session.seal_idle", {"now": later(11)})
        for i in range(9, 15):
            await client.call("turn.capture", turn(i))
        await client.settled()
        listing = await blocks(client)
        # λ = 0.30: a block with two newer ready blocks shows L4, with one L5; the short block counts as one.
        assert [(b["turns"], b["age"], b["level"]) for b in listing["blocks"]] == [
            ([1, 6], 2, 4), ([7, 8], 1, 5), ([9, 14], 0, 5)]
    finally:
        await client.close()


async def test_shutdown_seals_open_tails_and_the_next_start_summarises_them(tmp_path: Path):
    db = tmp_path / "m.db"
    client = await SidecarClient.start(db, env=ZERO)
    try:
        for i in (1, 2, 3, 4, 5, 6, 7, 8):
            await client.call("turn.capture", turn(i))
        await client.call("turn.capture", turn(1, session="s2"))
        # No job in flight at the stop: an in-process sidecar's interrupted job would look alive to the next one
        # (same pid) until its lease ran out.
        await client.settled()
    finally:
        await client.close()
    assert db_rows(db, "SELECT COUNT(*) FROM turns WHERE block_id IS NULL") == [(0,)]
    spans = db_rows(db, "SELECT s.key, b.first_turn, b.last_turn FROM blocks b JOIN sessions s ON s.id = b.session_id"
                        " ORDER BY s.key, b.seq")
    assert spans == [("s1", 1, 6), ("s1", 7, 8), ("s2", 1, 1)]
    tails = db_rows(db, "SELECT json_extract(after, '$.tail') FROM audit_log WHERE action = 'block.sealed'"
                        " AND json_extract(after, '$.tail') IS NOT NULL")
    assert tails == [("shutdown",), ("shutdown",)]
    # The jobs queued at shutdown run after the next start.
    client = await SidecarClient.start(db, env=ZERO)
    try:
        await client.settled()
        assert {b["status"] for b in (await blocks(client))["blocks"]} == {"ready"}
        assert [b["status"] for b in (await blocks(client, "s2"))["blocks"]] == ["ready"]
    finally:
        await client.close()


async def test_a_tail_left_by_a_killed_sidecar_is_sealed_after_the_next_start(tmp_path: Path):
    db = tmp_path / "m.db"
    client = await SidecarClient.start(db, env=ZERO, process=True)
    for i in (1, 2, 3, 4, 5, 6, 7, 8, 9):
        await client.call("turn.capture", turn(i))
    await client.kill9()
    assert db_rows(db, "SELECT seq FROM turns WHERE block_id IS NULL ORDER BY seq") == [(7,), (8,), (9,)]
    # The sidecar stays down for eleven minutes: its turns' capture times are that old when it starts again.
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE turns SET captured_at = strftime('%Y-%m-%dT%H:%M:%fZ', captured_at, '-11 minutes')")
    client = await SidecarClient.start(db, env=ZERO, process=True)
    try:
        note = await client.wait_notification("jobs.changed", lambda p: p["kind"] == "block_summary"
                                              and p["status"] == "done" and p["subject"] != "blk_1")
        listing = await blocks(client)
        assert [b["turns"] for b in listing["blocks"]] == [[1, 6], [7, 9]] and listing["open_turns"] == 0
        assert listing["blocks"][1]["id"] == note["subject"]
    finally:
        await client.close()


def test_the_sweep_reads_only_the_index_of_open_turns(tmp_path: Path):
    async def migrate() -> None:
        db = Database(tmp_path / "m.db")
        await db.open()
        await db.close()

    asyncio.run(migrate())
    plan = " ".join(r[3] for r in db_rows(tmp_path / "m.db", "EXPLAIN QUERY PLAN " + IDLE_SQL, 0, "x", 64))
    assert "COVERING INDEX turns_unsealed" in plan and "SCAN turns" not in plan


# --- every turn ends in exactly one block, whatever the sequence -----------------------------------------------------

Op = tuple[str, int]
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("turn"), st.integers(0, 2)),
        st.tuples(st.just("resend"), st.integers(0, 2)),
        st.tuples(st.just("close"), st.integers(0, 2)),
        st.tuples(st.just("idle"), st.sampled_from([5, 11])),  # minutes after the last capture
        st.tuples(st.just("shutdown"), st.just(0)),
    ),
    max_size=40,
)


async def _run_ops(path: Path, block_turns: int, ops: list[Op]) -> None:
    db = Database(path)
    await db.open()
    settings_ = Settings(db=path, block_turns=block_turns)
    sealer = TailSealer(db, settings_, len)
    db.listen(TURN_CAPTURED, sealer.captured)
    seqs: dict[int, int] = defaultdict(int)
    open_: dict[int, int] = defaultdict(int)
    expected: dict[int, list[tuple[int, int]]] = defaultdict(list)

    def seal(s: int) -> None:
        if open_[s]:
            expected[s].append((seqs[s] - open_[s] + 1, seqs[s]))
            open_[s] = 0

    try:
        for op, arg in ops:
            if op in ("turn", "resend"):
                if op == "resend" and not seqs[arg]:
                    continue
                n = seqs[arg] + 1 if op == "turn" else seqs[arg]
                p = CaptureParams(namespace="ns", session=f"s{arg}", receipt=f"s{arg}:{n}", user=f"turn {n}")
                result = await capture_turn(db, settings_, p, len)
                assert result.duplicate == (op == "resend")
                if op == "turn":
                    seqs[arg], open_[arg] = n, open_[arg] + 1
                    if open_[arg] == block_turns:
                        seal(arg)
            elif op == "close":
                session_id = await db.scalar("SELECT id FROM sessions WHERE key = ?", (f"s{arg}",))
                if session_id is not None:
                    await sealer.close(int(session_id))
                seal(arg)
            elif op == "idle":
                await sealer.sweep(datetime.now(UTC) + timedelta(minutes=arg))
                if arg > 10:
                    for s in list(open_):
                        seal(s)
            else:
                assert await sealer.at_shutdown(budget_s=30) == 0
                for s in list(open_):
                    seal(s)
        rows = await db.reader.execute_fetchall(
            "SELECT s.key, b.first_turn, b.last_turn, b.seq FROM blocks b JOIN sessions s ON s.id = b.session_id"
            " ORDER BY s.key, b.seq"
        )
        got: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for r in rows:
            got[int(r[0][1:])].append((r[1], r[2]))
        assert {k: v for k, v in got.items() if v} == {k: v for k, v in expected.items() if v}
        # Each turn is in the block whose span holds it, and in no other; open turns are exactly the unsealed ones.
        turns = await db.reader.execute_fetchall(
            "SELECT s.key, t.seq, b.first_turn, b.last_turn FROM turns t JOIN sessions s ON s.id = t.session_id"
            " LEFT JOIN blocks b ON b.id = t.block_id"
        )
        for key, seq, first, last in turns:
            if first is None:
                assert seq > seqs[int(key[1:])] - open_[int(key[1:])]
            else:
                assert first <= seq <= last
        assert len(turns) == sum(seqs.values())
    finally:
        await db.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block_turns=st.integers(1, 4), ops=OPS)
def test_every_turn_ends_in_exactly_one_block(block_turns: int, ops: list[Op]):
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_run_ops(Path(tmp) / "m.db", block_turns, [*ops, ("shutdown", 0)]))


async def test_the_context_engine_lands_a_short_block_like_any_other(tmp_path: Path):
    from support.surfaces import build_surface, plan_params

    client = await SidecarClient.start(tmp_path / "m.db", env=ZERO)
    try:
        for i in range(1, 9):
            await client.call("turn.capture", turn(i))
        (short,) = (await client.call("session.seal_idle", {"now": later(11)}))["sealed_block_ids"]
        for i in range(9, 15):
            await client.call("turn.capture", turn(i))
        await client.settled()
        built = build_surface(turns=17, rounds_per_turn=2, output_tokens=900)
        result = await client.call("context.plan", plan_params(built, window=40_000))
        ops = {op["ref"]: op for op in result["ops"] if op["kind"] == "block"}
        assert short in ops, result["decision"]
        # It covers its own DSH turns exactly (7 and 8), whole rounds.
        first = next(i for i, e in enumerate(built.events) if "Turn 7:" in json.dumps(e["data"]))
        after = next(i for i, e in enumerate(built.events) if "Turn 9:" in json.dumps(e["data"]))
        assert (ops[short]["start"], ops[short]["end"]) == (built.events[first]["seq"], built.events[after - 1]["seq"])
        assert ops[short]["text"].startswith(f"[stratagate:block id={short} level=L")
    finally:
        await client.close()


def test_shutdown_out_of_time_leaves_the_tails_for_the_next_start(tmp_path: Path):
    async def run() -> None:
        path = tmp_path / "m.db"
        db = Database(path)
        await db.open()
        settings_ = Settings(db=path)
        sealer = TailSealer(db, settings_, len)
        db.listen(TURN_CAPTURED, sealer.captured)
        try:
            for s in ("a", "b"):
                for n in (1, 2):
                    await capture_turn(db, settings_, CaptureParams(namespace="ns", session=s, receipt=f"{s}{n}",
                                                                    user="hello"), len)
            assert await sealer.at_shutdown(budget_s=0) == 2  # no time left: nothing written, nothing lost
            assert await db.scalar("SELECT COUNT(*) FROM turns WHERE block_id IS NULL") == 4
        finally:
            await db.close()
        # The next start: a sealer that never saw these sessions seals them once they are idle.
        db = Database(path)
        await db.open()
        try:
            sealer = TailSealer(db, settings_, len, clock=lambda: datetime.now(UTC) + timedelta(minutes=11))
            assert sealer.touched == set() and await sealer.at_shutdown() == 0
            assert len(await sealer.sweep()) == 2
            assert await db.scalar("SELECT COUNT(*) FROM turns WHERE block_id IS NULL") == 0
        finally:
            await db.close()

    asyncio.run(run())


# --- a write cancelled at BEGIN or before its COMMIT leaves no transaction behind (shutdown writes after it) ---------


@pytest.mark.parametrize(("cut", "grouped"), [("BEGIN IMMEDIATE", False), ("COMMIT", False), ("BEGIN IMMEDIATE", True)])
def test_a_cancelled_transaction_leaves_the_writer_clean(tmp_path: Path, cut: str, grouped: bool):
    async def run() -> None:
        db = Database(tmp_path / "m.db")
        await db.open()
        writer = db.writer
        real = writer.execute

        async def cancelled_at(sql: str, parameters: Any = ()) -> Any:
            if sql == cut:
                if cut.startswith("BEGIN"):
                    await real(sql, parameters)  # it ran in the connection, the caller was cancelled after
                raise asyncio.CancelledError
            return await real(sql, parameters)

        try:
            writer.execute = cancelled_at  # type: ignore[method-assign]
            with pytest.raises(asyncio.CancelledError):
                if grouped:
                    await db.group.submit(lambda conn: conn.execute("INSERT INTO meta(key, value) VALUES ('cut', '1')"))
                else:
                    async with db.transaction() as conn:
                        await conn.execute("INSERT INTO meta(key, value) VALUES ('cut', '1')")
            writer.execute = real  # type: ignore[method-assign]
            assert not writer.in_transaction
            assert await db.scalar("SELECT COUNT(*) FROM meta WHERE key = 'cut'") == 0
            async with db.transaction() as conn:  # the next write (a shutdown seal) starts as usual
                await conn.execute("INSERT INTO meta(key, value) VALUES ('next', '1')")
            assert await db.scalar("SELECT value FROM meta WHERE key = 'next'") == "1"
        finally:
            await db.close()

    asyncio.run(run())


def test_the_sweep_pages_through_many_idle_sessions(tmp_path: Path):
    async def run() -> None:
        path = tmp_path / "m.db"
        db = Database(path)
        await db.open()
        settings_ = Settings(db=path, block_turns=3)
        try:
            sessions = SWEEP_BATCH * 2 + 5
            for s in range(sessions):
                for n in range(1, 2 + s % 2):  # one or two open turns each
                    params = CaptureParams(namespace="ns", session=f"s{s}", receipt=f"{s}:{n}", user=f"turn {n}")
                    await capture_turn(db, settings_, params, len)
            sealer = TailSealer(db, settings_, len)
            assert await sealer.sweep(datetime.now(UTC) + timedelta(minutes=9)) == []
            sealed = await sealer.sweep(datetime.now(UTC) + timedelta(minutes=11))
            assert len(sealed) == sessions == await db.scalar("SELECT COUNT(*) FROM blocks")
            assert await db.scalar("SELECT COUNT(*) FROM turns WHERE block_id IS NULL") == 0
            assert await db.scalar("SELECT COUNT(*) FROM jobs WHERE kind = 'block_summary'") == sessions
        finally:
            await db.close()

    asyncio.run(run())
