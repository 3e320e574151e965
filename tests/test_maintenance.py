"""Maintenance (stratagate/maintenance/): reversible consolidation of near-duplicate events, re-projection of a stale
graph, optimize, the report, the schedule (time controlled through the job's next_run_at and a clock parameter,
never by sleeping), the RPC methods on a real sidecar, and a dry run that writes nothing."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratagate.config import Settings
from stratagate.events import store as events
from stratagate.events.models import NewEvent
from stratagate.events.store import Source
from stratagate.graph.projection import mark_projected, project_event
from stratagate.jobs import queue
from stratagate.jobs.pipeline import MAINTENANCE
from stratagate.maintenance import consolidate, reproject, stats
from stratagate.maintenance import run as maintenance
from stratagate.maintenance import store as mstore
from stratagate.storage.db import Database
from stratagate.storage.lookup import ensure_namespace, ensure_session
from support.sidecar import REPO, RpcFailure, SidecarClient

NS = "proj"
EXCLUDED = {"audit_log", "event_merges"}


# --- helpers ----------------------------------------------------------------------------------------------------


async def add_event(db: Database, text: str, *, namespace: str = NS, session: str = "s1", scope: str = "project",
                    type_: str = "fact", pinned: bool = False, quotes: int = 2, project: bool = True) -> int:
    """An event written the way admission writes one (row, search terms, sources, graph projection), bypassing
    admission's own duplicate merge: the near duplicates maintenance exists for (events older than that rule,
    imports into other scopes, …)."""
    async with db.transaction() as conn:
        ns = await ensure_namespace(conn, namespace)
        sid, _ = await ensure_session(conn, ns, session)
        ev = await events.insert_event(conn, NewEvent(
            namespace_id=ns, session_id=sid, origin="remember", title=text[:80], summary=text, narrative=text,
            type=type_, scope=scope, mentioned_at="2026-05-01T10:00:00.000Z", fingerprint=events.fingerprint(text),
        ), "agent")
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        await events.insert_sources(conn, ev.id, [
            Source(call_id=f"call-{ev.id}-{i}-{digest}", quote=text) for i in range(quotes)
        ])
        if pinned:
            ev = await events.set_pinned(conn, ev, "user", True)
        if project:
            await mark_projected(conn, ev.id, await project_event(conn, ev, "agent"))
        return ev.id


async def dump(conn: Any) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows, in rowid order (FTS tables through their virtual table), audit and merge log aside."""
    plain, fts = await mstore.tables(conn)
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table in plain:
        if table not in EXCLUDED:
            rows = [tuple(r) for r in await conn.execute_fetchall(f'SELECT * FROM "{table}"')]
            out[table] = sorted(rows, key=repr)  # some tables are WITHOUT ROWID
    for table in fts:
        out[table] = [tuple(r) for r in await conn.execute_fetchall(
            f'SELECT rowid, * FROM "{table}" ORDER BY rowid')]
    return out


def dump_file(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    async def go() -> dict[str, list[tuple[Any, ...]]]:
        import aiosqlite

        conn = await aiosqlite.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return await dump(conn)
        finally:
            await conn.close()

    return asyncio.run(go())


async def open_db(path: Path) -> Database:
    db = Database(path)
    await db.open()
    return db


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {"PYTHONPATH": str(REPO / "sidecar"), "PATH": "/usr/bin:/bin", **(env or {})}
    return subprocess.run([sys.executable, "-m", "stratagate", *args], capture_output=True, text=True, env=full,
                          stdin=subprocess.DEVNULL, timeout=120)


# --- consolidation ----------------------------------------------------------------------------------------------


async def test_near_duplicates_merge_into_the_pinned_or_oldest_and_nothing_else_does(tmp_path: Path):
    db = await open_db(tmp_path / "memory.db")
    try:
        a = await add_event(db, "The project uses npm for its packages.")
        b = await add_event(db, "the project uses npm for its packages!", pinned=True)
        c = await add_event(db, "The project does not use npm for its packages.")  # negation: another memory
        d = await add_event(db, "The project uses npm for its packages.", type_="decision")  # another type
        e = await add_event(db, "The project uses npm for its packages.", scope="session", session="s2")
        f = await add_event(db, "The project uses npm for its packages.", namespace="other")
        planned = await consolidate.plan(db.reader)
        assert [(m.survivor_id, m.merged_id) for m in planned] == [(b, a)]  # the pinned one survives
        assert planned[0].match == "near" and planned[0].similarity == 1.0  # same words, other punctuation
        done = await consolidate.apply(db, planned, "system", None, "test")
        assert len(done) == 1
        merged = await events.get_event(db.reader, a)
        assert merged is not None and merged.status == "superseded" and merged.successor_id == b
        quotes = [s["call_id"] for s in await events.sources(db.reader, b)]
        assert sum(q.startswith(f"call-{a}-") for q in quotes) == 2  # the merged event's sources, copied
        for other in (c, d, e, f):
            row = await events.get_event(db.reader, other)
            assert row is not None and row.status == "active"
        audit = await db.fetchall("SELECT action, after FROM audit_log WHERE action = 'event.merged'")
        note = json.loads(audit[0]["after"])["note"]
        assert note["into"] == f"evt_{b}" and note["similarity"] == 1.0 and note["sources_copied"] == 2
        assert await consolidate.plan(db.reader) == []  # nothing left to merge: a second pass is a no-op
    finally:
        await db.close()


POOL = [
    "The project uses npm for its packages",
    "We deploy the web service on Fridays at noon",
    "Alice prefers tabs over spaces in every file",
    "The release 2.4 ships on 2026-06-01",
    "CI runs on GitHub Actions for every branch",
]
VARIANT = st.sampled_from(["{}", "{}.", "{}!", "  {}  ", "{}".upper(), "Note: {}"])


@st.composite
def duplicate_sets(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(2, 7))
    out = []
    for _ in range(n):
        base = draw(st.sampled_from(POOL[:3]))
        variant = draw(VARIANT)
        text = variant.format(base)
        out.append({
            "text": text.upper() if draw(st.booleans()) and variant == "{}" else text,
            "scope": draw(st.sampled_from(["project", "project", "session"])),
            "session": draw(st.sampled_from(["s1", "s2"])),
            "type": draw(st.sampled_from(["fact", "fact", "decision"])),
            "pinned": draw(st.booleans()) and draw(st.booleans()),
            "quotes": draw(st.integers(1, 2)),
        })
    return out


async def _merge_then_unmerge(path: Path, items: list[dict[str, Any]]) -> None:
    db = await open_db(path)
    try:
        for item in items:
            await add_event(db, item["text"], scope=item["scope"], session=item["session"], type_=item["type"],
                            pinned=item["pinned"], quotes=item["quotes"])
        before = await dump(db.reader)
        planned = await consolidate.plan(db.reader)
        done = await consolidate.apply(db, planned, "system", None, "hypothesis")
        assert len(done) == len(planned)
        after_merge = await dump(db.reader)
        # A merge leaves the graph's facts and every search index as they were.
        for table in ("graph_facts", "graph_fts", "event_fts", "graph_nodes"):
            assert after_merge[table] == before[table], table
        for m in done:
            merged = await events.get_event(db.reader, m.merged_id)
            assert merged is not None and merged.status == "superseded" and merged.successor_id == m.survivor_id
        for m in reversed(done):
            result = await consolidate.unmerge_event(db, f"evt_{m.merged_id}", NS, "user")
            assert result["event"]["status"] == "active"
        assert await dump(db.reader) == before
        undone = await db.fetchall("SELECT COUNT(*) AS n FROM event_merges WHERE undone_at IS NOT NULL")
        assert undone[0]["n"] == len(done)
    finally:
        await db.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=duplicate_sets())
def test_merge_then_unmerge_restores_byte_identical_tables(items: list[dict[str, Any]]):
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_merge_then_unmerge(Path(tmp) / "memory.db", items))


async def test_unmerge_refuses_what_is_not_an_open_merge(tmp_path: Path):
    db = await open_db(tmp_path / "memory.db")
    try:
        a = await add_event(db, "The project uses npm for its packages.")
        b = await add_event(db, "The project uses npm for its packages!")
        await consolidate.apply(db, await consolidate.plan(db.reader), "system", None, "test")
        with pytest.raises(Exception, match="not a merged duplicate"):
            await consolidate.unmerge_event(db, f"evt_{a}", NS, "user")  # the survivor
        with pytest.raises(Exception, match="unknown event"):
            await consolidate.unmerge_event(db, f"evt_{b}", "other-namespace", "user")
        with pytest.raises(Exception, match="must look like"):
            await consolidate.unmerge_event(db, "blk_1", None, "user")
        await consolidate.unmerge_event(db, f"evt_{b}", NS, "user")
        with pytest.raises(Exception, match="not a merged duplicate"):
            await consolidate.unmerge_event(db, f"evt_{b}", NS, "user")  # undone already
    finally:
        await db.close()


async def test_a_forgotten_survivor_keeps_its_duplicate_and_erasing_it_erases_the_duplicate(tmp_path: Path):
    from stratagate.erase import erase_subject

    db = await open_db(tmp_path / "memory.db")
    try:
        a = await add_event(db, "The project uses npm for its packages.")
        b = await add_event(db, "The project uses npm for its packages!")
        await consolidate.apply(db, await consolidate.plan(db.reader), "system", None, "test")
        async with db.transaction() as conn:
            survivor = await events.get_event(conn, a)
            assert survivor is not None
            await events.forget(conn, survivor, "user", None)
        with pytest.raises(Exception, match="is forgotten; restore"):
            await consolidate.unmerge_event(db, f"evt_{b}", NS, "user")  # its words restate a forgotten memory
        result = await erase_subject(db, NS, f"evt_{a}", "user", max_attempts=3, count=len)
        assert result["counts"]["merged_duplicates"] == [f"evt_{b}"]
        duplicate = await events.get_event(db.reader, b)
        assert duplicate is not None and duplicate.narrative == "[erased]" and duplicate.status == "forgotten"
        erased = await db.fetchall("SELECT subject_id FROM erasures ORDER BY subject_id")
        assert [r["subject_id"] for r in erased] == [f"evt_{a}", f"evt_{b}"]
    finally:
        await db.close()


async def test_unmerging_after_the_survivor_was_replaced_leaves_the_duplicate_replaced_too(tmp_path: Path):
    db = await open_db(tmp_path / "memory.db")
    try:
        a = await add_event(db, "The project uses npm for its packages.")
        b = await add_event(db, "The project uses npm for its packages!")
        assert len(await consolidate.apply(db, await consolidate.plan(db.reader), "system", None, "test")) == 1
        # Then the decision changes (its projection would supersede by slot as well; here it is said explicitly).
        c = await add_event(db, "The project switched to pnpm for its packages.", type_="change", project=False)
        async with db.transaction() as conn:
            old, new = await events.get_event(conn, a), await events.get_event(conn, c)
            assert old is not None and new is not None
            await events.supersede(conn, old, new, "user")
        result = await consolidate.unmerge_event(db, f"evt_{b}", NS, "user")
        assert result["event"]["status"] == "superseded" and result["event"]["successor_id"] == f"evt_{c}"
        merge = await db.fetchone("SELECT undone_at FROM event_merges")
        assert merge is not None and merge["undone_at"] is not None
    finally:
        await db.close()


# --- re-projection ----------------------------------------------------------------------------------------------


async def test_stale_facts_and_unprojected_events_are_repaired(tmp_path: Path):
    db = await open_db(tmp_path / "memory.db")
    try:
        held = await add_event(db, "The project uses pnpm.")
        never = await add_event(db, "The project uses vitest.", project=False)
        facts = await db.fetchall("SELECT fact_id FROM graph_fact_events WHERE event_id = ?", (held,))
        assert facts
        # A status change written behind the status hook's back (an old sidecar, a hand edit): the fact is stale.
        async with db.transaction() as conn:
            await conn.execute("UPDATE events SET status = 'forgotten', prior_status = 'active' WHERE id = ?", (held,))
        todo = await reproject.plan(db.reader)
        assert todo.facts == [facts[0]["fact_id"]]
        assert todo.unprojected == [(1, never)]
        repaired = await reproject.apply(db, todo, "system")
        assert repaired.facts_refreshed == [f"fct_{facts[0]['fact_id']}"]
        assert repaired.events_projected == [f"evt_{never}"]
        status = await db.fetchone("SELECT status FROM graph_facts WHERE id = ?", (facts[0]["fact_id"],))
        assert status is not None and status["status"] == "archived"
        assert await db.fetchone("SELECT 1 FROM graph_fact_events WHERE event_id = ?", (never,)) is not None
        assert (await reproject.plan(db.reader)).model_dump() == {"facts": [], "unprojected": [], "failed_jobs": []}
    finally:
        await db.close()


# --- a whole pass -----------------------------------------------------------------------------------------------


async def test_a_pass_is_recorded_reports_and_deletes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from stratagate.blocks import upgrade
    from stratagate.events import recovery

    calls: list[tuple[str, int]] = []

    def fake(side: str, n: int) -> Any:
        async def requeue(db: Database, max_attempts: int) -> int:
            calls.append((side, max_attempts))
            return n

        return requeue

    # The upgrade triggers of fallback blocks and events (zblocks', zevents'), whatever they do, are called once.
    monkeypatch.setattr(upgrade, "requeue_fallbacks", fake("blocks", 3))
    monkeypatch.setattr(recovery, "requeue_fallbacks", fake("events", 1))
    settings_ = Settings(db=tmp_path / "memory.db", dense=False, job_max_attempts=4)
    db = await open_db(settings_.db)
    try:
        await add_event(db, "The project uses npm for its packages.")
        await add_event(db, "The project uses npm for its packages!")
        plain, _ = await mstore.tables(db.reader)
        counts = {t: await mstore.count(db.reader, t) for t in plain}
        result = await maintenance.Maintenance(db, settings_).run_pass("manual", "user")
        assert result["merged"] == 1 and result["run_id"] == 1 and result["dry_run"] is False
        assert result["fallbacks_requeued"] == {"blocks": 3, "events": 1}
        assert calls == [("blocks", 4), ("events", 4)]
        assert set(result["optimize"]["fts_optimized"]) == {"message_fts", "event_fts", "graph_fts"}
        report = result["report"]
        assert report["merges"] == {"done": 1, "undone": 0, "open": 1}
        assert report["events"]["by_status"]["superseded"] == 1 and report["events"]["by_status"]["active"] == 1
        assert report["schedule"]["last_run"]["id"] == 1
        assert set(report["jobs"]) >= {MAINTENANCE, "block_summary"}
        for table, n in counts.items():
            assert await mstore.count(db.reader, table) >= n, f"maintenance deleted rows of {table}"
        run = await db.fetchone("SELECT trigger, status, report FROM maintenance_runs WHERE id = 1")
        assert run is not None and (run["trigger"], run["status"]) == ("manual", "done")
        assert json.loads(run["report"])["merged"] == 1
    finally:
        await db.close()


# --- schedule -----------------------------------------------------------------------------------------------------


async def test_the_schedule_at_start_and_after_a_run(tmp_path: Path):
    s = Settings(db=tmp_path / "memory.db", dense=False, maintenance_interval_hours=24)
    db = await open_db(s.db)
    service = maintenance.Maintenance(db, s)
    try:
        assert await service.at_start(now=1000.0) == "nothing to maintain yet"
        await add_event(db, "The project uses npm for its packages.")
        await add_event(db, "The project uses npm for its packages!")
        assert await service.at_start(now=1000.0) == "overdue: queued"  # no run yet
        job = await mstore.job_row(db.reader)
        assert job is not None and job["status"] == "queued"
        assert job["next_run_at"] == 1000.0 + maintenance.START_DELAY_S
        # The runner claims it when due (time given explicitly): one pass, then its own row is queued again.
        [claimed] = await queue.claim_due(db, 1, now=2000.0)
        handler = maintenance.job_handler(type("Deps", (), {"maintenance": service})())  # type: ignore[arg-type]
        assert await handler(claimed) == []
        run = await mstore.newest_run(db.reader)
        assert run is not None and (run["trigger"], run["status"]) == ("start", "done")
        job = await mstore.job_row(db.reader)
        assert job is not None and job["status"] == "queued" and job["next_run_at"] > time.time() + 23.9 * 3600
        assert (await stats.report(db.reader, s.db, 24))["schedule"]["job_status"] == "queued"
        # A start within the interval changes nothing; a start after it makes the job due soon after.
        started = await maintenance._newest_start(db.reader)
        assert started is not None
        assert await service.at_start(now=started + 3600) == "not due"
        later = started + 25 * 3600
        assert await service.at_start(now=later) == "due"  # its own next_run_at has passed
        async with db.transaction() as conn:  # its attempts ran out meanwhile: a start queues it again
            await conn.execute("UPDATE jobs SET status = 'failed' WHERE kind = ?", (MAINTENANCE,))
        assert await service.at_start(now=later) == "overdue: queued"
        job = await mstore.job_row(db.reader)
        assert job is not None and job["status"] == "queued" and job["attempts"] == 0
        assert job["next_run_at"] == later + maintenance.START_DELAY_S
        # Interval 0: never scheduled; the queued row is set aside.
        off = s.model_copy(update={"maintenance_interval_hours": 0})
        assert await maintenance.Maintenance(db, off).at_start(now=later) == "off: parked the queued job"
        job = await mstore.job_row(db.reader)
        assert job is not None and job["status"] == "done"
    finally:
        await db.close()


async def test_a_scheduled_job_after_a_manual_run_waits_for_the_next_interval(tmp_path: Path):
    s = Settings(db=tmp_path / "memory.db", dense=False, maintenance_interval_hours=24)
    db = await open_db(s.db)
    service = maintenance.Maintenance(db, s)
    try:
        await add_event(db, "The project uses npm for its packages.")
        assert await service.at_start(now=1000.0) == "overdue: queued"
        await service.run_pass("manual", "user")
        [claimed] = await queue.claim_due(db, 1, now=2000.0)
        handler = maintenance.job_handler(type("Deps", (), {"maintenance": service})())  # type: ignore[arg-type]
        await handler(claimed)
        assert [r["id"] for r in await db.fetchall("SELECT id FROM maintenance_runs")] == [1]  # no second pass
        job = await mstore.job_row(db.reader)
        assert job is not None and job["status"] == "queued" and job["next_run_at"] > time.time() + 23 * 3600
    finally:
        await db.close()


# --- over JSON-RPC, the scheduled path in a real sidecar --------------------------------------------------------


def _prepare(path: Path) -> None:
    async def go() -> None:
        db = await open_db(path)
        try:
            await add_event(db, "The project uses npm for its packages.")
            await add_event(db, "The project uses npm for its packages!")
            await add_event(db, "We deploy the web service on Fridays at noon.")
            await add_event(db, "we deploy the web service on fridays at noon")
        finally:
            await db.close()

    asyncio.run(go())


async def test_rpc_stats_run_unmerge_and_restore(tmp_path: Path):
    db = tmp_path / "memory.db"
    await asyncio.to_thread(_prepare, db)
    # Interval 0: no scheduled pass can interleave with the manual ones this test makes, however slow the machine.
    client = await SidecarClient.start(db, env={"STRATAGATE_DENSE": "off", "STRATAGATE_MODEL_ROUTE": "none",
                                                "STRATAGATE_MAINTENANCE_INTERVAL_HOURS": "0"})
    try:
        dry = await client.call("maintenance.run", {"dry_run": True})
        assert dry["dry_run"] is True and dry["run_id"] is None and dry["merged"] == 2
        assert [(m["survivor"], m["merged"]) for m in dry["merges"]] == [("evt_1", "evt_2"), ("evt_3", "evt_4")]
        assert (await client.call("system.stats"))["merges"]["done"] == 0
        done = await client.call("maintenance.run", {})
        assert done["merged"] == 2 and done["trigger"] == "manual" and done["report"]["merges"]["open"] == 2
        # memory_restore on a merged duplicate undoes exactly that merge.
        restored = await client.tool(NS, "s1", "memory_restore", {"id": "evt_2"})
        assert restored["status"] == "active" and "unmerged from evt_1" in restored["note"]
        unmerged = await client.call("events.unmerge", {"id": "evt_4", "namespace": NS})
        assert unmerged["event"]["status"] == "active" and unmerged["survivor"] == "evt_3"
        assert unmerged["sources_removed"] == 2
        with pytest.raises(RpcFailure) as missing:
            await client.call("events.unmerge", {"id": "evt_4"})
        assert missing.value.code == -32004 and "not a merged duplicate" in missing.value.message
        with pytest.raises(RpcFailure) as bad:
            await client.call("maintenance.run", {"dry_run": "sometimes"})
        assert bad.value.code == -32602 and "dry_run" in bad.value.message
        report = await client.call("system.stats")
        assert report["merges"] == {"done": 2, "undone": 2, "open": 0}
        assert report["schedule"]["last_run"]["trigger"] == "manual"
        assert report["sizes"]["tables"]["events"] == 4 and report["sizes"]["db_bytes"] > 0
    finally:
        await client.close()


async def test_the_scheduled_job_runs_in_the_sidecar_when_due(tmp_path: Path):
    db = tmp_path / "memory.db"
    await asyncio.to_thread(_prepare, db)
    client = await SidecarClient.start(db, env={"STRATAGATE_DENSE": "off", "STRATAGATE_MODEL_ROUTE": "none",
                                                "STRATAGATE_MAINTENANCE_INTERVAL_HOURS": "24"})
    try:
        jobs = (await client.call("jobs.list", {}))["jobs"]
        [job] = [j for j in jobs if j["kind"] == MAINTENANCE]
        assert job["status"] == "queued" and job["subject"] == "db_1"  # overdue at start: due a minute later
        assert (await client.call("system.info"))["counts"]["jobs"]["scheduled"] == 1
        # Time is moved by the job's next_run_at (another connection: the runner's data_version poll sees it).
        conn = sqlite3.connect(db)
        conn.execute("UPDATE jobs SET next_run_at = 0 WHERE kind = ?", (MAINTENANCE,))
        conn.commit()
        conn.close()
        note = await client.wait_notification("jobs.changed", lambda p: p["kind"] == MAINTENANCE, timeout=60)
        assert note["status"] == "queued" and note["error"] is None  # ran, and queued itself for the next interval
        report = await client.call("system.stats")
        assert report["schedule"]["last_run"]["trigger"] == "start"
        assert report["schedule"]["last_run"]["status"] == "done"
        assert report["merges"]["open"] == 2
        assert report["schedule"]["next_run_at"] > "2026"
    finally:
        await client.close()


# --- a dry run writes nothing ------------------------------------------------------------------------------------


def test_a_dry_run_writes_nothing_and_reports_what_it_would_merge(tmp_path: Path):
    db = tmp_path / "memory.db"
    _prepare(db)
    watcher = sqlite3.connect(db)  # PRAGMA data_version changes for it when any other connection commits
    try:
        version = watcher.execute("PRAGMA data_version").fetchone()[0]
        files = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("memory.db")}
        tables = dump_file(db)
        result = cli("maintain", "--dry-run", "--json", "--db", str(db))
        assert result.returncode == 0, result.stderr
        out = json.loads(result.stdout)
        assert out["dry_run"] is True and out["merged"] == 2
        assert {m["merged"] for m in out["merges"]} == {"evt_2", "evt_4"}
        assert watcher.execute("PRAGMA data_version").fetchone()[0] == version
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("memory.db")} == files
        assert dump_file(db) == tables
        stats_out = cli("stats", "--db", str(db))
        assert stats_out.returncode == 0 and json.loads(stats_out.stdout)["merges"]["done"] == 0
        assert watcher.execute("PRAGMA data_version").fetchone()[0] == version
        # The real pass does write (and says what it did).
        real = cli("maintain", "--db", str(db))
        assert real.returncode == 0, real.stderr
        assert "run 1: merged 2" in real.stdout and "evt_2 into evt_1" in real.stdout
        assert watcher.execute("PRAGMA data_version").fetchone()[0] != version
    finally:
        watcher.close()
