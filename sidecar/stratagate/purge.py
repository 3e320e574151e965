"""Deleting a whole namespace (the Memory page's "Delete namespace"): every row of it, in every table, for good.

One transaction, with the erase's secure path (``PRAGMA secure_delete``, the full-text indexes merged, then
``VACUUM`` and a truncated WAL after the commit: no byte of the namespace is left in the file). The append-only
guards (the ``BEFORE DELETE`` triggers of the audit log, imports, evidence, erasure records…) are dropped inside the
transaction and created again, byte for byte, before it commits: no other connection ever sees them missing, and a
failure rolls both back. Foreign keys are checked at the end (``PRAGMA foreign_key_check``): a row of another
namespace that still points into this one refuses the deletion instead of leaving a dangling reference.

It leaves exactly one trace: an audit entry ``namespace.deleted`` with no namespace id, the name as its subject and
the row counts. Not undoable: there is nothing left to restore (tombstones and erasure records go too, so a memory
forgotten there is not refused if it is said again in a namespace of the same name).
"""

from __future__ import annotations

from typing import Any

from stratagate.errors import Invalid, NotFound
from stratagate.storage import lookup
from stratagate.storage.db import Actor, Database, audit
from stratagate.storage.sqlite import Connection

_NS = "namespace_id = :ns"
_SESSIONS = "SELECT id FROM sessions WHERE namespace_id = :ns"
_BATCHES = "SELECT id FROM retrieval_batches WHERE namespace_id = :ns"
_RECEIPTS = "SELECT id FROM use_receipts WHERE namespace_id = :ns"
_EVENTS = "SELECT id FROM events WHERE namespace_id = :ns"
_FACTS = "SELECT id FROM graph_facts WHERE namespace_id = :ns"

DELETES: tuple[tuple[str, str], ...] = (
    # Children before parents (foreign keys are also deferred to the end of the transaction, so the order is for
    # clarity, not correctness).
    ("evidence_uses", f"batch_id IN ({_BATCHES}) OR receipt_id IN ({_RECEIPTS}) OR assessment_id IN"
                      f" (SELECT id FROM evidence_assessments WHERE batch_id IN ({_BATCHES})"
                      f" OR session_id IN ({_SESSIONS}))"),
    ("use_receipt_batches", f"batch_id IN ({_BATCHES}) OR receipt_id IN ({_RECEIPTS})"),
    ("evidence_assessments", f"batch_id IN ({_BATCHES}) OR session_id IN ({_SESSIONS})"),
    ("use_receipts", _NS),
    ("retrieval_batches", _NS),
    ("memory_use_stats", _NS),
    ("graph_projection", f"event_id IN ({_EVENTS}) OR batch_id IN"
                         " (SELECT id FROM graph_batches WHERE namespace_id = :ns)"),
    ("graph_fact_events", f"fact_id IN ({_FACTS}) OR event_id IN ({_EVENTS})"),
    ("graph_fts", "rowid IN (SELECT id FROM graph_nodes WHERE namespace_id = :ns)"),
    ("graph_facts", _NS),
    ("graph_edges", _NS),
    ("graph_aliases", _NS),
    ("graph_nodes", _NS),
    ("graph_batches", _NS),
    ("event_merges", _NS),
    ("event_shape_prefix", f"event_id IN ({_EVENTS})"),
    ("event_shapes", f"event_id IN ({_EVENTS})"),
    ("tombstones", _NS),
    ("event_sources", f"event_id IN ({_EVENTS})"),
    ("event_fts", f"rowid IN ({_EVENTS})"),
    ("events", _NS),
    ("embedding_requests", _NS),
    ("embedding_cursors", _NS),
    ("embeddings", _NS),
    ("context_layers", _NS),
    ("context_nodes", _NS),
    ("context_sessions", _NS),
    ("jobs", _NS),
    ("erasures", _NS),
    ("imports", _NS),
    ("message_fts", "rowid IN (SELECT id FROM messages WHERE namespace_id = :ns)"),
    ("messages", _NS),
    ("turns", _NS),
    ("blocks", _NS),
    ("sessions", _NS),
    ("audit_log", _NS),
    ("namespaces", "id = :ns"),
)


async def _drop_delete_guards(conn: Connection, tables: set[str]) -> list[str]:
    """Drop the ``BEFORE DELETE`` triggers of ``tables``; their SQL, to create them again."""
    rows = await conn.execute_fetchall("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'")
    kept = []
    for row in rows:
        if row["tbl_name"] in tables and "BEFORE DELETE" in " ".join(str(row["sql"]).upper().split()):
            kept.append(str(row["sql"]))
            await conn.execute(f'DROP TRIGGER "{row["name"]}"')
    return kept


async def delete_namespace(db: Database, name: str, actor: Actor) -> dict[str, Any]:
    """Delete every row of namespace ``name``; the row counts per table (tables with none left out)."""
    counts: dict[str, int] = {}
    try:
        async with db.transaction() as conn:
            await conn.execute("PRAGMA secure_delete = ON")
            await conn.execute("PRAGMA defer_foreign_keys = ON")
            ns = await lookup.namespace_key(conn, name)
            if ns is None:
                raise NotFound(f"unknown namespace {name!r}")
            running = await (
                await conn.execute("SELECT COUNT(*) FROM jobs WHERE namespace_id = ? AND status = 'running'", (ns,))
            ).fetchone()
            if running and running[0]:
                raise Invalid(f"{running[0]} job(s) of {name!r} are running; delete it when they are done")
            guards = await _drop_delete_guards(conn, {table for table, _ in DELETES})
            for table, where in DELETES:
                cursor = await conn.execute(f"DELETE FROM {table} WHERE {where}", {"ns": ns})
                if cursor.rowcount:
                    counts[table] = cursor.rowcount
            for sql in guards:
                await conn.execute(sql)
            dangling = await conn.execute_fetchall("PRAGMA foreign_key_check")
            if dangling:
                tables = sorted({str(r[0]) for r in dangling})
                raise Invalid(f"rows of other namespaces still refer to {name!r} ({', '.join(tables)}); "
                                     "nothing was deleted")
            for table in ("message_fts", "event_fts", "graph_fts"):  # merge segments: old ones held the terms
                await conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
            await audit(conn, None, actor, "namespace.deleted", "namespace", name, None, {"counts": counts})
        await db.compact_securely()
    finally:
        async with db.exclusive() as conn:
            await conn.execute("PRAGMA secure_delete = OFF")
    return counts
