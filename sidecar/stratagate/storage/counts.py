"""What ``system.info`` reports of the stored data: rows per table and per status, and the schema version."""

from __future__ import annotations

from typing import Any

from stratagate.storage.db import Database

_TOTALS = ("namespaces", "sessions", "turns", "messages")


async def _by(db: Database, sql: str, column: str, zero: tuple[str, ...], named_only: bool = False) -> dict[str, int]:
    """Row counts by ``column``, every name in ``zero`` shown (0 when none); ``named_only`` drops NULL or ''."""
    rows = await db.fetchall(sql)
    return {s: 0 for s in zero} | {r[column]: r["n"] for r in rows if r[column] or not named_only}


async def table_counts(db: Database) -> dict[str, Any]:
    """Row totals of the conversation tables; blocks, events, facts, imports and jobs by status (every status shown,
    0 when none), ready blocks by the source of their summary, and the graph's node total."""
    counts: dict[str, Any] = {}
    for table in _TOTALS:
        counts[table] = int(await db.scalar(f"SELECT COUNT(*) FROM {table}") or 0)
    counts["blocks"] = await _by(
        db, "SELECT status, COUNT(*) AS n FROM blocks GROUP BY status", "status", ("pending", "ready")
    )
    counts["block_views"] = await _by(
        db,
        "SELECT summary_source, COUNT(*) AS n FROM blocks WHERE status = 'ready' GROUP BY summary_source",
        "summary_source",
        ("model", "extractive", "fallback"),
        named_only=True,
    )
    counts["events"] = await _by(
        db,
        "SELECT status, COUNT(*) AS n FROM events GROUP BY status",
        "status",
        ("active", "superseded", "disputed", "forgotten", "archived"),
    )
    counts["graph_nodes"] = int(await db.scalar("SELECT COUNT(*) FROM graph_nodes") or 0)
    counts["graph_facts"] = await _by(
        db,
        "SELECT status, COUNT(*) AS n FROM graph_facts GROUP BY status",
        "status",
        ("active", "superseded", "disputed", "archived"),
    )
    counts["imports"] = await _by(
        db, "SELECT status, COUNT(*) AS n FROM imports GROUP BY status", "status", ("active", "removed")
    )
    counts["jobs"] = await _by(
        db, "SELECT status, COUNT(*) AS n FROM jobs GROUP BY status", "status", ("queued", "running", "done", "failed")
    )
    return counts


async def schema_version(db: Database) -> int:
    """The database file's schema version (``PRAGMA user_version``), read on the reader."""
    return int(await db.scalar("PRAGMA user_version") or 0)
