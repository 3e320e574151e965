"""Reads of captured turns and messages for the layers above (activation, tools): the SQL stays in this package."""

from __future__ import annotations

from stratagate.storage.sqlite import Connection


async def recent_words(conn: Connection, session_id: int, turns: int) -> list[str]:
    """User and assistant text of the session's last ``turns`` captured turns, in order."""
    rows = await conn.execute_fetchall(
        "SELECT m.content FROM messages m WHERE m.turn_id IN"
        " (SELECT id FROM turns WHERE session_id = ? ORDER BY seq DESC LIMIT ?)"
        " AND m.role IN ('user', 'assistant') ORDER BY m.id",
        (session_id, turns),
    )
    return [str(r[0]) for r in rows if r[0]]


async def last_sealed_capture(conn: Connection, session_id: int) -> str | None:
    """When the session's last turn that is sealed into a block was captured (None when none is)."""
    row = await (
        await conn.execute(
            "SELECT MAX(captured_at) FROM turns WHERE session_id = ? AND block_id IS NOT NULL", (session_id,)
        )
    ).fetchone()
    return row[0] if row else None


async def open_turn_count(conn: Connection, session_id: int) -> int:
    """Captured turns of the session not sealed into a block yet (the open tail)."""
    row = await (
        await conn.execute("SELECT COUNT(*) FROM turns WHERE session_id = ? AND block_id IS NULL", (session_id,))
    ).fetchone()
    return int(row[0] or 0) if row else 0
