"""turn.capture: one transaction writes the turn, its messages, search terms, any sealed block and audit
(shared with the captures queued beside it: storage/group.py).

What does not depend on the database (redaction, the JSON of tool records, the search documents) is prepared before
the transaction; the transaction's statements then run as one function on the writer's thread (``_body``: one
hand-off, with BEGIN and COMMIT when the group holds only such bodies). A capture that seals a block runs as
``_work`` instead: the turn's statements in one hand-off, then the seal (blocks/seal.py) on the loop.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
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
    Signals,
    StorageError,
    audit_rows,
    on_commit,
    write_audit_rows,
)
from stratagate.storage.group import DEFER
from stratagate.storage.lookup import (  # noqa: F401  (ensure_*: older callers import them from here)
    CaptureScope,
    capture_scope,
    ensure_namespace,
    ensure_namespace_now,
    ensure_session,
    ensure_session_now,
)
from stratagate.storage.sqlite import Connection, Raw, on_thread
from stratagate.text.messages import search_text
from stratagate.text.terms import fts_document
from stratagate.timeutil import now_iso, to_iso


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _message_rows(p: CaptureParams, started: str, ended: str) -> list[dict[str, Any]]:
    """user → tool records → assistant: the order in which they happened within the turn.

    Secrets are redacted here, before anything is written: content, tool names, arguments and results.
    """
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


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A capture's rows as they will be written, made before its transaction."""

    p: CaptureParams
    captured_at: str
    started_at: str | None
    ended_at: str | None
    messages: list[tuple[Any, ...]]
    """(role, content, tool_name, tool_call_id, tool_arguments, tool_result, is_error, created_at), in order."""
    documents: list[str]
    """The FTS document of each message."""


def _prepare(p: CaptureParams) -> _Prepared:
    captured_at = now_iso()
    started_at = to_iso(p.started_at) if p.started_at else None
    ended_at = to_iso(p.ended_at) if p.ended_at else None
    started = started_at or captured_at
    rows = _message_rows(p, started, ended_at or started)
    messages = [
        (
            row["role"],
            row["content"],
            row.get("tool_name"),
            row.get("tool_call_id"),
            row.get("tool_arguments"),
            row.get("tool_result"),
            row.get("is_error", 0),
            row["created_at"],
        )
        for row in rows
    ]
    return _Prepared(
        p,
        captured_at,
        started_at,
        ended_at,
        messages,
        [fts_document(search_text(row)) for row in rows],
    )


async def capture_turn(
    db: Database, settings: Settings, p: CaptureParams, count: Callable[[str], int]
) -> CaptureResult:
    place = current_place.get()
    if place is not None:
        await place.wait_turn()  # arrival order, whatever this capture awaited before (capture/order.py)
    try:
        prep = _prepare(p)  # after the wait: captured_at follows the arrival order
        # Group commit: captures queued while a commit is in flight share the next transaction, each in its own
        # savepoint; the answer comes after the COMMIT that holds this turn (acknowledged = on disk).
        done = db.group.submit_body(_body(prep, settings.block_turns), _work(prep, settings, count))
    finally:
        if place is not None:
            place.release()  # queued in arrival order: the next capture may queue behind us
    try:
        return await done
    except (sqlite3.Error, StorageError) as exc:
        raise TurnNotStored(
            f"the turn was NOT stored ({exc}); nothing partial was kept, re-send it with the same receipt"
        ) from exc


async def _capture(
    conn: Connection, settings: Settings, p: CaptureParams, count: Callable[[str], int]
) -> CaptureResult:
    """One capture inside the caller's ``Database.transaction()`` (bench/scale_build.py's bulk path: many turns per
    transaction, no group commit)."""
    return await _work(_prepare(p), settings, count)(conn)


def _result(turn_id: int, duplicate: bool, sealed: list[int]) -> CaptureResult:
    # Our own ids: built without validating them again.
    return CaptureResult.model_construct(
        turn_id=ids.make("turn", turn_id), duplicate=duplicate, sealed_block_ids=[ids.make("blk", b) for b in sealed]
    )


def _body(prep: _Prepared, block_turns: int) -> Callable[[Raw, Signals], Any]:
    """The capture as one function on the writer's thread; DEFER (nothing written) when it seals a block."""

    def body(raw: Raw, signals: Signals) -> Any:
        p = prep.p
        scope = capture_scope(raw, p.namespace, p.session, p.receipt)
        if scope.turn is not None:
            return _result(scope.turn, True, [])
        if scope.open_turns + 1 >= block_turns:
            return DEFER
        turn = _write_turn(raw, prep, scope, signals)
        write_audit_rows(raw, [turn.audit], redacted=True)
        return _result(turn.turn_id, False, [])

    return body


def _work(
    prep: _Prepared, settings: Settings, count: Callable[[str], int]
) -> Callable[[Connection], Awaitable[CaptureResult]]:
    """The capture on the loop (any capture; the one way for a sealing one): the turn's statements in one hand-off,
    then the seal in the same transaction."""

    async def work(conn: Connection) -> CaptureResult:
        p = prep.p
        signals: Signals = {}

        def write(raw: Raw) -> _Turn | int:
            scope = capture_scope(raw, p.namespace, p.session, p.receipt)
            return scope.turn if scope.turn is not None else _write_turn(raw, prep, scope, signals)

        turn = await on_thread(conn, write)
        if isinstance(turn, int):
            return _result(turn, True, [])
        for topic, arg in signals:
            on_commit(conn, topic, arg)
        audits: list[AuditRow] = [turn.audit]  # the turn's row, then those of the blocks it seals: one statement
        sealed: list[int] = []
        # With this turn the session's open turns make a full block: seal it (the count was read in this transaction).
        if turn.scope.open_turns + 1 >= settings.block_turns:
            sealed = await seal(
                conn, turn.namespace_id, turn.session_id, settings.block_turns, _counted_once(count),
                settings.job_max_attempts, audits=audits,
            )
        await audit_rows(conn, audits)
        return _result(turn.turn_id, False, sealed)

    return work


@dataclass(frozen=True, slots=True)
class _Turn:
    """A turn just written, inside its transaction."""

    scope: CaptureScope
    namespace_id: int
    session_id: int
    turn_id: int
    audit: AuditRow
    """Its audit row, for the caller to write (with those of the blocks it seals)."""


def _write_turn(raw: Raw, prep: _Prepared, scope: CaptureScope, signals: Signals) -> _Turn:
    """The turn, its messages and their search rows, on the writer's thread inside the capture's transaction."""
    p = prep.p
    namespace_id = scope.namespace if scope.namespace is not None else ensure_namespace_now(raw, p.namespace)
    if scope.session is not None:
        session_id, turn_count = scope.session, scope.turn_count
    else:
        session_id, turn_count = ensure_session_now(raw, namespace_id, p.session)
    seq = turn_count + 1
    raw.execute("UPDATE sessions SET turn_count = ? WHERE id = ?", (seq, session_id))
    cur = raw.execute(
        "INSERT INTO turns(namespace_id, session_id, seq, receipt, started_at, ended_at, end_reason, captured_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            namespace_id,
            session_id,
            seq,
            p.receipt,
            prep.started_at,
            prep.ended_at,
            p.end_reason,
            prep.captured_at,
        ),
    )
    turn_id = int(cur.lastrowid or 0)
    signals[(ITEMS_ADDED, namespace_id)] = None  # the new messages get vectors after the commit (search/vectors.py)
    signals[(TURN_CAPTURED, session_id)] = None  # shutdown seals this session's open tail (blocks/tail.py)
    # Each message's row id from its own INSERT (no read-back), then all search rows in one executemany: an FTS5
    # insert by value costs a third of an INSERT ... SELECT finding the message again.
    insert = (
        "INSERT INTO messages(namespace_id, session_id, turn_id, position, role, content, tool_name,"
        " tool_call_id, tool_arguments, tool_result, is_error, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    message_ids = [
        raw.execute(insert, (namespace_id, session_id, turn_id, position, *row)).lastrowid
        for position, row in enumerate(prep.messages)
    ]
    raw.executemany(
        "INSERT INTO message_fts(rowid, terms) VALUES (?, ?)", list(zip(message_ids, prep.documents, strict=True))
    )
    # Written as it is (``redacted``): the session and receipt are Names, redacted when the params were validated
    # (protocol/types.py), and the keys are not secret-ish (tests/test_capture_scope.py pins both).
    after = {"session": p.session, "seq": seq, "receipt": p.receipt, "messages": len(prep.messages)}
    audit = (namespace_id, "capture", "turn.captured", "turn", ids.make("turn", turn_id), None, after)
    return _Turn(scope, namespace_id, session_id, turn_id, audit)
