"""The reads of the DSH memory service (rpc/service.py) that no other reader makes: how often the agent used each
event, a namespace's active events counted by type, status and session, and its consolidation log."""

from __future__ import annotations

from typing import Any

from stratagate.storage.sqlite import Connection

TOP_SESSIONS = 10


async def uses(conn: Connection, event_ids: list[int]) -> dict[int, tuple[int, str | None]]:
    """Event id → (use receipts naming it, over every session; the newest one's time)."""
    out: dict[int, tuple[int, str | None]] = {}
    for i in range(0, len(event_ids), 500):
        chunk = event_ids[i : i + 500]
        rows = await conn.execute_fetchall(
            "SELECT item_id, SUM(uses), MAX(last_used_at) FROM memory_use_stats"
            f" WHERE kind = 'event' AND item_id IN ({', '.join('?' * len(chunk))}) GROUP BY item_id",
            chunk,
        )
        out.update({int(r[0]): (int(r[1]), r[2]) for r in rows})
    return out


async def counts(conn: Connection, namespace_id: int) -> dict[str, Any]:
    """A namespace's own events: active ones by type and by session (the ``TOP_SESSIONS`` largest), all by status."""
    by_type = await conn.execute_fetchall(
        "SELECT type, COUNT(*) FROM events WHERE namespace_id = ? AND status = 'active' GROUP BY type ORDER BY type",
        (namespace_id,),
    )
    by_status = await conn.execute_fetchall(
        "SELECT status, COUNT(*) FROM events WHERE namespace_id = ? GROUP BY status ORDER BY status", (namespace_id,)
    )
    sessions = await conn.execute_fetchall(
        "SELECT s.key, COUNT(*) AS n FROM events e JOIN sessions s ON s.id = e.session_id"
        " WHERE e.namespace_id = ? AND e.status = 'active' GROUP BY e.session_id ORDER BY n DESC, s.key LIMIT ?",
        (namespace_id, TOP_SESSIONS),
    )
    return {
        "by_type": {str(r[0]): int(r[1]) for r in by_type},
        "by_status": {str(r[0]): int(r[1]) for r in by_status},
        "top_sessions": [(str(r[0]), int(r[1])) for r in sessions],
    }


async def merge_log(conn: Connection, namespace_id: int, limit: int) -> list[dict[str, Any]]:
    """The namespace's consolidation merges, newest first (undone ones too, with their undo time)."""
    rows = await conn.execute_fetchall(
        "SELECT id, survivor_id, merged_id, similarity, run_id, actor, created_at, undone_at FROM event_merges"
        " WHERE namespace_id = ? ORDER BY id DESC LIMIT ?",
        (namespace_id, limit),
    )
    return [dict(r) for r in rows]
