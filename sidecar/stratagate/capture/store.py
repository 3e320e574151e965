"""turn.capture: one transaction writes the turn, its messages, search terms, any sealed block and audit
(shared with the captures queued beside it: storage/group.py)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

from stratagate import ids
from stratagate.blocks.seal import seal
from stratagate.capture.models import CaptureParams, CaptureResult
from stratagate.capture.order import current_place
from stratagate.config import Settings
from stratagate.errors import STORAGE_ERROR, DomainError
from stratagate.safety.secrets import redact_text, redact_value
from stratagate.storage.db import (
    ITEMS_ADDED,
    TURN_CAPTURED,
    AuditRow,
    Database,
    StorageError,
    audit_rows,
    on_commit,
)
from stratagate.storage.lookup import capture_scope, ensure_namespace, ensure_session
from stratagate.storage.sqlite import Connection
from stratagate.text.messages import search_text
from stratagate.text.terms import fts_document
from stratagate.timeutil import now_iso, to_iso


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _message_rows(p: CaptureParams, captured_at: str) -> list[dict[str, Any]]:
    """user → tool records → assistant: the order in which they happened within the turn.

    Secrets are redacted here, before anything is written: content, tool names, arguments and results.
    """
    started = to_iso(p.started_at) if p.started_at else captured_at
    ended = to_iso(p.ended_at) if p.ended_at else started
    rows: list[dict[str, Any]] = []
    if p.user:
        rows.append({"role": "user", "content": redact_text(p.user), "created_at": started})
    for tool in p.tools:
        rows.append(
            {
                "role": "tool",
                "content": "",
                "tool_name": redact_text(tool.name),
                "tool_call_id": redact_text(tool.call_id) if tool.call_id else tool.call_id,
                "tool_arguments": _json(redact_value(tool.arguments)),
                "tool_result": _json(redact_value(tool.result)),
                "is_error": int(tool.is_error),
                "created_at": ended,
            }
        )
    if p.assistant:
        rows.append({"role": "assistant", "content": redact_text(p.assistant), "created_at": ended})
    return rows


def _counted_once(count: Callable[[str], int]) -> Callable[[str], int]:
    """Exact counts, each text counted once per capture (a block's L3/L4 views are often the same text as L4/L5)."""
    seen: dict[str, int] = {}

    def counted(text: str) -> int:
        if text not in seen:
            seen[text] = count(text)
        return seen[text]

    return counted


class TurnNotStored(DomainError):
    """A capture the database refused (disk full, the size cap, an I/O error): nothing of the turn was kept."""

    code = STORAGE_ERROR


async def capture_turn(
    db: Database, settings: Settings, p: CaptureParams, count: Callable[[str], int]
) -> CaptureResult:
    place = current_place.get()
    if place is not None:
        await place.wait_turn()  # arrival order, whatever this capture awaited before (capture/order.py)
    # Group commit: captures queued while a commit is in flight share the next transaction, each in its own
    # savepoint; the answer comes after the COMMIT that holds this turn (acknowledged = on disk).
    done = db.group.submit(lambda conn: _capture(conn, settings, p, count))
    if place is not None:
        place.release()  # queued in arrival order: the next capture may queue behind us
    try:
        return await done
    except (sqlite3.Error, StorageError) as exc:
        raise TurnNotStored(
            f"the turn was NOT stored ({exc}); nothing partial was kept, re-send it with the same receipt"
        ) from exc


async def _insert_messages(
    conn: Connection, namespace_id: int, session_id: int, turn_id: int, rows: list[dict[str, Any]]
) -> None:
    # Two statements for all the turn's messages, however many: executemany runs each once per row in SQLite,
    # without a round through the connection per row. The FTS row finds its message by (turn_id, position).
    await conn.executemany(
        "INSERT INTO messages(namespace_id, session_id, turn_id, position, role, content, tool_name,"
        " tool_call_id, tool_arguments, tool_result, is_error, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                namespace_id,
                session_id,
                turn_id,
                position,
                row["role"],
                row["content"],
                row.get("tool_name"),
                row.get("tool_call_id"),
                row.get("tool_arguments"),
                row.get("tool_result"),
                row.get("is_error", 0),
                row["created_at"],
            )
            for position, row in enumerate(rows)
        ],
    )
    await conn.executemany(
        "INSERT INTO message_fts(rowid, terms) SELECT id, ? FROM messages WHERE turn_id = ? AND position = ?",
        [(fts_document(search_text(row)), turn_id, position) for position, row in enumerate(rows)],
    )


async def _capture(
    conn: Connection, settings: Settings, p: CaptureParams, count: Callable[[str], int]
) -> CaptureResult:
    # Namespace, session, turn count and a duplicate receipt in one statement; rows are created only when missing.
    scope = await capture_scope(conn, p.namespace, p.session, p.receipt)
    if scope.turn is not None:
        return CaptureResult(turn_id=ids.make("turn", scope.turn), duplicate=True, sealed_block_ids=[])
    namespace_id = scope.namespace if scope.namespace is not None else await ensure_namespace(conn, p.namespace)
    if scope.session is not None:
        session_id, turn_count = scope.session, scope.turn_count
    else:
        session_id, turn_count = await ensure_session(conn, namespace_id, p.session)
    seq = turn_count + 1
    captured_at = now_iso()
    await conn.execute("UPDATE sessions SET turn_count = ? WHERE id = ?", (seq, session_id))
    cur = await conn.execute(
        "INSERT INTO turns(namespace_id, session_id, seq, receipt, started_at, ended_at, end_reason, captured_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            namespace_id,
            session_id,
            seq,
            p.receipt,
            to_iso(p.started_at) if p.started_at else None,
            to_iso(p.ended_at) if p.ended_at else None,
            p.end_reason,
            captured_at,
        ),
    )
    turn_id = int(cur.lastrowid or 0)
    on_commit(conn, ITEMS_ADDED, namespace_id)  # the new messages get vectors after the commit (search/vectors.py)
    on_commit(conn, TURN_CAPTURED, session_id)  # shutdown seals this session's open tail (blocks/tail.py)
    rows = _message_rows(p, captured_at)
    await _insert_messages(conn, namespace_id, session_id, turn_id, rows)
    # The turn's audit row and those of the blocks it seals: one statement, in this order.
    audits: list[AuditRow] = [
        (
            namespace_id,
            "capture",
            "turn.captured",
            "turn",
            ids.make("turn", turn_id),
            None,
            {"session": p.session, "seq": seq, "receipt": p.receipt, "messages": len(rows)},
        )
    ]
    sealed: list[int] = []
    # With this turn the session's open turns make a full block: seal it (the count was read in this transaction).
    if scope.open_turns + 1 >= settings.block_turns:
        counted = _counted_once(count)
        sealed = await seal(
            conn, namespace_id, session_id, settings.block_turns, counted, settings.job_max_attempts, audits=audits
        )
    await audit_rows(conn, audits)
    return CaptureResult(
        turn_id=ids.make("turn", turn_id), duplicate=False, sealed_block_ids=[ids.make("blk", b) for b in sealed]
    )
