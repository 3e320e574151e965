"""The graph part of long-term recall: at most 4 nodes with their current facts, within what the events left of the
900-token budget.

- Direct matches: nodes whose index (names, aliases, kind, category, current facts) matches the step's queries, in
  BM25 order, kept only above the relevance floor (activation/relevance.py) against the step's topic.
- One hop (``EXPAND``): the nodes a shown direct match is linked to by a current fact ("Alice works on Atlas" leads
  from Alice to Atlas, whose own facts say what Atlas depends on). They rank below every direct match, in the order
  of the node they were reached from, and share the same 4 slots and token budget; facts already shown under another
  node are not repeated. The neighbour ids come from the facts read to render the direct match: the hop costs no
  query beyond reading each neighbour's own facts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from stratagate.activation import relevance, search_memo
from stratagate.graph import read as graph_read
from stratagate.graph import store as graph
from stratagate.safety.inert import Named, heading
from stratagate.storage.sqlite import Connection

MAX_NODES = 4
CANDIDATES = 12
FACTS_PER_NODE = 6
EXPAND = True
"""One-hop expansion on (measured before turning it on: docs/benchmarks.md, "One-hop graph expansion")."""
NODES_TITLE = "Knowledge graph, current state (facts held today; disputed ones marked):"


def _day(stamp: str | None) -> str | None:
    return stamp[:10] if stamp else None


async def matched_nodes(
    memo: search_memo.Memo, ns: int, sess: int | None, matches: list[str | None], about: frozenset[str]
) -> list[graph.NodeRow]:
    """The namespace's nodes matching the step's queries (their FTS ``matches``, made once per step), best first,
    that pass the relevance floor against ``about`` (the graph is per namespace: no user tier there)."""
    nodes: dict[int, graph.NodeRow] = {}
    for match in matches:
        if match is None:
            continue
        for node, _ in await memo.node_search(ns, sess, match, CANDIDATES):
            nodes.setdefault(node.id, node)
    indexed = await graph_read.index_terms(memo.conn, list(nodes))
    return [
        node for node in nodes.values()
        if relevance.relevant(about, relevance.shared(about, indexed.get(node.id, "")))
    ]


@dataclass
class _Entry:
    text: str
    fact_ids: list[int]
    linked: list[int]


async def _line(fact: graph_read.CurrentFact, r: graph_read.Renderer) -> str:
    state = {"node_id": fact.node_id, "object_id": fact.object_id, "attribute": fact.attribute, "value": fact.value}
    line = await r.statement(state)
    if fact.valid_from:
        line += f" (since {_day(fact.valid_from)})"
    if fact.status == "disputed":
        line += " — DISPUTED, not settled"
    return line


async def _entry(
    node: graph.NodeRow, facts: list[graph_read.CurrentFact], quote: Callable[[str], str], shown: set[int],
    r: graph_read.Renderer,
) -> _Entry | None:
    """A node with its current facts (and their ids) and the nodes those facts link it to; facts already shown under
    another node are not repeated (None when nothing is left to show). Every current fact is read (plain rows) for
    the links; only the ``FACTS_PER_NODE`` shown are rendered."""
    state = [f for f in facts if f.id not in shown][:FACTS_PER_NODE]
    if not state:
        return None
    await r.prefetch(state)
    lines = [await _line(fact, r) for fact in state]
    label = f"{node.kind} · {node.category}" if node.category else node.kind
    text = heading(node.public_id, label, Named(node.name)) + "\n" + quote("\n".join(lines))
    return _Entry(text, [f.id for f in state], graph_read.neighbours(node.id, facts))


async def node_entries(
    conn: Connection,
    nodes: list[graph.NodeRow],
    sess: int | None,
    count: Callable[[str], int],
    quote: Callable[[str], str],
    room: int,
    shown_out: list[str],
    expand: bool | None = None,
) -> list[str]:
    """Up to ``MAX_NODES`` node entries that fit ``room`` tokens with the title, their ids appended to
    ``shown_out``: the direct matches first, then (``expand``) their one-hop neighbours."""
    expand = EXPAND if expand is None else expand
    used = count(NODES_TITLE) + 1
    entries: list[str] = []
    shown: set[int] = set()  # fact ids
    renderer = graph_read.Renderer(conn)  # node names read once per render, not once per node shown
    facts_of: dict[int, list[graph_read.CurrentFact]] = {}

    async def load(node_ids: list[int]) -> None:
        """The next few nodes' current facts in one statement, and in another the nodes those shown first name and
        the nodes themselves (read per node, the four entries cost eight statements)."""
        wanted = [n for n in node_ids if n not in facts_of]
        if wanted:
            facts_of.update(await graph_read.current_fact_rows_of(conn, wanted, sess))
        named = (n for node_id in wanted for f in facts_of[node_id][:FACTS_PER_NODE] for n in (f.node_id, f.object_id))
        await renderer.prefetch_nodes([*node_ids, *(n for n in named if n is not None)])

    async def add(node: graph.NodeRow) -> list[int]:
        """Show the node if it fits; the nodes its facts link it to (none when it was not shown)."""
        nonlocal used
        entry = await _entry(node, facts_of[node.id], quote, shown, renderer)
        if entry is None:
            return []
        cost = count(entry.text) + 1
        if used + cost > room:
            return []
        entries.append(entry.text)
        used += cost
        shown_out.append(node.public_id)
        shown.update(entry.fact_ids)
        return entry.linked

    hop: dict[int, None] = {}
    for i, node in enumerate(nodes):
        if len(entries) >= MAX_NODES:
            break
        if i % MAX_NODES == 0:
            await load([n.id for n in nodes[i : i + MAX_NODES]])
        hop.update(dict.fromkeys(await add(node)))
    direct = {node.id for node in nodes}
    linked = [n for n in hop if n not in direct] if expand else []
    for i, node_id in enumerate(linked):
        if len(entries) >= MAX_NODES:
            break
        if i % MAX_NODES == 0:  # the next few hop nodes at a time: a hub links to hundreds
            await load(linked[i : i + MAX_NODES])
        neighbour = await renderer.node(node_id)
        if neighbour is not None:
            await add(neighbour)
    return entries
