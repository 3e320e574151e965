"""Incremental maintenance (maintenance/sweep.py, gate.py): a sweep merges what the all-pairs plan merges, examines
only what changed since the last finished sweep, goes on from its cursor after a stop, and a request in flight goes
before the pass's next slice. Orders and counts are asserted here; CPU figures are bench/bench_maintenance.py's."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stratagate.events import store as events
from stratagate.maintenance import consolidate, gate, sweep
from stratagate.maintenance import shape_store as sql
from stratagate.storage.db import Database
from support.sidecar import SidecarClient
from test_maintenance import NS, add_event, open_db

POOL = [
    "The project uses npm for its packages",
    "We deploy the web service on Fridays at noon",
    "Alice prefers tabs over spaces in every file",
    "The release 2.4 ships on 2026-06-01",
    "The build does not run the slow tests",
]
VARIANT = st.sampled_from(["{}", "{}.", "{}!", "Note: {}", "{} again", "{} today", "Also {} now"])


@st.composite
def corpora(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for _ in range(draw(st.integers(2, 9))):
        out.append({
            "text": draw(VARIANT).format(draw(st.sampled_from(POOL))),
            "scope": draw(st.sampled_from(["project", "project", "session"])),
            "session": draw(st.sampled_from(["s1", "s2"])),
            "type_": draw(st.sampled_from(["fact", "fact", "decision"])),
            "pinned": draw(st.booleans()) and draw(st.booleans()),
        })
    return out


async def _add(db: Database, items: list[dict[str, Any]]) -> None:
    for item in items:
        await add_event(db, item["text"], scope=item["scope"], session=item["session"], type_=item["type_"],
                        pinned=item["pinned"], quotes=1, project=False)


async def _state(db: Database) -> list[tuple[int, str, int | None]]:
    rows = await db.fetchall("SELECT id, status, successor_id FROM events ORDER BY id")
    return [(int(r["id"]), str(r["status"]), r["successor_id"]) for r in rows]


async def _sweep_vs_plan(root: Path, first: list[dict[str, Any]], then: list[dict[str, Any]]) -> None:
    swept, planned = await open_db(root / "swept.db"), await open_db(root / "planned.db")
    try:
        for batch in (first, then):
            await _add(swept, batch)
            await _add(planned, batch)
            made = await sweep.run(swept, "system", None, "test")
            assert made.finished
            await consolidate.apply(planned, await consolidate.plan(planned.reader), "system", None, "test")
            assert await _state(swept) == await _state(planned)
    finally:
        await swept.close()
        await planned.close()


def _item(text: str, pinned: bool = False) -> dict[str, Any]:
    return {"text": text, "scope": "project", "session": "s1", "type_": "fact", "pinned": pinned}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=corpora(), then=corpora())
# A new pinned event with an earlier duplicate stays current, so it takes the unchanged duplicate after it.
@example(first=[_item(f"Note: {POOL[0]}", True), _item(f"{POOL[0]} today"), _item(POOL[0])],
         then=[_item(POOL[0])] * 6 + [_item(POOL[0], True)])
def test_a_sweep_merges_what_the_all_pairs_plan_merges_first_and_incrementally(first: list[dict[str, Any]],
                                                                              then: list[dict[str, Any]]):
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_sweep_vs_plan(Path(tmp), first, then))


async def test_an_incremental_sweep_examines_only_what_changed(tmp_path: Path):
    db = await open_db(tmp_path / "memory.db")
    try:
        for i in range(12):
            await add_event(db, f"Service {i} listens on port {8000 + i} in staging", project=False)
        first = await sweep.run(db, "system", None, "test")
        assert first.finished and first.full and first.examined == 12 and first.merges == []
        assert (await sweep.run(db, "system", None, "test")).examined == 0  # nothing changed
        a = await add_event(db, "Service 3 listens on port 8003 in staging!", project=False)
        await add_event(db, "The cache is flushed every night", project=False)
        second = await sweep.run(db, "system", None, "test")
        assert not second.full and second.examined == 2
        assert [(m.survivor_id, m.merged_id) for m in second.merges] == [(4, a)]
        async with db.transaction() as conn:  # a change to one old event: that one is looked at again
            old = await events.get_event(conn, 7)
            assert old is not None
            await events.set_pinned(conn, old, "user", True)
        # The pinned one, and the one merged by the last sweep (changed after that sweep began).
        assert (await sweep.run(db, "system", None, "test")).examined == 2
        assert (await sweep.run(db, "system", None, "test")).examined == 0
        full = await sweep.run(db, "system", None, "test", full=True)
        assert full.full and full.examined == 14 and full.merges == []  # every event (the merged one included)
    finally:
        await db.close()


async def test_a_stopped_sweep_goes_on_from_its_cursor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(sweep, "SLICE_S", 0.0)  # one event per slice
    texts = ["The project uses npm for its packages", "We deploy on Fridays at noon",
             "the project uses npm for its packages!", "Alice prefers tabs over spaces",
             "We deploy on Fridays at noon.", "Alice prefers tabs over spaces!"]
    db = await open_db(tmp_path / "memory.db")
    try:
        for text in texts:
            await add_event(db, text, project=False)
        expected = [(m.survivor_id, m.merged_id) for m in await consolidate.plan(db.reader)]
        stopped = await sweep.run(db, "system", None, "test", max_slices=3)
        assert not stopped.finished and 0 < stopped.examined < len(texts)
        pos = (await sql.cursor(db.reader, sweep.STEP))["sweep"]
        assert pos["after"] == stopped.examined and pos["since"] is None  # events 1..after are done
        rest = await sweep.run(db, "system", None, "test")
        assert rest.finished and rest.examined == len(texts) - stopped.examined  # nothing twice, nothing left
        assert [(m.survivor_id, m.merged_id) for m in stopped.merges + rest.merges] == expected
        assert expected == [(1, 3), (2, 5), (4, 6)]
        assert "sweep" not in await sql.cursor(db.reader, sweep.STEP)
    finally:
        await db.close()


async def test_a_pass_waits_between_slices_while_a_request_is_in_flight(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(sweep, "SLICE_S", 0.0)
    monkeypatch.setattr(gate, "MAX_WAIT_S", 60.0)
    db = await open_db(tmp_path / "memory.db")
    try:
        for i in range(6):
            await add_event(db, f"Worker {i} retries {i + 2} times", project=False)
        g = gate.Gate()
        paused = asyncio.Event()

        async def pause() -> None:
            paused.set()
            await g.turn()

        with g.busy():
            task = asyncio.create_task(sweep.run(db, "system", None, "test", pause=pause))
            await asyncio.wait_for(paused.wait(), 60)  # the first slice is committed
            for _ in range(200):  # the loop turns many times: the pass does not go on while the request is open
                await asyncio.sleep(0)
            assert not task.done()
            pos = (await sql.cursor(db.reader, sweep.STEP))["sweep"]
            assert pos["after"] <= 1  # at most the one slice that was running when the request came
        done = await task  # answered: the pass goes on
        assert done.finished and done.examined == 6
    finally:
        await db.close()


async def test_a_render_during_a_pass_is_answered_before_the_pass(tmp_path: Path):
    db = tmp_path / "memory.db"
    store = await open_db(db)
    try:
        for i in range(300):
            await add_event(store, f"Host {i} builds package {i} with flag {i * 7} on Tuesdays", quotes=1,
                            project=False)
    finally:
        await store.close()
    client = await SidecarClient.start(db, env={"STRATAGATE_DENSE": "off", "STRATAGATE_MODEL_ROUTE": "none",
                                                "STRATAGATE_MAINTENANCE_INTERVAL_HOURS": "0"})
    try:
        order: list[str] = []
        passing = await client.request("maintenance.run", {})
        passing.add_done_callback(lambda _: order.append("pass"))
        render = await client.call("activation.render", {"namespace": NS, "session": "s1", "query": "package 7"})
        order.append("render")
        assert isinstance(render["text"], str)
        result = await passing
        assert result["result"]["merged"] == 0
        assert order == ["render", "pass"]
    finally:
        await client.close()


async def test_deleting_a_namespace_takes_its_shapes_and_keeps_the_others(tmp_path: Path):
    from stratagate.purge import delete_namespace

    db = await open_db(tmp_path / "memory.db")
    try:
        await add_event(db, "The project uses npm for its packages", project=False)
        kept = await add_event(db, "The project uses npm for its packages", namespace="other", project=False)
        assert (await sweep.run(db, "system", None, "test")).examined == 2
        await delete_namespace(db, NS, "user")
        shaped = await db.fetchall("SELECT DISTINCT event_id FROM event_shapes")
        assert [r["event_id"] for r in shaped] == [kept]
        assert await db.fetchall("PRAGMA foreign_key_check") == []
    finally:
        await db.close()


async def test_a_waiting_request_ends_a_slice_at_the_next_event(tmp_path: Path):
    """With a request in flight a slice examines one event, then commits and yields: the same merges, one slice per
    event (without one, a slice examines events until its time is spent)."""
    db = await open_db(tmp_path / "memory.db")
    try:
        for i in range(8):
            await add_event(db, f"Worker {i} retries after {10 + i} seconds in production", project=False)
        dup = await add_event(db, "Worker 2 retries after 12 seconds in production!", project=False)
        swept = await sweep.run(db, "system", None, "test", waiting=lambda: True)
        assert swept.finished and swept.examined == 9
        assert swept.slices >= swept.examined  # one event per slice (and the slice that finds the end)
        assert [(m.survivor_id, m.merged_id) for m in swept.merges] == [(3, dup)]
    finally:
        await db.close()


async def test_slices_share_a_transaction_while_a_request_is_in_flight_and_a_write_ends_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """With ``hold`` (a pass of the sidecar) slices do not commit while a request is in flight, so the reader sees no
    new commit (its page cache stays valid); a write that asks for the lock ends the transaction before the request
    is answered, goes through, and the sweep goes on to the same merges."""
    monkeypatch.setattr(sweep, "SLICE_S", 0.0)  # one event per slice
    monkeypatch.setattr(gate, "MAX_WAIT_S", 60.0)
    db = await open_db(tmp_path / "memory.db")
    try:
        for i in range(6):
            await add_event(db, f"Worker {i} retries after {10 + i} seconds in production", project=False)
        dup = await add_event(db, "Worker 2 retries after 12 seconds in production!", project=False)
        g = gate.Gate()
        held = asyncio.Event()

        async def hold(lock: Any) -> None:
            held.set()
            await g.hold(lock)

        with g.busy():
            version = await db.reader_data_version()
            task = asyncio.create_task(sweep.run(db, "system", None, "test", waiting=g.waiting, hold=hold))
            await asyncio.wait_for(held.wait(), 60)  # the first slice ran and holds its transaction
            for _ in range(50):
                await asyncio.sleep(0)
            assert not task.done() and db.write_lock.locked()
            assert await sql.cursor(db.reader, sweep.STEP) == {}  # no slice committed yet
            assert await db.reader_data_version() == version  # nothing committed: the reader keeps its cache
            async with db.transaction() as conn:  # asks for the lock: the sweep commits what it did and lets go
                await conn.execute("INSERT INTO meta(key, value) VALUES ('probe', '1')")
            assert await db.reader_data_version() != version
            assert "sweep" in await sql.cursor(db.reader, sweep.STEP)  # its position was committed with its work
        done = await task
        assert done.finished and done.examined == 7
        assert [(m.survivor_id, m.merged_id) for m in done.merges] == [(3, dup)]
    finally:
        await db.close()


async def test_an_unsliced_step_waits_for_a_quiet_spell_or_is_left_for_later(tmp_path: Path):
    """``Gate.idle``: True once no request was in flight for the quiet spell; False while one stays in flight past
    the patience. optimize then leaves the FTS merge and the checkpoint to a later pass and says so."""
    from stratagate.maintenance import optimize

    g = gate.Gate()
    assert await g.idle(quiet=0.0, patience=0.0)
    with g.busy():
        assert not await g.idle(quiet=0.0, patience=0.01)
    assert not await g.idle(quiet=60.0, patience=0.01)  # answered just now: not quiet for long enough yet
    db = await open_db(tmp_path / "memory.db")
    try:
        await add_event(db, "Worker 1 retries after 10 seconds in production", project=False)

        async def busy() -> bool:
            return False

        tidy = await optimize.run(db, idle=busy)
        assert tidy["deferred"] == ["fts_merge", "checkpoint"]
        assert set(tidy["fts_merge_steps"].values()) == {0} and not tidy["pragma_optimize"]
        done = await optimize.run(db)
        assert done["deferred"] == [] and done["pragma_optimize"] and min(done["fts_merge_steps"].values()) >= 1
    finally:
        await db.close()


async def test_after_an_answer_a_pass_runs_one_slice_then_waits_for_the_next_request(monkeypatch: pytest.MonkeyPatch):
    """Requests come in bursts: right after an answer the pass takes one turn, then waits for the burst's next
    request (``QUIET_S`` at most) instead of running slices while that request's client waits for a core."""
    monkeypatch.setattr(gate, "QUIET_S", 60.0)
    monkeypatch.setattr(gate, "MAX_WAIT_S", 60.0)
    g = gate.Gate()
    await asyncio.wait_for(g.turn(), 1)  # nothing answered yet: no pacing
    await asyncio.wait_for(g.turn(), 1)
    with g.busy():
        pass
    await asyncio.wait_for(g.turn(), 1)  # the one slice after the answer
    second = asyncio.create_task(g.turn())
    for _ in range(50):
        await asyncio.sleep(0)
    assert not second.done()  # waits for the next request
    with g.busy():  # it comes: the pass waits for its answer
        for _ in range(50):
            await asyncio.sleep(0)
        assert not second.done()
    await asyncio.wait_for(second, 1)


async def test_a_traced_pass_writes_its_steps_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """With trace.SINK set a pass appends one JSON line per segment, its steps in the pass's order; without it the
    pass records nothing."""
    import json

    from stratagate.config import Settings
    from stratagate.maintenance import trace
    from stratagate.maintenance.run import Maintenance

    settings_ = Settings(db=tmp_path / "memory.db", dense=False)
    db = await open_db(settings_.db)
    try:
        for i in range(3):
            await add_event(db, f"Worker {i} retries after {10 + i} seconds in production", project=False)
        await Maintenance(db, settings_).run_pass("manual", "system")
        sink = tmp_path / "trace.jsonl"
        assert not sink.exists()
        monkeypatch.setattr(trace, "SINK", str(sink))
        await Maintenance(db, settings_).run_pass("manual", "system", full=True)
        rows = [json.loads(line) for line in sink.read_text().splitlines()]
        steps = list(dict.fromkeys(r["step"] for r in rows))
        assert steps == ["start", "consolidate", "fallbacks", "reproject", "prune", "fts_merge", "checkpoint", "report"]
        assert all(r["wall_ms"] >= 0 and r["end"] in ("step", "pause", "hold") for r in rows)
    finally:
        await db.close()
