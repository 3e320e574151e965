"""Team memory's local half: which events are team memories, their team-wide ids, and the outbox.

A team memory is an ordinary event of its project's namespace with ``team_member`` set (migration 17), so recall,
search, the graph, the evidence gate and use receipts work on it unchanged. What this module adds, always inside the
transaction of the change itself:

- a memory admitted with scope ``team`` (or a decision, change, preference or rule of a project whose
  ``team_default`` is on) gets a ``uid`` and a ``create`` operation in ``team_outbox``;
- a status change of a team memory (supersede, forget, restore, dispute, settle) adds a ``status`` operation
  (``on_status``, registered by ``stratagate.wiring``), and an erase an ``erase`` operation;
- changes that came *from* the team server (made inside ``applying_from_server``) add none: they are there already.

The sync (stratagate/team/) pushes the outbox to PostgreSQL and applies what others changed through the same
admission path (events/admit.py) and the same store functions, as the ``system`` actor. An operation carries the
server version this machine last saw of the memory (``base_version``), so the server can tell two machines' concurrent
changes apart from one machine's sequence of them (a dispute, never a silent overwrite).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal, NamedTuple

from stratagate.events.models import EventRow
from stratagate.storage.db import Actor, on_commit
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import now_iso

TEAM_ACTOR: Actor = "system"
"""The actor of every change applied from the team server; its audit rows' note names the uid and the member."""
_applying: ContextVar[bool] = ContextVar("team_applying", default=False)


@contextmanager
def applying_from_server() -> Iterator[None]:
    """Changes made inside come from the team server (team/apply.py): they are there already, none is queued."""
    token = _applying.set(True)
    try:
        yield
    finally:
        _applying.reset(token)

TEAM_CHANGED = "team.changed"
"""on_commit topic: the outbox has a new operation (the sync pushes at once instead of at its next poll)."""
DEFAULT_TYPES = frozenset({"decision", "change", "preference"})
"""What a project's ``team_default`` shares: decisions, changes and preferences, and rules (safety criticality)."""

OpKind = Literal["create", "status", "erase"]


class Stamp(NamedTuple):
    """A memory that came from the team server: its uid, who said it, and the server version applied here."""

    uid: str
    member: str
    version: int


class TeamState(NamedTuple):
    member: str | None
    replica: str
    server: str | None
    pushed_at: str | None
    pulled_at: str | None
    last_error: str | None
    error_at: str | None


async def _rows(conn: Connection, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    return list(await conn.execute_fetchall(sql, params))


async def state(conn: Connection) -> TeamState:
    rows = await _rows(
        conn, "SELECT member, replica, server, pushed_at, pulled_at, last_error, error_at FROM team_state WHERE id = 1")
    return TeamState(*rows[0])


async def configure(conn: Connection, member: str | None, server: str | None) -> None:
    """Record this machine's member id and the (credential-free) server label; None, None: team memory is off."""
    await conn.execute("UPDATE team_state SET member = ?, server = ? WHERE id = 1", (member, server))


async def record_sync(conn: Connection, *, pushed: bool = False, pulled: bool = False,
                      error: str | None = None, cleared: bool = False) -> None:
    """The sync's news: a push or pull done (either clears the last error), an error, or a whole round done after
    an error (``cleared``)."""
    now = now_iso()
    if error is not None:
        await conn.execute("UPDATE team_state SET last_error = ?, error_at = ? WHERE id = 1", (error, now))
        return
    sets = [s for s, on in (("pushed_at = ?", pushed), ("pulled_at = ?", pulled)) if on]
    if cleared and not sets:
        await conn.execute("UPDATE team_state SET last_error = NULL, error_at = NULL WHERE id = 1")
    elif sets:
        await conn.execute(f"UPDATE team_state SET {', '.join(sets)}, last_error = NULL, error_at = NULL WHERE id = 1",
                           [now] * len(sets))


async def member(conn: Connection) -> str | None:
    rows = await _rows(conn, "SELECT member FROM team_state WHERE id = 1")
    return rows[0][0] if rows else None


async def shares_by_default(conn: Connection, namespace_id: int) -> bool:
    rows = await _rows(conn, "SELECT team_default FROM namespaces WHERE id = ?", (namespace_id,))
    return bool(rows and rows[0][0])


def default_project(namespace: str) -> str:
    """The project's name on the team server when none is set: the folder's name of a ``project:<name>:<hash>``
    namespace (the same checkout on two machines), the whole name of another namespace."""
    parts = namespace.split(":")
    return parts[1] if parts[0] == "project" and len(parts) == 3 else namespace


async def project_of(conn: Connection, namespace_id: int) -> str:
    rows = await _rows(conn, "SELECT name, team_project FROM namespaces WHERE id = ?", (namespace_id,))
    name, project = rows[0]
    return project or default_project(name)


async def set_namespace_team(conn: Connection, namespace_id: int, *, default: bool | None = None,
                             project: str | None = None) -> None:
    if default is not None:
        await conn.execute("UPDATE namespaces SET team_default = ? WHERE id = ?", (int(default), namespace_id))
    if project is not None:
        await conn.execute("UPDATE namespaces SET team_project = ? WHERE id = ?", (project or None, namespace_id))


async def namespace_team(conn: Connection, namespace_id: int) -> dict[str, Any]:
    rows = await _rows(
        conn, "SELECT name, team_default, team_project FROM namespaces WHERE id = ?", (namespace_id,))
    name, default, project = rows[0]
    return {"team_default": bool(default), "team_project": project or default_project(name)}


async def shared_namespaces(conn: Connection) -> list[tuple[int, str]]:
    """(namespace id, team project) of every namespace that takes part: project and global ones (a session-mode
    namespace lives for one session)."""
    rows = await _rows(
        conn, "SELECT id, name, team_project FROM namespaces WHERE name NOT LIKE 'session:%' ORDER BY id")
    return [(int(r[0]), r[2] or default_project(r[1])) for r in rows]


# --- links ---------------------------------------------------------------------------------------------------------


async def uids_of(conn: Connection, event_id: int) -> list[tuple[str, int]]:
    rows = await _rows(conn, "SELECT uid, version FROM team_links WHERE event_id = ? ORDER BY uid", (event_id,))
    return [(str(r[0]), int(r[1])) for r in rows]


async def event_of(conn: Connection, uid: str) -> int | None:
    rows = await _rows(conn, "SELECT event_id FROM team_links WHERE uid = ?", (uid,))
    return int(rows[0][0]) if rows else None


async def link(conn: Connection, stamp: Stamp, event_id: int) -> None:
    await conn.execute(
        "INSERT INTO team_links(uid, event_id, member, version) VALUES (?, ?, ?, ?) ON CONFLICT(uid) DO NOTHING",
        (stamp.uid, event_id, stamp.member, stamp.version))


async def saw_version(conn: Connection, uid: str, version: int) -> None:
    await conn.execute("UPDATE team_links SET version = max(version, ?) WHERE uid = ?", (version, uid))


# --- the outbox ----------------------------------------------------------------------------------------------------


async def _queue(conn: Connection, ev: EventRow, uid: str, kind: OpKind, body: dict[str, Any], base: int) -> None:
    await conn.execute(
        "INSERT INTO team_outbox(op_id, namespace_id, uid, kind, body, base_version, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (uuid.uuid4().hex, ev.namespace_id, uid, kind, json.dumps(body, ensure_ascii=False), base, now_iso()))
    on_commit(conn, TEAM_CHANGED, ev.namespace_id)


def content(ev: EventRow, statement: str) -> dict[str, Any]:
    """What the team server keeps of a memory: its redacted texts and typed fields (never its sources: the messages
    it came from stay on the machine that captured them)."""
    return {
        "statement": statement, "title": ev.title, "summary": ev.summary, "narrative": ev.narrative,
        "tags": ev.tags, "quotes": ev.quotes, "participants": ev.participants, "type": ev.type,
        "criticality": ev.criticality, "confidence": ev.confidence, "mentioned_at": ev.mentioned_at,
        "time_original": ev.time_original, "time_status": ev.time_status, "claims": ev.claims, "origin": ev.origin,
    }


async def created(conn: Connection, ev: EventRow, statement: str, stamp: Stamp | None) -> None:
    """A team memory was just inserted: link it, and queue its ``create`` unless it came from the server."""
    if ev.team_member is None:
        return
    if stamp is not None:
        await link(conn, stamp, ev.id)
        return
    uid = uuid.uuid4().hex
    await link(conn, Stamp(uid, ev.team_member, 0), ev.id)
    await _queue(conn, ev, uid, "create", content(ev, statement), 0)


async def merged(conn: Connection, ev: EventRow, stamp: Stamp | None) -> None:
    """A memory from the server restates one this machine has: one local event, both uids linked to it."""
    if stamp is not None:
        await link(conn, stamp, ev.id)


async def on_status(conn: Connection, after: EventRow, actor: Actor) -> None:
    """The status hook (wiring.register_hooks): a team memory's new status goes to the outbox, for each of its uids
    (the successor named by its first uid, when it is a team memory too)."""
    if after.team_member is None or _applying.get():
        return
    successor = None
    if after.status == "superseded" and after.successor_id is not None:
        found = await uids_of(conn, after.successor_id)
        successor = found[0][0] if found else None
    for uid, version in await uids_of(conn, after.id):
        body = {"status": after.status, "prior_status": after.prior_status, "successor_uid": successor}
        await _queue(conn, after, uid, "status", body, version)


async def erased_here(conn: Connection, ev: EventRow, actor: Actor) -> None:
    """An erase of a team memory (erase/): the server removes its text too."""
    if ev.team_member is None or _applying.get():
        return
    for uid, version in await uids_of(conn, ev.id):
        await _queue(conn, ev, uid, "erase", {}, version)


class Op(NamedTuple):
    id: int
    op_id: str
    namespace_id: int
    uid: str
    kind: OpKind
    body: dict[str, Any]
    base_version: int
    created_at: str


async def pending(conn: Connection, limit: int) -> list[Op]:
    rows = await _rows(
        conn, "SELECT id, op_id, namespace_id, uid, kind, body, base_version, created_at FROM team_outbox ORDER BY id"
        " LIMIT ?", (limit,))
    return [Op(int(r[0]), r[1], int(r[2]), r[3], r[4], json.loads(r[5]), int(r[6]), r[7]) for r in rows]


async def sent(conn: Connection, op_ids: list[int]) -> None:
    await conn.executemany("DELETE FROM team_outbox WHERE id = ?", [(i,) for i in op_ids])


async def outbox_size(conn: Connection) -> tuple[int, str | None]:
    rows = await _rows(conn, "SELECT count(*), min(created_at) FROM team_outbox")
    return int(rows[0][0]), rows[0][1]


async def cursor(conn: Connection, namespace_id: int) -> int:
    rows = await _rows(conn, "SELECT seq FROM team_cursors WHERE namespace_id = ?", (namespace_id,))
    return int(rows[0][0]) if rows else 0


async def cursors(conn: Connection) -> dict[int, int]:
    return {int(r[0]): int(r[1]) for r in await conn.execute_fetchall("SELECT namespace_id, seq FROM team_cursors")}


async def advance(conn: Connection, namespace_id: int, seq: int) -> None:
    await conn.execute(
        "INSERT INTO team_cursors(namespace_id, seq, pulled_at) VALUES (?, ?, ?) ON CONFLICT(namespace_id)"
        " DO UPDATE SET seq = max(seq, excluded.seq), pulled_at = excluded.pulled_at",
        (namespace_id, seq, now_iso()))
