"""``page.graph`` (GET /graph): the namespace's knowledge graph as it was at a point in valid time (default now):
the nodes and edges whose facts held then (graph/read.py ``holds_at``, the rule memory_expand_graph_node's
``as_of`` applies), and the facts with their validity windows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from stratagate import ids
from stratagate.app import App
from stratagate.graph import read
from stratagate.page import longterm_queries as q
from stratagate.page.foreign import hide_foreign
from stratagate.protocol import method
from stratagate.protocol.types import Name, Result
from stratagate.storage.lookup import namespace_id
from stratagate.text.terms import fts_query
from stratagate.timeutil import to_iso


class GraphParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    as_of: str | None = Field(
        None, max_length=40, description="A date ('2026-05-01' = the end of that day, UTC) or date-time; default now."
    )
    q: str | None = Field(
        None, max_length=2000, description="Only nodes found by these words, and the facts between them."
    )
    limit: int = Field(100, ge=1, le=500, description="At most this many nodes, the best connected first.")
    history: bool = Field(False, description="Also list facts that do not hold at as_of (current=false).")

    @field_validator("as_of")
    @classmethod
    def _instant(cls, value: str | None) -> str | None:
        return None if value is None or not value.strip() else read.parse_instant(value)


class GraphNode(Result):
    id: str
    name: str
    kind: str
    category: str | None
    degree: int


class GraphEdge(Result):
    id: str
    source: str
    target: str
    predicate: str
    status: str
    status_now: str
    valid_from: str | None
    valid_to: str | None


class GraphFact(Result):
    id: str
    subject: str
    subject_id: str
    predicate: str
    object: str | None
    object_id: str | None
    slot: str | None
    status: str
    """As it stood at ``as_of`` for a fact holding then (active or disputed), else its status now."""
    status_now: str
    valid_from: str | None
    valid_to: str | None
    events: list[str]
    current: bool


class GraphResult(Result):
    as_of: str
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    facts: list[GraphFact]


def _status_then(fact: dict[str, Any], holds: bool) -> str:
    # A fact holding at as_of was true then, whatever became of it since (status_now says).
    if not holds:
        return str(fact["status"])
    return "disputed" if fact["status"] == "disputed" else "active"


def _touches(fact: dict[str, Any]) -> set[int]:
    return {int(fact["node_id"]), *([int(fact["object_id"])] if fact["object_id"] is not None else [])}


@method("page.graph", params=GraphParams, result=GraphResult, http="GET /graph")
async def page_graph(app: App, p: GraphParams) -> dict[str, Any]:
    conn = app.db.reader
    ns = await namespace_id(app.db, p.namespace)
    instant = p.as_of or to_iso(datetime.now(UTC))
    facts = await q.graph_facts(conn, ns)
    current = {int(f["id"]) for f in facts if f["status"] in read.SHOWN and read.holds_at(f, instant)}
    listed = [f for f in facts if p.history or int(f["id"]) in current]

    match = fts_query(p.q) if p.q and p.q.strip() else None
    if match is not None or (p.q and p.q.strip()):
        found = {int(n["id"]) for n in await q.graph_nodes(conn, ns, match)} if match else set()
        # A node's index holds its neighbours' names too: keep the facts whose every node was found.
        listed = [f for f in listed if _touches(f) <= found]
    else:
        found = set()
    nodes = {int(n["id"]): n for n in await q.graph_nodes(conn, ns, None)}
    degree: dict[int, int] = dict.fromkeys(found, 0)  # a node found by q is shown even with no fact now
    for f in listed:
        for node in _touches(f):
            degree[node] = degree.get(node, 0) + (1 if int(f["id"]) in current else 0)
    chosen = sorted(degree, key=lambda n: (-degree[n], n))[: p.limit]
    keep = set(chosen)
    listed = [f for f in listed if int(f["node_id"]) in keep]
    links = await q.fact_event_links(conn, ns)

    def name(node_id: int | None) -> str | None:
        return None if node_id is None or node_id not in nodes else str(nodes[node_id]["name"])

    def window(f: dict[str, Any]) -> dict[str, Any]:
        holds = int(f["id"]) in current
        return {"status": _status_then(f, holds), "status_now": f["status"], "valid_from": f["valid_from"],
                "valid_to": f["valid_to"]}

    def fact(f: dict[str, Any]) -> dict[str, Any]:
        obj = f["object_id"]
        return {
            "id": ids.make("fct", int(f["id"])),
            "subject": name(int(f["node_id"])) or "?",
            "subject_id": ids.make("nod", int(f["node_id"])),
            "predicate": f["attribute"],
            "object": name(int(obj)) if obj is not None else f["value"],
            "object_id": ids.make("nod", int(obj)) if obj is not None else None,
            "slot": f["slot"],
            **window(f),
            "events": [ids.make("evt", e) for e in links.get(int(f["id"]), [])],
            "current": int(f["id"]) in current,
        }

    def edge(f: dict[str, Any]) -> dict[str, Any]:
        return {"id": ids.make("fct", int(f["id"])), "source": ids.make("nod", int(f["node_id"])),
                "target": ids.make("nod", int(f["object_id"])), "predicate": f["attribute"], **window(f)}

    return await hide_foreign(conn, ns, {
        "as_of": instant,
        "nodes": [
            {"id": ids.make("nod", n), "name": nodes[n]["name"], "kind": nodes[n]["kind"],
             "category": nodes[n]["category"], "degree": degree[n]}
            for n in chosen if n in nodes
        ],
        # Edges are drawn per fact holding at as_of, between two shown nodes.
        "edges": [
            edge(f) for f in listed
            if f["object_id"] is not None and int(f["id"]) in current and int(f["object_id"]) in keep
        ],
        "facts": [fact(f) for f in listed],
    })
