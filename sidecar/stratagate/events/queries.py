"""Event reads for activation (what is admitted on every step): the SQL stays in the events package."""

from __future__ import annotations

import aiosqlite

from stratagate.events.models import EventRow
from stratagate.events.store import _SELECT


async def has_events(conn: aiosqlite.Connection, namespace_id: int) -> bool:
    row = await (await conn.execute("SELECT 1 FROM events WHERE namespace_id = ? LIMIT 1", (namespace_id,))).fetchone()
    return row is not None


async def pinned_events(conn: aiosqlite.Connection, namespace_id: int) -> list[EventRow]:
    """Pinned events that are current or history (active, disputed, superseded), oldest first."""
    rows = await conn.execute_fetchall(
        f"{_SELECT} WHERE e.namespace_id = ? AND e.pinned = 1 AND e.status IN ('active', 'disputed',"
        " 'superseded') ORDER BY e.id",
        (namespace_id,),
    )
    return [EventRow.from_row(r) for r in rows]


async def safety_events(conn: aiosqlite.Connection, namespace_id: int, limit: int) -> list[EventRow]:
    """Active safety-critical events, pinned first, then newest."""
    rows = await conn.execute_fetchall(
        f"{_SELECT} WHERE e.namespace_id = ? AND e.criticality = 'safety' AND e.status = 'active'"
        " ORDER BY e.pinned DESC, e.id DESC LIMIT ?",
        (namespace_id, limit),
    )
    return [EventRow.from_row(r) for r in rows]
