"""Event reads for activation (what is admitted on every step): the SQL stays in the events package. Every read
applies the one visibility rule (events/visibility.py): the viewer's namespace and session, plus the user tier."""

from __future__ import annotations

from stratagate.events.models import EventRow
from stratagate.events.store import _SELECT
from stratagate.events.visibility import where as visible_where
from stratagate.storage.sqlite import Connection, Raw, on_thread


async def has_events(conn: Connection, namespace_id: int | None, session_id: int | None = None) -> bool:
    """Is any event visible here (the namespace's own, or a user-tier event of another namespace)?"""
    visible, params = visible_where(namespace_id, session_id)
    row = await (await conn.execute(f"SELECT 1 FROM events e WHERE {visible} LIMIT 1", params)).fetchone()
    return row is not None


async def pinned_events(conn: Connection, namespace_id: int | None, session_id: int | None) -> list[EventRow]:
    """Visible pinned events that are current or history (active, disputed, superseded), oldest first."""
    visible, params = visible_where(namespace_id, session_id)
    rows = await conn.execute_fetchall(
        f"{_SELECT} WHERE {visible} AND e.pinned = 1 AND e.status IN ('active', 'disputed', 'superseded')"
        " ORDER BY e.id",
        params,
    )
    return [EventRow.from_row(r) for r in rows]


async def safety_events(
    conn: Connection, namespace_id: int | None, session_id: int | None, limit: int
) -> list[EventRow]:
    """Visible active safety-critical events, pinned first, then newest."""
    visible, params = visible_where(namespace_id, session_id)
    rows = await conn.execute_fetchall(
        f"{_SELECT} WHERE {visible} AND e.criticality = 'safety' AND e.status = 'active'"
        " ORDER BY e.pinned DESC, e.id DESC LIMIT ?",
        (*params, limit),
    )
    return [EventRow.from_row(r) for r in rows]


async def is_visible(
    conn: Connection, namespace_id: int | None, session_id: int | None, event_id: int
) -> bool:
    return await on_thread(conn, lambda raw: is_visible_now(raw, namespace_id, session_id, event_id))


def is_visible_now(raw: Raw, namespace_id: int | None, session_id: int | None, event_id: int) -> bool:
    """``is_visible`` on the connection's thread (storage/sqlite.py ``on_thread``)."""
    visible, params = visible_where(namespace_id, session_id)
    row = raw.execute(f"SELECT 1 FROM events e WHERE e.id = ? AND {visible}", (event_id, *params)).fetchone()
    return row is not None


async def fts_documents(conn: Connection, ids: list[int]) -> dict[int, str]:
    """The search-index documents (``event_fts.terms``) of these events, by id (one statement)."""
    rows = await conn.execute_fetchall(
        f"SELECT rowid, terms FROM event_fts WHERE rowid IN ({', '.join('?' for _ in ids)})", ids
    )
    return {int(r[0]): str(r[1]) for r in rows}
