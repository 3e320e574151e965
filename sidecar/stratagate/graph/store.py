"""Graph storage: nodes with aliases, typed edges, facts with a valid-time window and the events behind them.

Every fact mutation appends its whole state to the audit log ('fact.*'), which is what transaction-time reads
("what did memory believe on …") replay. A fact's status is never set by hand: it is recomputed from the statuses of
the events that support it and of the events that ended it (see ``refresh_fact``).
"""

from __future__ import annotations

import sqlite3
from typing import Any, Literal

from pydantic import BaseModel

from stratagate import ids
from stratagate.events import lexicon
from stratagate.events.models import EventRow
from stratagate.events.store import normalise
from stratagate.safety.secrets import PLACEHOLDER_RE
from stratagate.storage.db import Actor, audit
from stratagate.storage.sqlite import Connection
from stratagate.text.terms import fts_document
from stratagate.timeutil import now_iso

FactStatus = Literal["active", "superseded", "disputed", "archived"]
CURRENT_EVENT = ("active", "disputed")


class NodeRow(BaseModel):
    id: int
    namespace_id: int
    kind: str
    name: str
    key: str
    category: str | None
    created_at: str
    updated_at: str

    @property
    def public_id(self) -> str:
        return ids.make("nod", self.id)


class FactRow(BaseModel):
    id: int
    namespace_id: int
    node_id: int
    edge_id: int | None
    attribute: str
    value: str | None
    slot: str | None
    scope: str
    session_id: int | None
    status: FactStatus
    prior_status: FactStatus | None
    valid_from: str | None
    valid_to: str | None
    superseded_by: int | None
    recorded_at: str
    updated_at: str
    object_id: int | None = None  # the edge's destination, joined in

    @property
    def public_id(self) -> str:
        return ids.make("fct", self.id)

    def visible_to(self, session_id: int | None) -> bool:
        return self.scope != "session" or (session_id is not None and self.session_id == session_id)

    def state(self) -> dict[str, Any]:
        """Everything a reader needs to know what this fact said at a point in time (audited after each change)."""
        return {
            "node_id": self.node_id,
            "edge_id": self.edge_id,
            "object_id": self.object_id,
            "attribute": self.attribute,
            "value": self.value,
            "slot": self.slot,
            "scope": self.scope,
            "session_id": self.session_id,
            "status": self.status,
            "valid_from": self.valid_from,
            "valid_to": self.valid_to,
            "superseded_by": self.superseded_by,
        }


_FACT_SELECT = "SELECT f.*, e.dst_id AS object_id FROM graph_facts f LEFT JOIN graph_edges e ON e.id = f.edge_id"


def _fact(row: sqlite3.Row | dict[str, Any]) -> FactRow:
    return FactRow.model_validate(dict(row))


# --- nodes -------------------------------------------------------------------------------------------------------


def project_name(namespace_key: str) -> str:
    """The project node's display name: the folder name in 'project:<name>:<hash>', else 'project'."""
    parts = namespace_key.split(":")
    return parts[1] if len(parts) >= 3 and parts[0] == "project" and parts[1] else "project"


async def get_node(conn: Connection, node_id: int) -> NodeRow | None:
    row = await (await conn.execute("SELECT * FROM graph_nodes WHERE id = ?", (node_id,))).fetchone()
    return None if row is None else NodeRow.model_validate(dict(row))


async def find_node(conn: Connection, namespace_id: int, name: str) -> NodeRow | None:
    """The node a name or alias means (the lexicon's canonical name counts too)."""
    keys = [normalise(name)]
    known = lexicon.lookup(name)
    if known is not None:
        keys.append(normalise(known.name))
    for key in keys:
        row = await (
            await conn.execute(
                "SELECT n.* FROM graph_aliases a JOIN graph_nodes n ON n.id = a.node_id"
                " WHERE a.namespace_id = ? AND a.key = ?",
                (namespace_id, key),
            )
        ).fetchone()
        if row is not None:
            return NodeRow.model_validate(dict(row))
    return None


async def aliases(conn: Connection, node_id: int) -> list[str]:
    rows = await conn.execute_fetchall(
        "SELECT alias FROM graph_aliases WHERE node_id = ? ORDER BY created_at, alias", (node_id,)
    )
    return [r[0] for r in rows]


async def _add_alias(conn: Connection, node: NodeRow, alias: str) -> None:
    await conn.execute(
        "INSERT INTO graph_aliases(namespace_id, key, node_id, alias, created_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT(namespace_id, key) DO NOTHING",
        (node.namespace_id, normalise(alias), node.id, alias, now_iso()),
    )


async def _create_node(
    conn: Connection,
    namespace_id: int,
    name: str,
    kind: str,
    category: str | None,
    alias_names: list[str],
    actor: Actor,
) -> NodeRow:
    now = now_iso()
    cursor = await conn.execute(
        "INSERT INTO graph_nodes(namespace_id, kind, name, key, category, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (namespace_id, kind, name, normalise(name), category, now, now),
    )
    node = await get_node(conn, int(cursor.lastrowid or 0))
    assert node is not None
    for alias in dict.fromkeys([name, *alias_names]):
        await _add_alias(conn, node, alias)
    await audit(
        conn,
        namespace_id,
        actor,
        "node.created",
        "node",
        node.public_id,
        None,
        {"name": name, "kind": kind, "category": category, "aliases": await aliases(conn, node.id)},
    )
    await reindex_node(conn, node.id)
    return node


async def resolve_node(
    conn: Connection, namespace_id: int, namespace_key: str, name: str, kind: str | None, actor: Actor
) -> NodeRow:
    """The node for a name: an existing one by name or alias, else a new one (kind and category from the lexicon)."""
    from stratagate.events.claims import PROJECT, USER  # the claim patterns are compiled for writes only

    existing = await find_node(conn, namespace_id, name)
    if existing is not None:
        return existing
    if normalise(name) == normalise(PROJECT):
        label = project_name(namespace_key)
        return await _create_node(
            conn, namespace_id, label, "project", None, [PROJECT, "the project", "project", "our project"], actor
        )
    if normalise(name) == normalise(USER):
        return await _create_node(conn, namespace_id, "user", "person", None, ["the user", "me"], actor)
    known = lexicon.lookup(name)
    if known is not None:
        extra = lexicon.aliases_of(known.name)
        return await _create_node(conn, namespace_id, known.name, known.kind, known.category, extra, actor)
    return await _create_node(conn, namespace_id, name, kind or "concept", None, [], actor)


async def _edge(conn: Connection, namespace_id: int, src: int, predicate: str, dst: int) -> int:
    await conn.execute(
        "INSERT INTO graph_edges(namespace_id, src_id, predicate, dst_id, created_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT(src_id, predicate, dst_id) DO NOTHING",
        (namespace_id, src, predicate, dst, now_iso()),
    )
    (row,) = await conn.execute_fetchall(
        "SELECT id FROM graph_edges WHERE src_id = ? AND predicate = ? AND dst_id = ?", (src, predicate, dst)
    )
    return int(row[0])


# --- facts -------------------------------------------------------------------------------------------------------


async def get_fact(conn: Connection, fact_id: int) -> FactRow | None:
    row = await (await conn.execute(f"{_FACT_SELECT} WHERE f.id = ?", (fact_id,))).fetchone()
    return None if row is None else _fact(row)


async def facts_of_node(conn: Connection, node_id: int) -> list[FactRow]:
    """Facts about the node and edges pointing at it, oldest first."""
    rows = await conn.execute_fetchall(
        f"{_FACT_SELECT} WHERE f.node_id = ? OR e.dst_id = ? ORDER BY f.id", (node_id, node_id)
    )
    return [_fact(r) for r in rows]


async def current_facts_of_node(conn: Connection, node_id: int) -> list[FactRow]:
    """``facts_of_node`` restricted to current (active or disputed) facts in SQL: a node holds its superseded history
    too, which grows with every change of a slot."""
    rows = await conn.execute_fetchall(
        f"{_FACT_SELECT} WHERE f.id IN"
        " (SELECT id FROM graph_facts WHERE node_id = ? AND status IN ('active', 'disputed')"
        " UNION SELECT f2.id FROM graph_edges e2 JOIN graph_facts f2 ON f2.edge_id = e2.id"
        " WHERE e2.dst_id = ? AND f2.status IN ('active', 'disputed')) ORDER BY f.id",
        (node_id, node_id),
    )
    return [_fact(r) for r in rows]


async def facts_of_event(conn: Connection, event_id: int) -> list[FactRow]:
    rows = await conn.execute_fetchall(
        f"{_FACT_SELECT} WHERE f.id IN (SELECT fact_id FROM graph_fact_events WHERE event_id = ?) ORDER BY f.id",
        (event_id,),
    )
    return [_fact(r) for r in rows]


async def fact_events(conn: Connection, fact_id: int) -> list[tuple[str, EventRow]]:
    from stratagate.events.store import get_event

    rows = await conn.execute_fetchall(
        "SELECT event_id, role FROM graph_fact_events WHERE fact_id = ? ORDER BY created_at, event_id", (fact_id,)
    )
    out = []
    for row in rows:
        ev = await get_event(conn, int(row["event_id"]))
        if ev is not None:
            out.append((str(row["role"]), ev))
    return out


async def link(conn: Connection, fact_id: int, event_id: int, role: str) -> None:
    await conn.execute(
        "INSERT INTO graph_fact_events(fact_id, event_id, role, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (fact_id, event_id, role, now_iso()),
    )


async def insert_fact(
    conn: Connection,
    namespace_id: int,
    node_id: int,
    *,
    edge: tuple[str, int] | None,
    attribute: str,
    value: str | None,
    slot: str | None,
    event: EventRow,
    status: FactStatus,
    valid_from: str | None,
    actor: Actor,
) -> FactRow:
    edge_id = await _edge(conn, namespace_id, node_id, edge[0], edge[1]) if edge else None
    now = now_iso()
    cursor = await conn.execute(
        "INSERT INTO graph_facts(namespace_id, node_id, edge_id, attribute, value, slot, scope, session_id, status,"
        " valid_from, recorded_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            namespace_id,
            node_id,
            edge_id,
            attribute,
            value,
            slot,
            event.scope,
            event.session_id if event.scope == "session" else None,
            status,
            valid_from,
            now,
            now,
        ),
    )
    fact = await get_fact(conn, int(cursor.lastrowid or 0))
    assert fact is not None
    await link(conn, fact.id, event.id, "supports")
    await audit(
        conn,
        namespace_id,
        actor,
        "fact.asserted",
        "fact",
        fact.public_id,
        None,
        fact.state() | {"event": event.public_id},
    )
    return fact


async def update_fact(
    conn: Connection, fact: FactRow, actor: Actor, action: str, note: Any = None, **changes: Any
) -> FactRow:
    if not changes:
        return fact
    sets = ", ".join(f"{k} = ?" for k in changes)
    await conn.execute(
        f"UPDATE graph_facts SET {sets}, updated_at = ? WHERE id = ?", (*changes.values(), now_iso(), fact.id)
    )
    after = await get_fact(conn, fact.id)
    assert after is not None
    await audit(
        conn,
        fact.namespace_id,
        actor,
        action,
        "fact",
        fact.public_id,
        fact.state(),
        after.state() | ({"note": note} if note else {}),
    )
    return after


def event_time(ev: EventRow) -> str:
    """When an event's change took effect: its occurrence start when known, else when it was said."""
    if ev.happened_start and ev.time_status in ("occurred", "ongoing") and ev.time_basis != "unknown":
        return ev.happened_start
    return ev.mentioned_at


async def refresh_fact(conn: Connection, fact: FactRow, actor: Actor) -> FactRow:
    """Recompute a fact's status from its events: held up by a current event and not ended by one → current;
    ended by a current event, or only held up by superseded events → superseded; nothing left → archived."""
    links = await fact_events(conn, fact.id)
    supporters = [ev for role, ev in links if role == "supports"]
    enders = [ev for role, ev in links if role == "ends" and ev.status in CURRENT_EVENT]
    statuses = {ev.status for ev in supporters}
    changes: dict[str, Any] = {}
    if statuses & set(CURRENT_EVENT):
        if enders:
            target: FactStatus = "superseded"
            if fact.valid_to is None:
                changes["valid_to"] = min(event_time(ev) for ev in enders)
        else:
            target = "active" if "active" in statuses else "disputed"
            if fact.valid_to is not None:
                changes["valid_to"] = None
            if fact.superseded_by is not None:
                changes["superseded_by"] = None
    elif "superseded" in statuses:
        target = "superseded"
        if fact.valid_to is None:
            times = []
            for ev in supporters:
                if ev.successor_id is not None:
                    from stratagate.events.store import get_event

                    succ = await get_event(conn, ev.successor_id)
                    if succ is not None:
                        times.append(event_time(succ))
            changes["valid_to"] = min(times) if times else now_iso()
    else:
        target = "archived"
    if target != fact.status:
        changes["status"] = target
        changes["prior_status"] = fact.status
    if not changes:
        return fact
    # A window never closes before it opens (an explicit earlier date on the newer event).
    if changes.get("valid_to") and fact.valid_from and changes["valid_to"] < fact.valid_from:
        changes["valid_to"] = fact.valid_from
    after = await update_fact(
        conn, fact, actor, f"fact.{target}" if "status" in changes else "fact.updated", None, **changes
    )
    await reindex_node(conn, after.node_id)
    if after.object_id is not None:
        await reindex_node(conn, after.object_id)
    return after


async def follow_event_status(conn: Connection, event: EventRow, actor: Actor) -> None:
    for fact in await facts_of_event(conn, event.id):
        await refresh_fact(conn, fact, actor)


# --- search index ------------------------------------------------------------------------------------------------


async def reindex_node(conn: Connection, node_id: int) -> None:
    """Name, aliases, kind, category and current (active or disputed) facts, as search terms."""
    node = await get_node(conn, node_id)
    if node is None:
        return
    parts = [node.name, node.kind, node.category or "", *await aliases(conn, node_id)]
    for fact in await current_facts_of_node(conn, node_id):
        parts.append(fact.attribute.replace("_", " "))
        parts.append(fact.slot or "")
        if fact.value is not None:
            parts.append(fact.value)
        for other_id in {i for i in (fact.node_id, fact.object_id) if i is not None} - {node_id}:
            other = await get_node(conn, int(other_id))
            if other is not None:
                parts.extend([other.name, other.category or ""])
    # A secret placeholder in a value is a redaction, not what the node is about: "[secret:token#1a2b]" must not
    # make the node match "token" or "secret".
    text = PLACEHOLDER_RE.sub(" ", "\n".join(parts))
    await conn.execute("DELETE FROM graph_fts WHERE rowid = ?", (node_id,))
    await conn.execute("INSERT INTO graph_fts(rowid, terms) VALUES (?, ?)", (node_id, fts_document(text)))
