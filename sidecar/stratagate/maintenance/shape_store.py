"""The SQL of incremental consolidation: event shapes and their prefix index, the sweep's scan of changed events,
candidates by index, and each step's cursor (``maintenance_cursors``). Mutations run in the caller's transaction."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from stratagate.maintenance.shapes import Shape, size_bounds
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import now_iso

EVENT_COLUMNS = (
    "id, namespace_id, type, scope, session_id, time_status, summary, narrative, fingerprint, pinned, updated_at"
)


async def cursor(conn: Connection, step: str) -> dict[str, Any]:
    rows = list(await conn.execute_fetchall("SELECT state FROM maintenance_cursors WHERE step = ?", (step,)))
    return dict(json.loads(rows[0][0])) if rows else {}


async def set_cursor(conn: Connection, step: str, state: dict[str, Any]) -> None:
    await conn.execute(
        "INSERT INTO maintenance_cursors(step, state, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT(step) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
        (step, json.dumps(state, sort_keys=True), now_iso()),
    )


async def max_event_id(conn: Connection) -> int:
    rows = list(await conn.execute_fetchall("SELECT MAX(id) FROM events"))
    return int(rows[0][0] or 0)


async def changed_events(conn: Connection, pinned: int, after: int, upto: int, since: str | None,
                         limit: int) -> list[sqlite3.Row]:
    """Events with ``after < id <= upto`` of one pinned side changed since ``since`` (all when None), in id order:
    the current ones to shape and compare, the others to drop from the index."""
    return list(await conn.execute_fetchall(
        f"SELECT {EVENT_COLUMNS}, status FROM events WHERE id > ? AND id <= ? AND pinned = ?"
        " AND (? IS NULL OR updated_at >= ?) ORDER BY id LIMIT ?",
        (after, upto, pinned, since, since, limit),
    ))


async def drop_shapes(conn: Connection, event_id: int) -> None:
    await conn.execute("DELETE FROM event_shape_prefix WHERE event_id = ?", (event_id,))
    await conn.execute("DELETE FROM event_shapes WHERE event_id = ?", (event_id,))


async def put_shapes(conn: Connection, event_id: int, shapes: list[Shape]) -> None:
    """The event's shapes, replacing what an older version of its text left."""
    await drop_shapes(conn, event_id)
    await conn.executemany(
        "INSERT INTO event_shapes(event_id, field, bucket, size, words) VALUES (?, ?, ?, ?, ?)",
        [(event_id, s.field, s.bucket, s.size, " ".join(sorted(s.words))) for s in shapes],
    )
    await conn.executemany(
        "INSERT OR IGNORE INTO event_shape_prefix(bucket, token, event_id, field) VALUES (?, ?, ?, ?)",
        [(s.bucket, token, event_id, s.field) for s in shapes for token in s.prefix],
    )


async def near_candidates(conn: Connection, shape: Shape, event_id: int) -> list[sqlite3.Row]:
    """Current events whose shape shares ``shape``'s bucket, a prefix word and a possible size: (id, pinned, words)."""
    low, high = size_bounds(shape.size)
    marks = ", ".join("?" * len(shape.prefix))
    return list(await conn.execute_fetchall(
        f"SELECT DISTINCT s.event_id AS id, e.pinned AS pinned, s.words AS words FROM event_shape_prefix p"
        f" JOIN event_shapes s ON s.event_id = p.event_id AND s.field = p.field"
        f" JOIN events e ON e.id = p.event_id"
        f" WHERE p.bucket = ? AND p.token IN ({marks}) AND p.event_id <> ? AND s.size BETWEEN ? AND ?"
        f" AND e.status = 'active'",
        (shape.bucket, *shape.prefix, event_id, low, high),
    ))


async def exact_candidates(conn: Connection, row: Any) -> list[sqlite3.Row]:
    """Current events of the namespace with the same fingerprint (any size of text)."""
    return list(await conn.execute_fetchall(
        f"SELECT {EVENT_COLUMNS} FROM events WHERE namespace_id = ? AND fingerprint = ? AND status = 'active'"
        " AND id <> ?",
        (row["namespace_id"], row["fingerprint"], row["id"]),
    ))


async def stored_shapes(conn: Connection, event_id: int) -> list[sqlite3.Row]:
    return list(await conn.execute_fetchall(
        "SELECT field, bucket, size, words FROM event_shapes WHERE event_id = ? ORDER BY field", (event_id,)
    ))


async def prefix_of(conn: Connection, event_id: int, field: int) -> tuple[str, ...]:
    rows = await conn.execute_fetchall(
        "SELECT token FROM event_shape_prefix WHERE event_id = ? AND field = ?", (event_id, field)
    )
    return tuple(str(r[0]) for r in rows)


async def event_row(conn: Connection, event_id: int) -> sqlite3.Row | None:
    rows = list(await conn.execute_fetchall(f"SELECT {EVENT_COLUMNS}, status FROM events WHERE id = ?", (event_id,)))
    return rows[0] if rows else None
