"""memory_search_graph and memory_expand_graph_node: the knowledge graph's current state, history and as-of reads."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from stratagate import ids
from stratagate.errors import NotFound
from stratagate.events.claims import NodeKind
from stratagate.graph import read, store
from stratagate.protocol import ToolContext, tool
from stratagate.protocol.tool_results import ExpandNodeResult, SearchGraphResult
from stratagate.storage.sqlite import Connection
from stratagate.tools.scope import UNSEARCHABLE, query_match, scope_keys


class SearchGraphArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str | None = Field(
        None, max_length=2000, description="Words to look for in names, aliases, kinds and facts; omit to list nodes."
    )
    kind: NodeKind | None = Field(None, description="Only nodes of this kind.")
    limit: int = Field(6, ge=1, le=20, description="Maximum number of nodes (1–20).")
    expand: bool = Field(
        True,
        description="Fill the slots the matches leave with their neighbours: nodes one current fact away from a "
        "match (listed after every match, with `via`).",
    )


class ExpandNodeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    node: str = Field(
        min_length=1, max_length=200, description="A node id ('nod_3') or a name or alias ('this project', 'pnpm')."
    )
    as_of: str | None = Field(
        None,
        max_length=40,
        description="Valid time: what was true at this date or date-time ('2026-05-01' = the end of that day, UTC).",
    )
    known_at: str | None = Field(
        None,
        max_length=40,
        description="Transaction time: what memory believed at this date or date-time (replayed from the audit log).",
    )
    include_archived: bool = Field(False, description="Also list facts whose events were forgotten or removed.")

    @field_validator("as_of", "known_at")
    @classmethod
    def _instant(cls, value: str | None) -> str | None:
        return None if value is None else read.parse_instant(value)


@tool(
    "memory_search_graph",
    args=SearchGraphArgs,
    result=SearchGraphResult,
    evidence=True,
    description="Search the knowledge graph (people, projects, organisations, tools, places, concepts) by name, alias, "
    "kind or fact; each hit shows the node's current state (active facts; disputed ones labelled).",
)
async def search_graph(ctx: ToolContext, args: SearchGraphArgs) -> dict[str, Any]:
    conn = ctx.db.reader
    result: dict[str, Any] = {"query": args.query, "hits": []}
    match, unsearchable = query_match(args.query)
    if unsearchable:
        result["note"] = UNSEARCHABLE
        return result
    ns, sess = await scope_keys(conn, ctx)
    if ns is None:
        return result
    r = read.Renderer(conn)
    direct = await read.search(conn, ns, sess, match, args.kind, args.limit)
    linked: dict[int, str] = {}  # neighbour → the match it was reached from
    for node, score in direct:
        facts = await read.current_facts(conn, node, sess)
        result["hits"].append(await _hit(conn, node, facts, r, score))
        for other in read.neighbours(node.id, facts):
            linked.setdefault(other, node.public_id)
    # One hop: neighbours rank below every match (half the weakest match's score) and only fill free slots.
    scores = [score for _, score in direct if score is not None]
    hop_score = min(scores) * HOP_SCORE if scores else None
    shown = {node.id for node, _ in direct}
    for node_id, via in linked.items() if args.expand else ():
        if len(result["hits"]) >= args.limit:
            break
        neighbour = await r.node(node_id)
        if node_id in shown or neighbour is None or (args.kind is not None and neighbour.kind != args.kind):
            continue
        hit = await _hit(conn, neighbour, await read.current_facts(conn, neighbour, sess), r, hop_score)
        result["hits"].append(hit | {"via": via})
    return result


HOP_SCORE = 0.5
"""A neighbour's score as a share of the weakest direct match's."""


async def _hit(
    conn: Connection, node: store.NodeRow, facts: list[store.FactRow], r: read.Renderer, score: float | None
) -> dict[str, Any]:
    hit: dict[str, Any] = {
        "id": node.public_id,
        "name": node.name,
        "kind": node.kind,
        "category": node.category,
        "aliases": await store.aliases(conn, node.id),
        "current_state": await read.briefs(facts, r),
    }
    if score is not None:
        hit["score"] = round(score, 4)
    return hit


@tool(
    "memory_expand_graph_node",
    args=ExpandNodeArgs,
    result=ExpandNodeResult,
    evidence=True,
    description="Read one graph node: current state, every fact with status, validity window, successor and "
    "supporting events. `as_of` shows what was true at a time; `known_at` what memory believed at a time.",
)
async def expand_node(ctx: ToolContext, args: ExpandNodeArgs) -> dict[str, Any]:
    conn = ctx.db.reader
    ns, sess = await scope_keys(conn, ctx)
    key = ids.parse(args.node, "nod")
    node = None
    if ns is not None:
        node = await store.get_node(conn, key) if key is not None else await store.find_node(conn, ns, args.node)
    if node is None or node.namespace_id != ns or not await read.node_visible(conn, node, sess):
        raise NotFound(f"unknown graph node {args.node!r}; memory_search_graph finds nodes")
    r = read.Renderer(conn)
    facts = [
        f
        for f in await store.facts_of_node(conn, node.id)
        if f.visible_to(sess) and (args.include_archived or f.status != "archived")
    ]
    result: dict[str, Any] = {
        "id": node.public_id,
        "name": node.name,
        "kind": node.kind,
        "category": node.category,
        "aliases": await store.aliases(conn, node.id),
        "current_state": await read.current_state(conn, node, sess, r),
        "facts": [await r.full(f, node.id) for f in facts],
    }
    if args.as_of is not None:
        true_then = [f for f in facts if f.status in read.SHOWN and read.holds_at(f, args.as_of)]
        result["as_of"] = {
            "valid_time": args.as_of,
            "state": [await _as_of_brief(r, f) for f in true_then],
            "note": "what was true at that time, by what memory knows now",
        }
    if args.known_at is not None:
        believed = await read.believed_at(conn, ns, node.id, args.known_at)
        visible = {f.id for f in await store.facts_of_node(conn, node.id) if f.visible_to(sess)}
        held = [(k, v) for k, v in sorted(believed.items()) if k in visible]
        result["known_at"] = {
            "transaction_time": args.known_at,
            "state": [
                await r.brief(k, v)
                for k, v in held
                if v["status"] in ("active", "disputed") and read.holds_at(v, args.known_at)
            ],
            "facts": [await r.brief(k, v) for k, v in held],
            "note": "what memory believed at that time (replayed from the audit log)",
        }
    return result


async def _as_of_brief(r: read.Renderer, fact: store.FactRow) -> dict[str, Any]:
    """A fact as it stood inside its window: true then, with what became of it since."""
    then = fact.state() | {"status": "disputed" if fact.status == "disputed" else "active", "superseded_by": None}
    out = await r.brief(fact.id, then)
    out["status_now"] = fact.status
    if fact.superseded_by:
        out["superseded_by"] = ids.make("fct", fact.superseded_by)
    return out

