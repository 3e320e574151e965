"""Admission's bulk path (events/admit.py ``admit_new``) writes what the one-at-a-time path writes.

The scale bench builds its 100k-event databases through ``admit_new`` (bench/scale_build.py); its figures are only
those of memory_remember's databases if the rows are the same. Here the bench's own generator fills two databases,
one memory at a time through ``admit`` with memory_remember's inline projection, and in batches through
``admit_new``: every row of events, search terms, sources and graph must match (ids included; only the clock's
timestamps differ), the audit rows as a set (the bulk path writes a batch's event rows before its projection's),
and event search must rank the same events with the same scores.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from stratagate.capture.store import ensure_namespace, ensure_session
from stratagate.errors import Invalid
from stratagate.events import store
from stratagate.events.admit import Candidate, Options, admit, admit_new
from stratagate.events.store import Source
from stratagate.graph.projection import mark_projected, project_event
from stratagate.storage.db import Database
from stratagate.storage.lookup import namespace_key
from stratagate.text.terms import fts_query
from stratagate.timeutil import now_iso
from stratagate.wiring import register_hooks
from support.sidecar import REPO

sys.path.insert(0, str(REPO / "bench"))
from scale_workload import memories, queries

N, BATCH = 120, 50
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
NS = "project:bulk:0123456789abcdef"
TABLES = {  # table: its key for a stable order
    "events": "id", "event_fts": "rowid", "event_sources": "id", "graph_nodes": "id", "graph_aliases": "rowid",
    "graph_edges": "rowid", "graph_facts": "id", "graph_fact_events": "rowid", "graph_fts": "rowid",
    "graph_projection": "rowid", "tombstones": "rowid", "jobs": "id",
}


async def _project_now(conn: Any, event: Any, explicit: frozenset[int]) -> dict[str, Any]:
    graph = await project_event(conn, event, "agent", explicit_targets=explicit)
    await mark_projected(conn, event.id, graph)
    return graph


def _candidates(chunk: list[dict[str, Any]], first: int) -> list[Candidate]:
    return [Candidate(statement=m["text"], type=m["type"], mentioned_at=START + timedelta(minutes=first + k),
                      sources=[Source(call_id=f"bulk-{first + k}", quote=m["text"])])
            for k, m in enumerate(chunk)]


async def _options(conn: Any) -> Options:
    ns = await ensure_namespace(conn, NS)
    sess, _ = await ensure_session(conn, ns, "writer")
    return Options(namespace_id=ns, session_id=sess, origin="remember", actor="agent", on_tombstone="refuse",
                   on_exact_duplicate="keep", unknown_target="error", projector=_project_now)


async def _build(path: Path, bulk: bool) -> None:
    db = Database(path)
    await db.open()
    try:
        stream = list(memories(N))
        for first in range(0, N, BATCH):
            chunk = stream[first : first + BATCH]
            async with db.transaction() as conn:
                opts = await _options(conn)
                if bulk:
                    out = await admit_new(conn, _candidates(chunk, first), opts)
                else:
                    out = await admit(conn, _candidates(chunk, first), opts)
                assert [o.result for o in out.outcomes] == ["inserted"] * len(chunk)
    finally:
        await db.close()


def _audit_value(text: str) -> Any:
    """An audit payload with a node's aliases as a set: graph/store.py lists them by creation time to the
    millisecond, then by name, so their order follows the clock, in either path."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, dict) and isinstance(value.get("aliases"), list):
        value["aliases"] = sorted(value["aliases"])
    return json.dumps(value, sort_keys=True)


async def _dump(path: Path, today: str) -> dict[str, Any]:
    """Every row of the compared tables (timestamps of this run masked), and event search's answers."""
    stamp = re.compile(re.escape(today) + r"T[0-9:.]+(Z|[+-][0-9:]+)?")
    db = Database(path)
    await db.open()
    try:
        conn = db.reader
        out: dict[str, Any] = {}
        for table, key in TABLES.items():
            rows = await conn.execute_fetchall(f"SELECT * FROM {table} ORDER BY {key}")
            out[table] = [tuple(stamp.sub("<now>", v) if isinstance(v, str) else v for v in r) for r in rows]
        audit = await conn.execute_fetchall(
            "SELECT namespace_id, actor, action, subject_type, subject_id, before, after FROM audit_log"
            " WHERE action != 'schema.migrated'")  # it names the file
        out["audit_log"] = sorted((tuple(_audit_value(stamp.sub("<now>", v)) if isinstance(v, str) else v for v in r)
                                   for r in audit), key=repr)
        ns = await namespace_key(conn, NS)
        for q in queries()[:12]:
            hits = await store.search(conn, ns, None, fts_query(q), ["active"], limit=10)
            out[f"search {q}"] = [(e.id, round(score or 0.0, 9)) for e, score in hits]
        return out
    finally:
        await db.close()


def test_bulk_admission_writes_the_rows_admit_writes(tmp_path: Path) -> None:
    register_hooks()
    today = now_iso()[:10]
    asyncio.run(_build(tmp_path / "row.db", bulk=False))
    asyncio.run(_build(tmp_path / "bulk.db", bulk=True))
    row, bulk = asyncio.run(_dump(tmp_path / "row.db", today)), asyncio.run(_dump(tmp_path / "bulk.db", today))
    assert len(row["events"]) == N and row["graph_facts"] and row["event_fts"]  # the comparison has content
    assert any(hits for k, hits in row.items() if k.startswith("search "))
    for key in row:
        assert bulk[key] == row[key], key


def test_bulk_admission_takes_only_new_memories(tmp_path: Path) -> None:
    register_hooks()
    chunk = list(memories(3))

    async def run() -> None:
        db = Database(tmp_path / "m.db")
        await db.open()
        try:
            async with db.transaction() as conn:
                await admit_new(conn, _candidates(chunk[:2], 0), await _options(conn))
            for bad in (_candidates(chunk[1:3], 1),  # one already stored
                        _candidates([chunk[2], chunk[2]], 2),  # repeated within the batch
                        [_candidates(chunk[2:3], 2)[0].model_copy(update={"supersedes": [1]})]):  # a target
                with pytest.raises(Invalid):
                    async with db.transaction() as conn:
                        await admit_new(conn, bad, await _options(conn))
            count = await (await db.reader.execute("SELECT count(*) FROM events")).fetchone()
            assert count[0] == 2  # nothing of a refused batch was kept
        finally:
            await db.close()

    asyncio.run(run())
