"""The classified surface of a session: its nodes in surface order, tool rounds, the spans that may not be split,
and which nodes are landed layers (mapped back by ``replacement_seq``) or DSH's own summaries.

A tool round is one assistant message with tool calls plus all its results; a range (card, block, fold) never
splits one, so the surface is cut into *atoms*: a round's whole span, or a single other node. The order is the one
the shim last reported (``context_sessions.state.surface``), so the agent tools see what the planner saw.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from stratagate.context import queries
from stratagate.context.records import TAG_PREFIX, Layer, Node
from stratagate.storage.sqlite import Connection

TAG_ID = re.compile(r"^\[stratagate:[^\]\n]*?\bid=([A-Za-z0-9_]+)")


def tagged_ref(text: str) -> str | None:
    """The layer ref a replacement text's tag line names (``[stratagate:card id=c7 · …]`` → ``c7``)."""
    match = TAG_ID.match(text)
    return match.group(1) if match else None


@dataclass
class SurfaceNode:
    pos: int
    node: Node
    layer: Layer | None
    """The landed layer this node is the replacement of (a card, a block, a fold)."""
    tokens: int
    round: int | None = None

    @property
    def seq(self) -> int:
        return self.node.seq

    @property
    def kind(self) -> str:
        return self.node.kind

    @property
    def foreign_summary(self) -> bool:
        """DSH's own summary (a checkpoint that is not ours): never folded, never split around."""
        return self.node.kind == "checkpoint" and self.layer is None and not self.node.text.startswith(TAG_PREFIX)


@dataclass
class Round:
    index: int
    start: int
    end: int
    call_ids: list[str]
    complete: bool
    turn: int | None
    tokens: int = 0


@dataclass
class Surface:
    nodes: list[SurfaceNode]
    rounds: list[Round]
    atoms: list[tuple[int, int]]
    """Unsplittable spans (inclusive positions), in order, covering every position."""
    layers: list[Layer] = field(default_factory=list)
    """Every layer of the session (any state)."""

    @property
    def by_seq(self) -> dict[int, int]:
        return {n.seq: n.pos for n in self.nodes}

    def tokens(self, start: int = 0, end: int | None = None) -> int:
        stop = len(self.nodes) - 1 if end is None else end
        return sum(n.tokens for n in self.nodes[start : stop + 1])

    @property
    def total(self) -> int:
        return self.tokens()

    def atom_of(self, pos: int) -> tuple[int, int]:
        for atom in self.atoms:
            if atom[0] <= pos <= atom[1]:
                return atom
        raise IndexError(pos)

    def latest_user(self) -> int | None:
        return next((n.pos for n in reversed(self.nodes) if n.kind == "user"), None)

    def live_runtime(self) -> int | None:
        return next((n.pos for n in reversed(self.nodes) if n.kind == "runtime"), None)

    def turns(self) -> dict[int, list[int]]:
        """Positions of each DSH turn's nodes (a checkpoint counts for the turn of the first node it replaced)."""
        out: dict[int, list[int]] = {}
        for n in self.nodes:
            if n.node.turn is not None:
                out.setdefault(n.node.turn, []).append(n.pos)
        return out

    def foreign_summaries(self) -> list[int]:
        return [n.pos for n in self.nodes if n.foreign_summary]

    def layer(self, ref: str) -> Layer | None:
        return next((la for la in self.layers if la.ref == ref), None)


def classify_surface(order: list[int], nodes: dict[int, Node], layers: list[Layer]) -> Surface:
    """The surface of ``order`` (seqs in surface order; seqs not archived are skipped) with its rounds and atoms."""
    # Landed layers, and superseded ones whose replacement is still there (a pending fold over it marks it early).
    by_replacement = {
        la.replacement_seq: la for la in layers
        if la.state in ("landed", "superseded") and la.replacement_seq is not None
    }
    out: list[SurfaceNode] = []
    for seq in order:
        node = nodes.get(seq)
        if node is None:
            continue
        layer = by_replacement.get(seq)
        out.append(SurfaceNode(len(out), node, layer, layer.tokens if layer is not None else node.tokens))

    results: dict[str, int] = {}
    for sn in out:
        if sn.node.type == "tool/result" and sn.node.call_id and sn.node.call_id not in results:
            results[sn.node.call_id] = sn.pos
    rounds: list[Round] = []
    for sn in out:
        if sn.node.type != "assistant/message" or not sn.node.calls:
            continue
        ids = sn.node.call_ids
        found = [results[c] for c in ids if c in results and results[c] > sn.pos]
        end = max(found, default=sn.pos)
        rounds.append(Round(len(rounds), sn.pos, end, ids, len(found) == len(ids), sn.node.turn))
    for r in rounds:
        for pos in range(r.start, r.end + 1):
            if out[pos].round is None:
                out[pos].round = r.index
        r.tokens = sum(n.tokens for n in out[r.start : r.end + 1])

    atoms: list[tuple[int, int]] = []
    spans = sorted((r.start, r.end) for r in rounds)
    i = 0
    pos = 0
    while pos < len(out):
        while i < len(spans) and spans[i][1] < pos:
            i += 1
        if i < len(spans) and spans[i][0] == pos:
            start, end = spans[i]
            while i + 1 < len(spans) and spans[i + 1][0] <= end:  # overlapping rounds make one atom
                i += 1
                end = max(end, spans[i][1])
            atoms.append((start, end))
            pos = end + 1
            i += 1
        else:
            atoms.append((pos, pos))
            pos += 1
    return Surface(out, rounds, atoms, layers)


async def load_surface(conn: Connection, session_id: int) -> Surface | None:
    """The session's surface as the shim last reported it (None before its first context.plan)."""
    state = await queries.session_state(conn, session_id)
    if state is None:
        return None
    order = [int(s) for s in state.get("surface", [])]
    nodes = await queries.nodes_by_seqs(conn, session_id, order)
    layers = await queries.session_layers(conn, session_id)
    return classify_surface(order, nodes, layers)
