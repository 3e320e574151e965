"""Reading the graph: search, one node's current state and history, and as-of reads in both times.

- Valid time (``as_of``): what was true at T, by today's knowledge: facts whose window [valid_from, valid_to)
  holds T (an unknown start counts as 'since before memory knew'), superseded ones included since they were true.
- Transaction time (``known_at``): what memory believed at T: every fact's last audited state at or before T,
  replayed from the append-only audit log, then read as of T.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime, time
from typing import Any, NamedTuple, TypeVar

from stratagate import ids
from stratagate.graph import store
from stratagate.graph.store import FactRow, NodeRow
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import parse_time, to_iso

SHOWN = ("active", "superseded", "disputed")
VISIBLE_SLACK = 4
"""Search reads the visibility of this many more ranked nodes than it still needs (most nodes are visible)."""
T = TypeVar("T", NodeRow, int)


def parse_instant(value: str) -> str:
    """'2026-05-01' (the end of that day, UTC) or an ISO-8601 date-time (naive = UTC) as a stored instant."""
    moment = parse_time(value)
    if len(value.strip()) == 10:
        return to_iso(datetime.combine(moment.date(), time(23, 59, 59, 999000), UTC))
    return to_iso(moment)


def holds_at(state: dict[str, Any] | FactRow, instant: str) -> bool:
    get = state.get if isinstance(state, dict) else lambda k: getattr(state, k)
    start, end = get("valid_from"), get("valid_to")
    return (start is None or start <= instant) and (end is None or instant < end)


async def fact_node(conn: Connection, fact_id: int, namespace_id: int) -> int | None:
    """The node a fact of the namespace belongs to (None for an unknown fact or one of another namespace)."""
    row = await (
        await conn.execute("SELECT node_id FROM graph_facts WHERE id = ? AND namespace_id = ?", (fact_id, namespace_id))
    ).fetchone()
    return None if row is None else int(row[0])


async def node_visible(conn: Connection, node: NodeRow, session_id: int | None) -> bool:
    """A node exists for a caller when at least one fact they may see touches it."""
    return any(f.status != "archived" and f.visible_to(session_id) for f in await store.facts_of_node(conn, node.id))


async def visible_nodes(conn: Connection, node_ids: list[int], session_id: int | None) -> set[int]:
    """Which of ``node_ids`` exist for a caller (``node_visible`` for many nodes, in one statement)."""
    if not node_ids:
        return set()
    marks = ", ".join("?" for _ in node_ids)
    seen = "f.status <> 'archived' AND (f.scope <> 'session' OR (? IS NOT NULL AND f.session_id = ?))"
    rows = await conn.execute_fetchall(
        f"SELECT f.node_id FROM graph_facts f WHERE f.node_id IN ({marks}) AND {seen}"
        f" UNION SELECT e.dst_id FROM graph_edges e JOIN graph_facts f ON f.edge_id = e.id"
        f" WHERE e.dst_id IN ({marks}) AND {seen}",
        (*node_ids, session_id, session_id, *node_ids, session_id, session_id),
    )
    return {int(r[0]) for r in rows}


class Renderer:
    """Fact → plain data, with node names cached for one read."""

    def __init__(self, conn: Connection):
        self._conn = conn
        self._nodes: dict[int, NodeRow | None] = {}

    async def prefetch(self, facts: Iterable[FactRow | CurrentFact]) -> None:
        """Load the nodes these facts name in one statement (instead of one per node on first use)."""
        await self.prefetch_nodes(n for f in facts for n in (f.node_id, f.object_id) if n is not None)

    async def prefetch_nodes(self, node_ids: Iterable[int]) -> None:
        """Load these nodes in one statement (those not read yet)."""
        wanted = list(dict.fromkeys(n for n in node_ids if n not in self._nodes))
        if not wanted:
            return
        rows = await self._conn.execute_fetchall(
            f"SELECT * FROM graph_nodes WHERE id IN ({', '.join('?' for _ in wanted)})", wanted
        )
        found = {int(r["id"]): NodeRow.model_validate(dict(r)) for r in rows}
        for node_id in wanted:
            self._nodes[node_id] = found.get(node_id)

    async def node(self, node_id: int) -> NodeRow | None:
        if node_id not in self._nodes:
            self._nodes[node_id] = await store.get_node(self._conn, node_id)
        return self._nodes[node_id]

    async def statement(self, state: dict[str, Any]) -> str:
        subject = await self.node(int(state["node_id"]))
        name = subject.name if subject else "?"
        if state.get("object_id") is not None:
            obj = await self.node(int(state["object_id"]))
            return f"{name} {state['attribute'].replace('_', ' ')} {obj.name if obj else '?'}"
        return f"{name} {state['attribute'].replace('_', ' ')}: {state['value']}"

    async def brief(self, fact_id: int, state: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": ids.make("fct", fact_id),
            "statement": await self.statement(state),
            "status": state["status"],
            "slot": state.get("slot"),
            "valid_from": state.get("valid_from"),
            "valid_to": state.get("valid_to"),
        }
        if state.get("superseded_by"):
            out["superseded_by"] = ids.make("fct", int(state["superseded_by"]))
        if state["status"] == "superseded":
            out["note"] = "no longer true" + (f" since {state['valid_to']}" if state.get("valid_to") else "")
        elif state["status"] == "disputed":
            out["note"] = "disputed: conflicting evidence, not settled"
        return out

    async def full(self, fact: FactRow, node_id: int) -> dict[str, Any]:
        out = await self.brief(fact.id, fact.state())
        subject = await self.node(fact.node_id)
        out["subject"] = {"id": ids.make("nod", fact.node_id), "name": subject.name if subject else None}
        out["predicate"] = fact.attribute
        if fact.object_id is not None:
            obj = await self.node(fact.object_id)
            out["object"] = {
                "id": ids.make("nod", fact.object_id),
                "name": obj.name if obj else None,
                "kind": obj.kind if obj else None,
            }
        else:
            out["value"] = fact.value
        out["direction"] = "out" if fact.node_id == node_id else "in"
        out["scope"] = fact.scope
        out["recorded_at"] = fact.recorded_at
        links = await store.fact_events(self._conn, fact.id)
        out["events"] = [
            {"id": ev.public_id, "role": role, "status": ev.status, "title": ev.title} for role, ev in links
        ]
        return out


async def search(
    conn: Connection,
    namespace_id: int,
    session_id: int | None,
    match: str | None,
    kind: str | None,
    limit: int,
) -> list[tuple[NodeRow, float | None]]:
    """Visible nodes, BM25 order over names, aliases, kinds, categories and current facts; newest first without a
    query."""
    if match is None:
        rows = await conn.execute_fetchall(
            "SELECT * FROM graph_nodes WHERE namespace_id = ? AND (? IS NULL OR kind = ?) ORDER BY updated_at DESC,"
            " id DESC",
            (namespace_id, kind, kind),
        )
        scored: list[tuple[NodeRow, float | None]] = [(NodeRow.model_validate(dict(r)), None) for r in rows]
        return await _visible_first(conn, scored, session_id, limit)
    # Ids and ranks only (a query's matches are most of a small graph): rows are read for the ``limit`` kept.
    ranked: list[tuple[int, float | None]] = [
        (int(r[0]), -float(r[1]))
        for r in await conn.execute_fetchall(
            "SELECT n.id, bm25(graph_fts) AS rank FROM graph_fts JOIN graph_nodes n ON n.id = graph_fts.rowid"
            " WHERE graph_fts MATCH ? AND n.namespace_id = ? AND (? IS NULL OR n.kind = ?) ORDER BY rank, n.id",
            (match, namespace_id, kind, kind),
        )
    ]
    out: list[tuple[NodeRow, float | None]] = []
    start = 0
    while start < len(ranked) and len(out) < limit:  # the visible ones' rows, a few more than still wanted at a time
        part = ranked[start : start + limit - len(out) + VISIBLE_SLACK]
        start += len(part)
        by_id = await _visible_rows(conn, [node_id for node_id, _ in part], session_id)
        out.extend((by_id[node_id], score) for node_id, score in part if node_id in by_id)
    return out[:limit]


_SEEN = "f.status <> 'archived' AND (f.scope <> 'session' OR (? IS NOT NULL AND f.session_id = ?))"
"""A fact the caller may see (``node_visible``'s rule)."""


async def _visible_rows(conn: Connection, node_ids: list[int], session_id: int | None) -> dict[int, NodeRow]:
    """The rows of those of ``node_ids`` that exist for a caller (``visible_nodes``), in one statement."""
    rows = await conn.execute_fetchall(
        f"SELECT * FROM graph_nodes n WHERE n.id IN ({', '.join('?' for _ in node_ids)})"
        f" AND (EXISTS (SELECT 1 FROM graph_facts f WHERE f.node_id = n.id AND {_SEEN})"
        f" OR EXISTS (SELECT 1 FROM graph_edges e JOIN graph_facts f ON f.edge_id = e.id WHERE e.dst_id = n.id"
        f" AND {_SEEN}))",
        (*node_ids, session_id, session_id, session_id, session_id),
    )
    return {int(r["id"]): NodeRow.model_validate(dict(r)) for r in rows}


async def _visible_first(
    conn: Connection, scored: list[tuple[T, float | None]], session_id: int | None, limit: int
) -> list[tuple[T, float | None]]:
    """The first ``limit`` of ``scored`` (nodes or node ids, in rank order) that exist for the caller, their
    visibility read a few more than still wanted at a time."""
    out: list[tuple[T, float | None]] = []
    start = 0
    while start < len(scored) and len(out) < limit:
        part = scored[start : start + limit - len(out) + VISIBLE_SLACK]
        start += len(part)
        visible = await visible_nodes(conn, [_node_id(item) for item, _ in part], session_id)
        for item, score in part:
            if _node_id(item) in visible:
                out.append((item, score))
                if len(out) >= limit:
                    break
    return out


def _node_id(item: NodeRow | int) -> int:
    return item if isinstance(item, int) else item.id


async def current_facts(conn: Connection, node: NodeRow, session_id: int | None) -> list[FactRow]:
    """Active and disputed facts touching the node (out and in edges) that the caller may see, whose window holds
    now: what is true today (one indexed query)."""
    now = to_iso(datetime.now(UTC))
    return [
        fact for fact in await store.current_facts_of_node(conn, node.id)
        if fact.visible_to(session_id) and holds_at(fact, now)
    ]


class CurrentFact(NamedTuple):
    """What recall shows of a current fact, read as a plain row (no validation): recall reads every current fact of
    a node for its links and shows a handful."""

    id: int
    node_id: int
    object_id: int | None
    attribute: str
    value: str | None
    status: str
    valid_from: str | None


_CURRENT_FACTS = (
    "SELECT f.id, f.node_id, e.dst_id, f.attribute, f.value, f.status, f.valid_from, f.valid_to, f.scope, f.session_id"
    " FROM graph_facts f LEFT JOIN graph_edges e ON e.id = f.edge_id WHERE f.id IN"
    " (SELECT id FROM graph_facts WHERE node_id IN ({marks}) AND status IN ('active', 'disputed')"
    " UNION SELECT f2.id FROM graph_edges e2 JOIN graph_facts f2 ON f2.edge_id = e2.id"
    " WHERE e2.dst_id IN ({marks}) AND f2.status IN ('active', 'disputed')) ORDER BY f.id"
)
"""``store.current_facts_of_node``'s statement for many nodes, reading only the columns recall uses."""


async def current_fact_rows(conn: Connection, node_id: int, session_id: int | None) -> list[CurrentFact]:
    """``current_facts`` as plain rows, oldest first: the same facts by the same rules (visible to the caller,
    window holding now)."""
    return (await current_fact_rows_of(conn, [node_id], session_id))[node_id]


async def current_fact_rows_of(
    conn: Connection, node_ids: list[int], session_id: int | None
) -> dict[int, list[CurrentFact]]:
    """``current_fact_rows`` of many nodes in one statement: node id → its current facts, oldest first (a fact
    linking two of the nodes is in both lists)."""
    out: dict[int, list[CurrentFact]] = {node_id: [] for node_id in node_ids}
    if not node_ids:
        return out
    now = to_iso(datetime.now(UTC))
    marks = ", ".join("?" for _ in out)
    for fid, nid, obj, attribute, value, status, start, end, scope, owner in await conn.execute_fetchall(
        _CURRENT_FACTS.format(marks=marks), (*out, *out)
    ):
        if scope == "session" and (session_id is None or owner != session_id):
            continue  # FactRow.visible_to
        if (start is None or start <= now) and (end is None or now < end):  # holds_at
            fact = CurrentFact(fid, nid, obj, attribute, value, status, start)
            for node_id in (nid, obj) if obj != nid else (nid,):
                if node_id in out:
                    out[node_id].append(fact)
    return out


async def briefs(facts: list[FactRow], r: Renderer) -> list[dict[str, Any]]:
    await r.prefetch(facts)
    return [await r.brief(fact.id, fact.state()) for fact in facts]


async def current_state(
    conn: Connection, node: NodeRow, session_id: int | None, r: Renderer
) -> list[dict[str, Any]]:
    """Active facts (disputed ones labelled) whose window holds now: what is true today."""
    return await briefs(await current_facts(conn, node, session_id), r)


def neighbours(node_id: int, facts: Iterable[FactRow | CurrentFact]) -> list[int]:
    """The nodes one of ``facts`` links ``node_id`` to (the other end of each edge), in fact order, each once."""
    out: dict[int, None] = {}
    for fact in facts:
        if fact.object_id is None:
            continue  # an attribute ("deadline: 2026-03-15"), not an edge
        other = fact.object_id if fact.node_id == node_id else fact.node_id
        if other != node_id:
            out.setdefault(other, None)
    return list(out)


async def index_terms(conn: Connection, node_ids: list[int]) -> dict[int, str]:
    """The search terms each node is indexed with (names, aliases, kind, category, current facts), in one query."""
    if not node_ids:
        return {}
    rows = await conn.execute_fetchall(
        f"SELECT rowid, terms FROM graph_fts WHERE rowid IN ({', '.join('?' for _ in node_ids)})", node_ids
    )
    return {int(r[0]): str(r[1]) for r in rows}


async def believed_at(
    conn: Connection, namespace_id: int, node_id: int, instant: str
) -> dict[int, dict[str, Any]]:
    """Every fact touching the node as memory held it at ``instant``: its last audited state by then."""
    rows = await conn.execute_fetchall(
        "SELECT subject_id, after FROM audit_log WHERE namespace_id = ? AND subject_type = 'fact' AND at <= ?"
        " ORDER BY id",
        (namespace_id, instant),
    )
    states: dict[int, dict[str, Any]] = {}
    for row in rows:
        key = ids.parse(row["subject_id"], "fct")
        if key is None or row["after"] is None:
            continue
        states[key] = json.loads(row["after"])
    return {k: v for k, v in states.items() if v.get("node_id") == node_id or v.get("object_id") == node_id}
