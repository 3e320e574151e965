"""Every statement the sidecar runs on the team's PostgreSQL (tables: team/server_schema.py).

``push`` applies this machine's outbox operations in one transaction under the push lock, idempotently (an ``op_id``
the log has is skipped), and decides conflicts there, where every machine's changes meet:

- a change made after seeing the memory's latest version applies as it is;
- a ``forgotten`` change always applies, and a memory another machine forgot stays forgotten (forgetting is the
  user's removal: it wins over a concurrent supersession);
- otherwise, when another machine changed the memory's status since this one last saw it and the two disagree
  (a different status, or superseded by a different memory), the memory becomes ``disputed``: both machines pull
  that, never a silent overwrite;
- ``erase`` blanks the memory's text on the server: its row and its ``create`` change keep no words.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from stratagate.events.team import Op
from stratagate.team.server_schema import NOTIFY_CHANNEL, PUSH_LOCK


class Identity(NamedTuple):
    member: str
    replica: str


class Change(NamedTuple):
    seq: int
    op_id: str
    uid: str
    member: str
    replica: str
    kind: str
    body: dict[str, Any]
    version: int
    at: str


async def push(conn: Any, me: Identity, ops: list[tuple[Op, str]]) -> None:
    """Apply ``(operation, project)`` pairs in order, in one transaction; the projects touched are notified."""
    projects: set[str] = set()
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", PUSH_LOCK)
        for op, project in ops:
            if await conn.fetchval("SELECT 1 FROM team_changes WHERE op_id = $1", op.op_id):
                continue  # pushed before (the local delete did not happen): stored once
            kind, body, version = await _apply(conn, me, op, project)
            await conn.execute(
                "INSERT INTO team_changes(op_id, uid, project, member, replica, kind, body, version)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8)",
                op.op_id, op.uid, project, me.member, me.replica, kind, json.dumps(body), version)
            if kind != "noop":
                detail = {k: body.get(k) for k in ("status", "successor_uid", "conflict") if body.get(k)}
                await conn.execute(
                    "INSERT INTO team_audit(member, replica, action, uid, detail) VALUES ($1, $2, $3, $4, $5::jsonb)",
                    me.member, me.replica, f"event.{kind}", op.uid, json.dumps(detail))
            projects.add(project)
        for project in projects:  # delivered at commit
            await conn.execute("SELECT pg_notify($1, $2)", NOTIFY_CHANNEL, project)


async def _apply(conn: Any, me: Identity, op: Op, project: str) -> tuple[str, dict[str, Any], int]:
    """(kind, body, version) of the change ``op`` makes."""
    if op.kind == "create":
        version = await conn.fetchval(
            "INSERT INTO team_events(uid, project, member, replica, body) VALUES ($1, $2, $3, $4, $5::jsonb)"
            " ON CONFLICT (uid) DO NOTHING RETURNING version",
            op.uid, project, me.member, me.replica, json.dumps(op.body))
        return ("create", op.body, 1) if version is not None else ("noop", {}, 0)
    row = await conn.fetchrow("SELECT status, successor_uid, version, erased FROM team_events WHERE uid = $1"
                              " FOR UPDATE", op.uid)
    if row is None or row["erased"]:
        return "noop", {}, 0
    if op.kind == "erase":
        version = row["version"] + 1
        await conn.execute(
            "UPDATE team_events SET body = '{}'::jsonb, erased = TRUE, status = 'forgotten', version = $2,"
            " updated_at = now() WHERE uid = $1", op.uid, version)
        await conn.execute("UPDATE team_changes SET body = '{}'::jsonb WHERE uid = $1", op.uid)
        return "erase", {}, version
    want = str(op.body.get("status"))
    successor = op.body.get("successor_uid")
    body: dict[str, Any] = {"status": want, "successor_uid": successor}
    if want != "forgotten":
        rival = await conn.fetchval(
            "SELECT 1 FROM team_changes WHERE uid = $1 AND version > $2 AND replica <> $3 AND kind = 'status' LIMIT 1",
            op.uid, op.base_version, me.replica)
        if rival:
            if row["status"] == "forgotten":
                return "noop", {}, 0  # another machine forgot it meanwhile: forgotten stays forgotten
            if row["status"] != want or row["successor_uid"] != successor:
                body = {"status": "disputed", "successor_uid": None,
                        "conflict": {"theirs": row["status"], "mine": want}}
    if body["status"] == row["status"] and body["successor_uid"] == row["successor_uid"]:
        return "noop", {}, 0
    version = row["version"] + 1
    await conn.execute(
        "UPDATE team_events SET status = $2, successor_uid = $3, version = $4, updated_at = now() WHERE uid = $1",
        op.uid, body["status"], body["successor_uid"], version)
    return "status", body, version


async def changes(conn: Any, project: str, after: int, limit: int) -> list[Change]:
    rows = await conn.fetch(
        "SELECT seq, op_id, uid, member, replica, kind, body::text AS body, version, at::text AS at"
        " FROM team_changes WHERE project = $1 AND seq > $2 AND kind <> 'noop' ORDER BY seq LIMIT $3",
        project, after, limit)
    return [Change(r["seq"], r["op_id"], r["uid"], r["member"], r["replica"], r["kind"], json.loads(r["body"]),
                   r["version"], r["at"]) for r in rows]


async def last_seq(conn: Any, projects: list[str]) -> dict[str, int]:
    rows = await conn.fetch("SELECT project, max(seq) AS seq FROM team_changes WHERE project = ANY($1::text[])"
                            " GROUP BY project", projects)
    return {r["project"]: int(r["seq"]) for r in rows}


async def search(conn: Any, project: str, query: str, limit: int) -> list[dict[str, Any]]:
    """The server's own full-text search over a project's team memory (redacted texts only; erased ones excluded)."""
    rows = await conn.fetch(
        "SELECT uid, member, status, body->>'title' AS title, body->>'summary' AS summary,"
        " ts_rank(search, plainto_tsquery('simple', $2)) AS rank FROM team_events"
        " WHERE project = $1 AND NOT erased AND search @@ plainto_tsquery('simple', $2)"
        " ORDER BY rank DESC, uid LIMIT $3", project, query, limit)
    return [dict(r) for r in rows]
