"""Block reads for activation: the SQL stays in the blocks package."""

from __future__ import annotations

from stratagate.storage.sqlite import Connection


async def has_blocks(conn: Connection, namespace_id: int) -> bool:
    # One hop to the connection's thread (execute + fetchone is two): recall asks this at every step.
    return bool(await conn.execute_fetchall("SELECT 1 FROM blocks WHERE namespace_id = ? LIMIT 1", (namespace_id,)))


async def newest_blocks_elsewhere(
    conn: Connection, namespace_id: int, session_id: int | None, limit: int
) -> list[tuple[int, int]]:
    """(block id, session id) of the namespace's newest blocks outside ``session_id``, newest first."""
    rows = await conn.execute_fetchall(
        "SELECT id, session_id FROM blocks WHERE namespace_id = ? AND session_id IS NOT ? ORDER BY id DESC LIMIT ?",
        (namespace_id, session_id, limit),
    )
    return [(int(r[0]), int(r[1])) for r in rows]
