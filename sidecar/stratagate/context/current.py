"""The session's current surface as the archive records it, for the agent-facing views (compress, status):
archived nodes in surface order, each landed replacement in the place of the span it replaced, tool rounds and the
protected region. Pure functions over ``queries_views`` rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from stratagate.context.queries_views import Layer, Node

What = Literal["raw", "card", "block", "fold", "summary", "runtime"]

PROTECTED_ROUNDS = 3
PROTECTED_SHARE = 0.10


@dataclass(frozen=True)
class Item:
    """One node of the surface; ``layer`` is set when the node is the landed replacement of one of our layers."""

    node: Node
    layer: Layer | None

    @property
    def seq(self) -> int:
        return self.node.seq

    @property
    def tokens(self) -> int:
        return self.layer.tokens if self.layer is not None else self.node.tokens

    @property
    def what(self) -> What:
        if self.layer is not None:
            return self.layer.kind  # type: ignore[return-value]
        if self.node.kind == "checkpoint":
            return "summary"  # a checkpoint none of our layers wrote: DSH's own summary
        if self.node.kind == "runtime":
            return "runtime"
        return "raw"

    @property
    def tier(self) -> int:
        return self.layer.tier if self.layer is not None and self.layer.kind == "fold" else 0


def landed_by_replacement(layers: list[Layer]) -> dict[int, Layer]:
    return {la.replacement_seq: la for la in layers if la.state == "landed" and la.replacement_seq is not None}


def surface(nodes: list[Node], layers: list[Layer], state: dict[str, Any] | None = None) -> list[Item]:
    """The surface in order. The planner's state keeps the seqs the shim sent last (``surface``) when it has them;
    otherwise it is replayed from the archive as DSH applies ``surfaceOp: replace`` (a replacement takes the place of
    the first node it replaces)."""
    by_seq = {n.seq: n for n in nodes}
    landed = landed_by_replacement(layers)
    sent = (state or {}).get("surface")
    if isinstance(sent, list) and sent and all(isinstance(s, int) for s in sent):
        return [Item(by_seq[s], landed.get(s)) for s in sent if s in by_seq]
    order: list[int] = []
    for node in nodes:
        replaced = set(node.replaces)
        if node.seq in landed:
            replaced.update(landed[node.seq].covers)
        positions = [i for i, s in enumerate(order) if s in replaced]
        if positions:
            at = positions[0]
            order = [s for s in order if s not in replaced]
            order.insert(at, node.seq)
        else:
            order.append(node.seq)
    return [Item(by_seq[s], landed.get(s)) for s in order]


@dataclass(frozen=True)
class Round:
    """One tool round: the assistant message with tool calls and the surface positions of all its results."""

    first: int
    last: int
    positions: list[int]
    finished: bool
    tokens: int


def rounds(items: list[Item]) -> list[Round]:
    by_call: dict[str, list[int]] = {}
    for j, other in enumerate(items):
        if other.node.kind == "tool" and other.node.call_id:
            by_call.setdefault(other.node.call_id, []).append(j)
    out = []
    for i, item in enumerate(items):
        call_ids = item.node.call_ids
        if item.node.kind != "assistant" or not call_ids:
            continue
        wanted = set(call_ids)
        results = sorted({j for c in wanted for j in by_call.get(c, [])})
        positions = [i, *results]
        found = {items[j].node.call_id for j in results}
        out.append(
            Round(
                first=min(positions),
                last=max(positions),
                positions=positions,
                finished=wanted <= found,
                tokens=sum(items[j].tokens for j in positions),
            )
        )
    return out


Reason = Literal["latest user message", "live runtime context", "unfinished tool round", "protected tail"]


def protected(items: list[Item], window: int | None) -> dict[int, Reason]:
    """Surface positions no range may cover, each with why: the latest user message, the live runtime context (the
    newest snapshot), every unfinished tool round, and the last three finished rounds within 10 % of the window (the
    newest always whole, older ones drop out above the cap)."""
    keep: dict[int, Reason] = {}
    all_rounds = rounds(items)
    cap = PROTECTED_SHARE * window if window else None
    spent = 0
    finished = [r for r in all_rounds if r.finished]
    for n, r in enumerate(reversed(finished[-PROTECTED_ROUNDS:])):
        if n > 0 and cap is not None and spent + r.tokens > cap:
            break
        spent += r.tokens
        keep.update(dict.fromkeys(r.positions, "protected tail"))
    for r in all_rounds:
        if not r.finished:
            keep.update(dict.fromkeys(r.positions, "unfinished tool round"))
    runtime = [i for i, it in enumerate(items) if it.node.kind == "runtime"]
    if runtime:
        keep[runtime[-1]] = "live runtime context"
    users = [i for i, it in enumerate(items) if it.node.kind == "user"]
    if users:
        keep[users[-1]] = "latest user message"
    return keep


def session_ref(seq: int) -> str:
    return f"s{seq:05d}"
