"""Cutting blocks: every N complete turns of a session become one block, sealed in the capture transaction; the
session's open tail (fewer than N turns) becomes one short block when the session goes idle, is closed, or the
sidecar shuts down (blocks/tail.py).

L5/L4/L3 are computed here by code, before any model call; the block starts 'pending' and a
block_summary job asks the model for L0–L2 later. A short block is a block like any other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stratagate import ids
from stratagate.blocks.render import seal_views
from stratagate.blocks.source import ROW_COLUMNS, from_row
from stratagate.jobs.queue import BLOCK_SUMMARY, enqueue
from stratagate.storage.db import AuditRow, audit_rows
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import now_iso


async def _open_turns(conn: Connection, session_id: int) -> list[Any]:
    return list(
        await conn.execute_fetchall(
            "SELECT id, seq FROM turns WHERE session_id = ? AND block_id IS NULL ORDER BY seq", (session_id,)
        )
    )


async def seal(
    conn: Connection,
    namespace_id: int,
    session_id: int,
    block_turns: int,
    count: Callable[[str], int],
    max_attempts: int,
    *,
    tail_reason: str | None = None,
    audits: list[AuditRow] | None = None,
) -> list[int]:
    """Seal the session's open turns in runs of ``block_turns`` and return the new block keys, inside the caller's
    transaction (a turn is sealed once, whoever asks: capture, idle sweep, close, shutdown). Capture seals full runs
    only; a ``tail_reason`` (``idle`` / ``close`` / ``shutdown``) also seals what is left as one short block. With
    ``audits``, the blocks' audit rows are appended there for the caller to write with its own (one statement)."""
    open_turns = await _open_turns(conn, session_id)
    sealed: list[int] = []
    rows: list[AuditRow] = [] if audits is None else audits
    while len(open_turns) >= block_turns or (open_turns and tail_reason is not None):
        run, open_turns = open_turns[:block_turns], open_turns[block_turns:]
        kind = "full" if len(run) == block_turns else tail_reason or "full"
        block_id, row = await _seal_run(conn, namespace_id, session_id, run, count, max_attempts, kind)
        sealed.append(block_id)
        rows.append(row)
    if audits is None:
        await audit_rows(conn, rows)
    return sealed


async def _seal_run(
    conn: Connection,
    namespace_id: int,
    session_id: int,
    run: list[Any],
    count: Callable[[str], int],
    max_attempts: int,
    reason: str,
) -> tuple[int, AuditRow]:
    """One block of ``run`` (consecutive open turns of the session) and its audit row (for the caller to write);
    ``reason`` says why it was cut: ``full``, or ``idle`` / ``close`` / ``shutdown`` for a tail."""
    turn_ids = [r["id"] for r in run]
    marks = ",".join("?" * len(turn_ids))
    rows = await conn.execute_fetchall(
        f"SELECT {ROW_COLUMNS} FROM messages m JOIN turns t ON t.id = m.turn_id"
        f" WHERE m.turn_id IN ({marks}) ORDER BY t.seq, m.position",
        turn_ids,
    )
    views = seal_views([from_row(r) for r in rows], count)
    (seq_row,) = await conn.execute_fetchall(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM blocks WHERE session_id = ?", (session_id,)
    )
    seq = int(seq_row[0])
    cur = await conn.execute(
        "INSERT INTO blocks(namespace_id, session_id, seq, first_turn, last_turn, status, sealed_at,"
        " l5_tokens, l4, l4_tokens, l3, l3_tokens, anchor_level, anchor_pos)"
        " VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, 5, ?)",
        (
            namespace_id,
            session_id,
            seq,
            run[0]["seq"],
            run[-1]["seq"],
            now_iso(),
            views.l5_tokens,
            views.l4,
            views.l4_tokens,
            views.l3,
            views.l3_tokens,
            seq,
        ),
    )
    block_id = int(cur.lastrowid or 0)
    await conn.execute(f"UPDATE turns SET block_id = ? WHERE id IN ({marks})", [block_id, *turn_ids])
    await enqueue(conn, namespace_id, BLOCK_SUMMARY, block_id, max_attempts)
    detail: dict[str, Any] = {
        "seq": seq,
        "turns": [run[0]["seq"], run[-1]["seq"]],
        "status": "pending",
        "tokens": {"l5": views.l5_tokens, "l4": views.l4_tokens, "l3": views.l3_tokens},
    }
    if reason != "full":
        detail["tail"] = reason
    return block_id, (namespace_id, "capture", "block.sealed", "block", ids.make("blk", block_id), None, detail)
