"""The one place that turns namespace and session names into row ids (and creates the rows on a write).

Every read below starts from a namespace id. ``conn`` is any connection: the reader, or the writer inside the
caller's transaction (then the answer is consistent with what that transaction sees).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from stratagate.errors import NotFound
from stratagate.storage.db import Database
from stratagate.storage.sqlite import Connection, Raw, on_thread
from stratagate.timeutil import now_iso


# One call each (execute_fetchall): every statement is a hand-off to the connection's thread, and these run on
# every request.
async def namespace_key(conn: Connection, name: str) -> int | None:
    rows = await conn.execute_fetchall("SELECT id FROM namespaces WHERE name = ?", (name,))
    return next((int(r[0]) for r in rows), None)


async def session_key(conn: Connection, namespace_id: int | None, key: str | None) -> int | None:
    if namespace_id is None or key is None:
        return None
    rows = await conn.execute_fetchall(
        "SELECT id FROM sessions WHERE namespace_id = ? AND key = ?", (namespace_id, key)
    )
    return next((int(r[0]) for r in rows), None)


async def scope_keys(conn: Connection, namespace: str, session: str | None) -> tuple[int | None, int | None]:
    """The namespace and session ids, None where the row does not exist (yet); one statement (recall asks at every
    step)."""
    rows = await conn.execute_fetchall(
        "SELECT n.id, s.id FROM namespaces n LEFT JOIN sessions s ON s.namespace_id = n.id AND s.key = ?"
        " WHERE n.name = ?",
        (session, namespace),
    )
    return next(((int(r[0]), None if r[1] is None else int(r[1])) for r in rows), (None, None))


async def namespace_name(conn: Connection, namespace_id: int) -> str | None:
    row = await (await conn.execute("SELECT name FROM namespaces WHERE id = ?", (namespace_id,))).fetchone()
    return None if row is None else str(row[0])


async def all_namespace_ids(conn: Connection) -> list[int]:
    return [int(r[0]) for r in await conn.execute_fetchall("SELECT id FROM namespaces ORDER BY id")]


async def namespace_id(db: Database, name: str) -> int:
    """The namespace's id; -32004 when nothing was ever stored in it."""
    key = await namespace_key(db.reader, name)
    if key is None:
        raise NotFound(f"unknown namespace {name!r}: no turn has been captured in it yet")
    return key


async def session_id(db: Database, ns_id: int, key: str) -> int | None:
    return await session_key(db.reader, ns_id, key)


async def ensure_namespace(conn: Connection, name: str) -> int:
    """The namespace's id, creating the row (inside the caller's write transaction) when it is new."""
    return await on_thread(conn, lambda raw: ensure_namespace_now(raw, name))


async def ensure_session(conn: Connection, namespace_id: int, key: str) -> tuple[int, int]:
    """(session id, turns captured so far), creating the row (inside the caller's write transaction) when new."""
    return await on_thread(conn, lambda raw: ensure_session_now(raw, namespace_id, key))


def ensure_namespace_now(raw: Raw, name: str) -> int:
    """``ensure_namespace`` on the writer's thread (storage/sqlite.py ``on_thread``). Looked up first: the row
    almost always exists, and then this is one statement."""
    row = raw.execute("SELECT id FROM namespaces WHERE name = ?", (name,)).fetchone()
    if row is not None:
        return int(row[0])
    cur = raw.execute("INSERT INTO namespaces(name, created_at) VALUES (?, ?)", (name, now_iso()))
    return int(cur.lastrowid or 0)


def ensure_session_now(raw: Raw, namespace_id: int, key: str) -> tuple[int, int]:
    """``ensure_session`` on the writer's thread; looked up first, as ``ensure_namespace_now``."""
    row = raw.execute(
        "SELECT id, turn_count FROM sessions WHERE namespace_id = ? AND key = ?", (namespace_id, key)
    ).fetchone()
    if row is not None:
        return int(row[0]), int(row[1])
    cur = raw.execute(
        "INSERT INTO sessions(namespace_id, key, created_at) VALUES (?, ?, ?)", (namespace_id, key, now_iso())
    )
    return int(cur.lastrowid or 0), 0


@dataclass(frozen=True)
class CaptureScope:
    """What a capture needs to know before it writes: the ids that exist (None: not yet), the session's turn count
    and open (not yet sealed) turns, and the turn its receipt already names (None: a new turn)."""

    namespace: int | None
    session: int | None
    turn_count: int
    open_turns: int
    turn: int | None


def capture_scope(raw: Raw, namespace: str, session: str, receipt: str) -> CaptureScope:
    """On the writer's thread, inside the capture's transaction: one statement for the usual capture (namespace and
    session exist): their ids, the session's turn count and open turns, and a turn already stored under ``receipt``.
    ``ensure_namespace_now``/``ensure_session_now`` create what is missing."""
    row = raw.execute(
        "SELECT n.id, s.id, s.turn_count,"
        " (SELECT COUNT(*) FROM turns o WHERE o.session_id = s.id AND o.block_id IS NULL),"
        " (SELECT t.id FROM turns t WHERE t.namespace_id = n.id AND t.receipt = ?)"
        " FROM namespaces n LEFT JOIN sessions s ON s.namespace_id = n.id AND s.key = ? WHERE n.name = ?",
        (receipt, session, namespace),
    ).fetchone()
    if row is None:
        return CaptureScope(None, None, 0, 0, None)
    return CaptureScope(
        int(row[0]),
        None if row[1] is None else int(row[1]),
        int(row[2] or 0),
        int(row[3] or 0),
        None if row[4] is None else int(row[4]),
    )


async def session_turn_count(conn: Connection, session_id: int) -> int | None:
    return await on_thread(conn, lambda raw: session_turn_count_now(raw, session_id))


def session_turn_count_now(raw: Raw, session_id: int) -> int | None:
    """``session_turn_count`` on the connection's thread (storage/sqlite.py ``on_thread``)."""
    row = raw.execute("SELECT turn_count FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else int(row[0])


async def namespace_user_tier(conn: Connection, namespace_id: int) -> bool | None:
    """Does the namespace share the user tier (migration 9's ``namespaces.user_tier``)? None: no such row."""
    rows = await conn.execute_fetchall("SELECT user_tier FROM namespaces WHERE id = ?", (namespace_id,))
    return next((bool(r[0]) for r in rows), None)  # (one hop to the connection's thread: execute + fetchone is two)


async def set_namespace_user_tier(conn: Connection, namespace_id: int, on: bool) -> bool:
    """Set the namespace's user tier (inside the caller's write transaction); True when it changed."""
    cur = await conn.execute(
        "UPDATE namespaces SET user_tier = ? WHERE id = ? AND user_tier <> ?", (int(on), namespace_id, int(on))
    )
    return cur.rowcount > 0


# --- audit entries (the Memory page's undo) -----------------------------------------------------------------------

UNDONE = "audit.undone"
"""The action of the entry an undo writes (subject ``audit``/``<id of the undone entry>``); page/undo_rules.py."""


async def audit_entry(conn: Connection, entry_id: int) -> dict[str, Any] | None:
    """One audit row as the page shows it (``before``/``after`` parsed), with ``namespace_id``."""
    row = await (
        await conn.execute(
            "SELECT id, namespace_id, at, actor, action, subject_type, subject_id, before, after FROM audit_log"
            " WHERE id = ?",
            (entry_id,),
        )
    ).fetchone()
    if row is None:
        return None
    out = dict(row)
    for key in ("before", "after"):
        out[key] = None if out[key] is None else json.loads(out[key])
    return out


async def audit_undone(conn: Connection, entry_ids: list[int]) -> dict[int, int]:
    """Of ``entry_ids``, the ones already undone: ``{undone entry id: id of the audit.undone entry}``."""
    if not entry_ids:
        return {}
    marks = ", ".join("?" for _ in entry_ids)
    rows = await conn.execute_fetchall(
        f"SELECT id, subject_id FROM audit_log WHERE action = ? AND subject_type = 'audit' AND subject_id IN ({marks})",
        (UNDONE, *[str(i) for i in entry_ids]),
    )
    return {int(r["subject_id"]): int(r["id"]) for r in rows}
