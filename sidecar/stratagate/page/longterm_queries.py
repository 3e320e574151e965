"""The SQL of the Memory page's long-term reads (events, graph, evidence, audit): the storage-facing half of
longterm.py, graph_view.py, evidence_view.py and audit_view.py.

The page is the user's own admin view of one namespace: every query filters on ``namespace_id`` and nothing else
(all sessions, every status), unlike the agent's readers, which apply the session/tier visibility rule."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from stratagate.events import visibility
from stratagate.events.models import EventRow
from stratagate.storage.sqlite import Connection

_EVENT_SELECT = (
    "SELECT e.*, s.key AS session_key, o.name AS namespace_name, o.user_tier AS owner_user_tier"
    " FROM events e LEFT JOIN sessions s ON s.id = e.session_id JOIN namespaces o ON o.id = e.namespace_id"
)


def _marks(values: Iterable[Any]) -> str:
    return ", ".join("?" for _ in values)


# --- events -------------------------------------------------------------------------------------------------------


async def list_events(
    conn: Connection,
    namespace_id: int,
    *,
    match: str | None,
    statuses: list[str],
    event_type: str | None,
    scope: str | None,
    session: str | None,
    limit: int,
    offset: int,
) -> tuple[list[EventRow], int]:
    """One page of the namespace's events passing the filters and the total that pass. With an FTS ``match``:
    BM25 order (ties newest first); without: newest first."""
    where = ["e.namespace_id = ?", f"e.status IN ({_marks(statuses)})"]
    params: list[Any] = [namespace_id, *statuses]
    if event_type is not None:
        where.append("e.type = ?")
        params.append(event_type)
    if scope is not None:
        condition, values = visibility.scope_condition(scope)
        where.append(condition)
        params.extend(values)
    if session is not None:
        where.append("s.key = ?")
        params.append(session)
    cond = " AND ".join(where)
    if match is None:
        total = list(await conn.execute_fetchall(
            f"SELECT count(*) FROM events e LEFT JOIN sessions s ON s.id = e.session_id WHERE {cond}", params
        ))
        rows = await conn.execute_fetchall(
            f"{_EVENT_SELECT} WHERE {cond} ORDER BY e.id DESC LIMIT ? OFFSET ?", (*params, limit, offset)
        )
    else:
        fts = "JOIN event_fts ON event_fts.rowid = e.id"
        total = list(await conn.execute_fetchall(
            f"SELECT count(*) FROM events e {fts} LEFT JOIN sessions s ON s.id = e.session_id"
            f" WHERE event_fts MATCH ? AND {cond}",
            (match, *params),
        ))
        rows = await conn.execute_fetchall(
            f"{_EVENT_SELECT} {fts} WHERE event_fts MATCH ? AND {cond}"
            " ORDER BY bm25(event_fts), e.id DESC LIMIT ? OFFSET ?",
            (match, *params, limit, offset),
        )
    return [EventRow.from_row(r) for r in rows], int(total[0][0])


async def events_by_id(conn: Connection, namespace_id: int, event_ids: Iterable[int]) -> dict[int, EventRow]:
    """The namespace's events among ``event_ids`` (ids of another namespace are left out)."""
    keys = sorted(set(event_ids))
    if not keys:
        return {}
    rows = await conn.execute_fetchall(
        f"{_EVENT_SELECT} WHERE e.namespace_id = ? AND e.id IN ({_marks(keys)})", (namespace_id, *keys)
    )
    return {int(r["id"]): EventRow.from_row(r) for r in rows}


async def predecessors(
    conn: Connection, namespace_id: int, event_ids: list[int]
) -> dict[int, list[EventRow]]:
    """For each event, the events of the namespace it superseded (their ``successor_id`` points at it), oldest
    first."""
    out: dict[int, list[EventRow]] = {k: [] for k in event_ids}
    if not event_ids:
        return out
    rows = await conn.execute_fetchall(
        f"{_EVENT_SELECT} WHERE e.namespace_id = ? AND e.successor_id IN ({_marks(event_ids)}) ORDER BY e.id",
        (namespace_id, *event_ids),
    )
    for r in rows:
        ev = EventRow.from_row(r)
        out[int(ev.successor_id or 0)].append(ev)
    return out


async def event_status_audit(
    conn: Connection, namespace_id: int, public_ids: list[str]
) -> list[tuple[str, str, dict[str, Any] | None]]:
    """(subject id, action, after) of every audit row of these events, oldest first: what their disputes were."""
    if not public_ids:
        return []
    rows = await conn.execute_fetchall(
        "SELECT subject_id, action, after FROM audit_log WHERE namespace_id = ? AND subject_type = 'event'"
        f" AND subject_id IN ({_marks(public_ids)}) ORDER BY id",
        (namespace_id, *public_ids),
    )
    return [(r["subject_id"], r["action"], json.loads(r["after"]) if r["after"] else None) for r in rows]


async def disputes_naming(
    conn: Connection, namespace_id: int, public_ids: list[str]
) -> list[tuple[str, str]]:
    """(disputed event, the event it names) of every ``event.disputed`` row naming one of ``public_ids``."""
    if not public_ids:
        return []
    rows = await conn.execute_fetchall(
        "SELECT subject_id, json_extract(after, '$.note.conflicts_with') AS other FROM audit_log"
        " WHERE namespace_id = ? AND action = 'event.disputed'"
        f" AND json_extract(after, '$.note.conflicts_with') IN ({_marks(public_ids)}) ORDER BY id",
        (namespace_id, *public_ids),
    )
    return [(str(r["subject_id"]), str(r["other"])) for r in rows]


async def event_sources(conn: Connection, namespace_id: int, event_id: int) -> list[dict[str, Any]]:
    """The evidence rows of an event with, for a message, its session, turn, role and time. Rows from another
    namespace (a user-tier memory restated in another project) are left out: their words are that project's."""
    rows = await conn.execute_fetchall(
        "SELECT es.message_id, es.call_id, es.import_id, es.source_ref, es.quote, es.created_at,"
        " m.role, m.created_at AS message_at, t.seq AS turn, s.key AS session"
        " FROM event_sources es LEFT JOIN messages m ON m.id = es.message_id"
        " LEFT JOIN turns t ON t.id = m.turn_id LEFT JOIN sessions s ON s.id = m.session_id"
        " LEFT JOIN imports i ON i.id = es.import_id"
        " WHERE es.event_id = ? AND (m.id IS NULL OR m.namespace_id = ?) AND (i.id IS NULL OR i.namespace_id = ?)"
        " ORDER BY es.id",
        (event_id, namespace_id, namespace_id),
    )
    return [dict(r) for r in rows]


async def merges(conn: Connection, namespace_id: int, event_id: int) -> tuple[int | None, list[int]]:
    """(the survivor this event was merged into, the events merged into this one): live merges only."""
    into = list(await conn.execute_fetchall(
        "SELECT survivor_id FROM event_merges WHERE namespace_id = ? AND merged_id = ? AND undone_at IS NULL"
        " ORDER BY id DESC LIMIT 1",
        (namespace_id, event_id),
    ))
    merged = await conn.execute_fetchall(
        "SELECT merged_id FROM event_merges WHERE namespace_id = ? AND survivor_id = ? AND undone_at IS NULL"
        " ORDER BY id",
        (namespace_id, event_id),
    )
    return (int(into[0][0]) if into else None), [int(r[0]) for r in merged]


# --- audit --------------------------------------------------------------------------------------------------------


async def audit_entries(
    conn: Connection,
    namespace_id: int,
    *,
    subject: str | None = None,
    actor: str | None = None,
    before_id: int | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """The namespace's audit rows, newest first (``before_id``: only older ones), as stored."""
    where = ["namespace_id = ?"]
    params: list[Any] = [namespace_id]
    for column, value in (("subject_id", subject), ("actor", actor)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if before_id is not None:
        where.append("id < ?")
        params.append(before_id)
    rows = await conn.execute_fetchall(
        "SELECT id, at, actor, action, subject_type, subject_id, before, after FROM audit_log"
        f" WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?",
        (*params, limit),
    )
    return [dict(r) for r in rows]


# --- graph --------------------------------------------------------------------------------------------------------


async def graph_nodes(conn: Connection, namespace_id: int, match: str | None) -> list[dict[str, Any]]:
    """The namespace's nodes (with an FTS ``match``: only those it finds), oldest first."""
    if match is None:
        rows = await conn.execute_fetchall(
            "SELECT id, name, kind, category FROM graph_nodes WHERE namespace_id = ? ORDER BY id", (namespace_id,)
        )
    else:
        rows = await conn.execute_fetchall(
            "SELECT n.id, n.name, n.kind, n.category FROM graph_fts JOIN graph_nodes n ON n.id = graph_fts.rowid"
            " WHERE graph_fts MATCH ? AND n.namespace_id = ? ORDER BY n.id",
            (match, namespace_id),
        )
    return [dict(r) for r in rows]


async def graph_facts(conn: Connection, namespace_id: int) -> list[dict[str, Any]]:
    """Every fact of the namespace with its edge's destination, oldest first."""
    rows = await conn.execute_fetchall(
        "SELECT f.*, e.dst_id AS object_id FROM graph_facts f LEFT JOIN graph_edges e ON e.id = f.edge_id"
        " WHERE f.namespace_id = ? ORDER BY f.id",
        (namespace_id,),
    )
    return [dict(r) for r in rows]


async def fact_event_links(conn: Connection, namespace_id: int) -> dict[int, list[int]]:
    """For each fact of the namespace, the events that support or end it, in link order."""
    rows = await conn.execute_fetchall(
        "SELECT l.fact_id, l.event_id FROM graph_fact_events l JOIN graph_facts f ON f.id = l.fact_id"
        " WHERE f.namespace_id = ? ORDER BY l.created_at, l.event_id",
        (namespace_id,),
    )
    out: dict[int, list[int]] = {}
    for r in rows:
        ids = out.setdefault(int(r["fact_id"]), [])
        if int(r["event_id"]) not in ids:
            ids.append(int(r["event_id"]))
    return out


# --- evidence -----------------------------------------------------------------------------------------------------


async def receipts(
    conn: Connection, namespace_id: int, session: str | None, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    """Use receipts of the namespace (one session's, when given), newest first, and how many there are."""
    cond = "r.namespace_id = ?"
    params: list[Any] = [namespace_id]
    if session is not None:
        cond += " AND s.key = ?"
        params.append(session)
    base = "FROM use_receipts r JOIN sessions s ON s.id = r.session_id"
    total = list(await conn.execute_fetchall(f"SELECT count(*) {base} WHERE {cond}", params))
    rows = await conn.execute_fetchall(
        f"SELECT r.id, r.batch_id, r.evidence_refs, r.result, r.turn, r.created_at, s.key AS session {base}"
        f" WHERE {cond} ORDER BY r.id DESC LIMIT ? OFFSET ?",
        (*params, limit, offset),
    )
    return [dict(r) for r in rows], int(total[0][0])


async def assessments(
    conn: Connection, namespace_id: int, session: str | None, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    """memory_assess verdicts on the namespace's retrieval batches (one session's, when given), newest first."""
    cond = "b.namespace_id = ?"
    params: list[Any] = [namespace_id]
    if session is not None:
        cond += " AND s.key = ?"
        params.append(session)
    base = (
        "FROM evidence_assessments a JOIN retrieval_batches b ON b.id = a.batch_id"
        " JOIN sessions s ON s.id = a.session_id"
    )
    total = list(await conn.execute_fetchall(f"SELECT count(*) {base} WHERE {cond}", params))
    rows = await conn.execute_fetchall(
        "SELECT a.id, a.batch_id, a.verdict, a.requested_verdict, a.evidence_refs, a.fit, a.missing, a.reason,"
        f" a.next_strategy, a.turn, a.created_at, s.key AS session, b.tool, b.query {base}"
        f" WHERE {cond} ORDER BY a.id DESC LIMIT ? OFFSET ?",
        (*params, limit, offset),
    )
    return [dict(r) for r in rows], int(total[0][0])


async def assessment_verdicts(conn: Connection, assessment_ids: Iterable[int]) -> dict[int, str]:
    keys = sorted(set(assessment_ids))
    if not keys:
        return {}
    rows = await conn.execute_fetchall(
        f"SELECT id, verdict FROM evidence_assessments WHERE id IN ({_marks(keys)})", keys
    )
    return {int(r["id"]): str(r["verdict"]) for r in rows}


async def titles(conn: Connection, namespace_id: int, kind: str, keys: Iterable[int]) -> dict[int, str]:
    """Display titles of refs of one kind in the namespace: event titles, node names, block L0 titles, where a
    message is (facts are rendered by the caller)."""
    keys = sorted(set(keys))
    if not keys:
        return {}
    sql = {
        "evt": "SELECT x.id, x.title FROM events x",
        "nod": "SELECT x.id, x.name FROM graph_nodes x",
        "blk": "SELECT x.id, COALESCE(x.l0_title, 'block ' || x.seq) FROM blocks x",
        # Never a message's words here (it may be a forgotten event's source): where it is.
        "msg": "SELECT x.id, x.role || ' message, turn ' || t.seq FROM messages x JOIN turns t ON t.id = x.turn_id",
    }[kind]
    rows = await conn.execute_fetchall(
        f"{sql} WHERE x.namespace_id = ? AND x.id IN ({_marks(keys)})", (namespace_id, *keys)
    )
    return {int(r[0]): str(r[1]) for r in rows}


# --- ownership ----------------------------------------------------------------------------------------------------

_ELSEWHERE = {
    "evt": "SELECT x.id FROM events x WHERE x.namespace_id <> ?",
    "blk": "SELECT x.id FROM blocks x WHERE x.namespace_id <> ?",
    "msg": "SELECT x.id FROM messages x WHERE x.namespace_id <> ?",
    "nod": "SELECT x.id FROM graph_nodes x WHERE x.namespace_id <> ?",
    "fct": "SELECT x.id FROM graph_facts x WHERE x.namespace_id <> ?",
    "imp": "SELECT x.id FROM imports x WHERE x.namespace_id <> ?",
    "rb": "SELECT x.id FROM retrieval_batches x WHERE x.namespace_id <> ?",
    "rcp": "SELECT x.id FROM use_receipts x WHERE x.namespace_id <> ?",
    "asm": "SELECT x.id FROM evidence_assessments x JOIN retrieval_batches b ON b.id = x.batch_id"
    " WHERE b.namespace_id <> ?",
}
ID_KINDS = tuple(_ELSEWHERE)


async def elsewhere(conn: Connection, namespace_id: int, kind: str, keys: Iterable[int]) -> set[int]:
    """The keys among ``keys`` of rows of that kind (an id prefix) that belong to ANOTHER namespace."""
    wanted = sorted(set(keys))
    if not wanted:
        return set()
    rows = await conn.execute_fetchall(
        f"{_ELSEWHERE[kind]} AND x.id IN ({_marks(wanted)})", (namespace_id, *wanted)
    )
    return {int(r[0]) for r in rows}
