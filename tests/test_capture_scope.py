"""A capture reads its namespace, session, turn count, open turns and duplicate receipt in one statement
(storage/lookup.py ``capture_scope``) and seals only when the open turns make a full block: these pin what that
statement must agree with (the rows as stored, whatever earlier settings or sessions left behind)."""

from __future__ import annotations

import json

from stratagate.capture.models import CaptureParams
from stratagate.capture.store import _capture, capture_turn
from stratagate.config import Settings
from stratagate.safety.secrets import redact_value, secret_key
from stratagate.storage.db import Database
from stratagate.storage.lookup import capture_scope
from stratagate.storage.sqlite import on_thread


def _turn(namespace: str, session: str, receipt: str) -> CaptureParams:
    return CaptureParams(namespace=namespace, session=session, receipt=receipt, user=f"text of {receipt}")


async def _blocks(db: Database, session: str) -> list[tuple[int, int]]:
    rows = await db.reader.execute_fetchall(
        "SELECT b.first_turn, b.last_turn FROM blocks b JOIN sessions s ON s.id = b.session_id WHERE s.key = ?"
        " ORDER BY b.seq",
        (session,),
    )
    return [(int(r[0]), int(r[1])) for r in rows]


async def test_open_turns_left_by_a_larger_block_size_are_sealed_by_the_next_capture(db: Database) -> None:
    for i in range(1, 5):  # four open turns: under the block size of 6
        result = await capture_turn(db, Settings(db=db.path, block_turns=6), _turn("ns", "s", f"r{i}"), len)
        assert result.sealed_block_ids == []
    smaller = Settings(db=db.path, block_turns=3)
    fifth = await capture_turn(db, smaller, _turn("ns", "s", "r5"), len)
    assert len(fifth.sealed_block_ids) == 1  # five open turns: one full run of three, two stay open
    assert await _blocks(db, "s") == [(1, 3)]
    sixth = await capture_turn(db, smaller, _turn("ns", "s", "r6"), len)
    assert len(sixth.sealed_block_ids) == 1
    assert await _blocks(db, "s") == [(1, 3), (4, 6)]


async def test_scope_reads_ids_counts_and_receipts_as_stored(db: Database) -> None:
    settings = Settings(db=db.path, block_turns=4)
    first = await capture_turn(db, settings, _turn("ns", "a", "r1"), len)
    await capture_turn(db, settings, _turn("ns", "a", "r2"), len)
    # A receipt is unique in its namespace: resent from another session it is still the same turn.
    again = await capture_turn(db, settings, _turn("ns", "b", "r1"), len)
    assert again.duplicate and again.turn_id == first.turn_id
    # The same receipt in another namespace is another turn; a new session there starts at seq 1.
    other = await capture_turn(db, settings, _turn("other", "a", "r1"), len)
    assert not other.duplicate and other.turn_id != first.turn_id
    async with db.transaction() as conn:
        a = await on_thread(conn, lambda raw: capture_scope(raw, "ns", "a", "r3"))
        assert (a.turn_count, a.open_turns, a.turn) == (2, 2, None)
        assert a.session == await db.scalar("SELECT id FROM sessions WHERE key = 'a' AND namespace_id = ?",
                                            (a.namespace,))
        dup = await on_thread(conn, lambda raw: capture_scope(raw, "ns", "new-session", "r2"))
        assert dup.session is None and dup.namespace == a.namespace and dup.turn is not None
        missing = await on_thread(conn, lambda raw: capture_scope(raw, "nowhere", "a", "r1"))
        assert (missing.namespace, missing.session, missing.turn_count, missing.open_turns, missing.turn) == (
            None, None, 0, 0, None)
    seqs = await db.reader.execute_fetchall(
        "SELECT n.name, s.key, t.seq FROM turns t JOIN sessions s ON s.id = t.session_id"
        " JOIN namespaces n ON n.id = t.namespace_id ORDER BY t.id"
    )
    assert [tuple(r) for r in seqs] == [("ns", "a", 1), ("ns", "a", 2), ("other", "a", 1)]


async def test_the_turns_audit_row_is_redacted_as_audit_rows_would_redact_it(db: Database) -> None:
    # The plain capture writes its audit row without redact_value's walk: its names are redacted by the params'
    # validation and its keys are not secret-ish. Pinned here: the row is what the walk would have made of it.
    key = "ghp_" + "A1b2C3d4" * 4 + "zZ9y"
    params = _turn("ns", f"session {key}", f"receipt {key}")
    result = await capture_turn(db, Settings(db=db.path), params, len)
    (after,) = await db.reader.execute_fetchall(
        "SELECT after FROM audit_log WHERE action = 'turn.captured' AND subject_id = ?", (result.turn_id,)
    )
    stored = json.loads(after[0])
    assert key not in after[0] and "[secret:" in stored["receipt"] and "[secret:" in stored["session"]
    raw = {"session": f"session {key}", "seq": 1, "receipt": f"receipt {key}", "messages": 1}
    assert stored == redact_value(raw)
    assert not any(secret_key(k) for k in raw)


async def test_many_captures_in_one_caller_transaction_write_what_capture_turn_writes(db: Database) -> None:
    # The bulk path (bench/scale_build.py): the capture's transaction body inside the caller's transaction.
    settings = Settings(db=db.path, block_turns=2)
    async with db.transaction() as conn:
        results = [await _capture(conn, settings, _turn("ns", "s", f"r{i}"), len) for i in (1, 2, 3)]
        again = await _capture(conn, settings, _turn("ns", "s", "r2"), len)
    assert [len(r.sealed_block_ids) for r in results] == [0, 1, 0]
    assert again.duplicate and again.turn_id == results[1].turn_id
    assert await _blocks(db, "s") == [(1, 2)]
    rows = await db.reader.execute_fetchall(
        "SELECT t.seq, m.content, f.terms IS NOT NULL FROM turns t JOIN messages m ON m.turn_id = t.id"
        " LEFT JOIN message_fts f ON f.rowid = m.id ORDER BY t.seq"
    )
    assert [tuple(r) for r in rows] == [(i, f"text of r{i}", 1) for i in (1, 2, 3)]
