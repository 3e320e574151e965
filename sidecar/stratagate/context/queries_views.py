"""The context archive as the agent-facing views read it (decompress, compress, search, status, ``/memory purge``),
on top of the planner's queries (context/queries.py). Every read is scoped to one session id, which callers get from
``session_keys`` (namespace name + session key → ids): a ref of another session or namespace is simply not found."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stratagate.context import queries
from stratagate.context.records import Layer, Node
from stratagate.context.surface import Surface, classify_surface
from stratagate.storage import lookup
from stratagate.storage.db import Database, audit


async def session_keys(db: Database, namespace: str, session: str) -> tuple[int, int] | None:
    """(namespace id, session id), or None when the session never reached the sidecar (so nothing is archived)."""
    ns, sess = await lookup.scope_keys(db.reader, namespace, session)
    if ns is None or sess is None:
        return None
    return ns, sess


async def nodes(db: Database, session_id: int) -> list[Node]:
    return await queries.session_nodes(db.reader, session_id)


async def layers(db: Database, session_id: int) -> list[Layer]:
    """Every layer of the session, any state, oldest first."""
    return await queries.session_layers(db.reader, session_id)


async def session_state(db: Database, session_id: int) -> dict[str, Any]:
    """The planner's per-session state, {} before the first plan."""
    return await queries.session_state(db.reader, session_id) or {}


async def surface(db: Database, session_id: int) -> Surface | None:
    """The surface as the shim last reported it (None before the first context.plan), with the layers landed since
    in place: between a landing and the next plan the state still lists the replaced nodes, and the replacement
    nodes are archived only by that plan, so each one stands in as its layer's text."""
    state = await queries.session_state(db.reader, session_id)
    if state is None:
        return None
    order = [int(s) for s in state.get("surface", [])]
    all_layers = await queries.session_layers(db.reader, session_id)
    landed = sorted(
        (la for la in all_layers if la.state == "landed" and la.replacement_seq is not None),
        key=lambda la: (la.landed_at or "", la.id),
    )
    wanted = order + [la.replacement_seq for la in landed if la.replacement_seq is not None]
    nodes = await queries.nodes_by_seqs(db.reader, session_id, wanted)
    for la in landed:
        rep = la.replacement_seq
        covered = set(la.covers)
        at = next((i for i, seq in enumerate(order) if seq in covered), None)
        if rep is None or rep in order or at is None:
            continue
        first = nodes.get(order[at])
        order = [seq for seq in order if seq not in covered]
        order.insert(at, rep)
        if rep not in nodes:
            nodes[rep] = _stand_in(la, first)
    return classify_surface(order, nodes, all_layers)


def _stand_in(layer: Layer, first: Node | None) -> Node:
    """A landed layer's replacement node before it is archived: a card keeps its tool result's call."""
    card = layer.kind == "card" and first is not None
    return Node(
        seq=layer.replacement_seq or 0,
        type="tool/result" if card else "user/message",
        kind="tool" if card else "checkpoint",
        turn=first.turn if first is not None else None,
        step=first.step if first is not None else None,
        call_id=first.call_id if card and first is not None else None,
        tool_name=first.tool_name if card and first is not None else None,
        calls=(),
        is_error=bool(first.is_error) if card and first is not None else False,
        text=layer.text,
        tokens=layer.tokens,
        replaces=tuple(layer.covers),
    )


@dataclass(frozen=True)
class ArchiveSize:
    nodes: int
    bytes: int
    layers: int


async def archive_size(db: Database, session_id: int) -> ArchiveSize:
    count, size, _tokens = await queries.archive_size(db.reader, session_id)
    return ArchiveSize(count, size, len(await layers(db, session_id)))


@dataclass(frozen=True)
class Purged:
    nodes: int
    layers: int


async def purge_session(db: Database, namespace_id: int, session_id: int) -> Purged:
    """Delete this session's context archive, layers and engine state (``/memory purge confirm``, the only
    deletion, asked for by the user). Captured L5 messages, blocks and events are not touched."""
    async with db.transaction() as conn:
        count, layer_count = await queries.delete_session_context(conn, session_id)
        purged = Purged(nodes=count, layers=layer_count)
        after = {"nodes": purged.nodes, "layers": purged.layers}
        await audit(conn, namespace_id, "user", "context.purged", "session", str(session_id), after=after)
    return purged
