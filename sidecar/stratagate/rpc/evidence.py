"""JSON-RPC methods of the evidence gate: ``memory.weights`` (read-only weights for the Memory page and tests) and
``evidence.open_batches`` (what the shim's turn-end nudge asks: is anything of this turn left open?)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stratagate import ids
from stratagate.evidence import batches, weights
from stratagate.graph import read as graph_read
from stratagate.protocol import method
from stratagate.protocol.params import OpenBatchesParams, WeightsParams
from stratagate.protocol.results import OpenBatchesResult, WeightsResult
from stratagate.protocol.types import SUBAGENT
from stratagate.storage import lookup

if TYPE_CHECKING:
    from stratagate.app import App

async def _weight(conn: Any, ns: int, sess: int | None, ref: str) -> dict[str, Any]:
    out: dict[str, Any] = {"ref": ref}
    if (key := ids.parse(ref, "evt")) is not None:
        found = await weights.weight_of(conn, ns, sess, "event", key)
    elif (key := ids.parse(ref, "nod")) is not None:
        found = await weights.weight_of(conn, ns, sess, "node", key)
    elif (key := ids.parse(ref, "fct")) is not None:
        node = await graph_read.fact_node(conn, key, ns)
        found = None if node is None else await weights.weight_of(conn, ns, sess, "node", node)
        if found is not None:
            out["note"] = "a fact has the weight of its node"
    else:
        return out | {"weight": None, "note": "only events and graph nodes or facts have a long-term weight"}
    if found is None:
        return out | {"weight": None, "note": f"unknown {ref} in this namespace"}
    return out | found


@method("memory.weights", params=WeightsParams, result=WeightsResult)
async def memory_weights(app: App, p: WeightsParams) -> dict[str, Any]:
    ns = await lookup.namespace_id(app.db, p.namespace)
    sess = await lookup.session_id(app.db, ns, p.session)
    conn = app.db.reader
    return {
        "namespace": p.namespace,
        "session": p.session,
        "turn": await weights.current_turn(conn, sess),
        "weights": [await _weight(conn, ns, sess, ref) for ref in dict.fromkeys(p.refs)],
    }


NUDGE_MARK = "[StrataGate memory]"


def nudge_text(open_now: list[dict[str, Any]]) -> str | None:
    """The one-off turn-end reminder, or None when nothing is open."""
    if not open_now:
        return None
    names = ", ".join(b["batch_id"] for b in open_now)
    unassessed = [b["batch_id"] for b in open_now if b["state"] == "unassessed"]
    unrecorded = [b["batch_id"] for b in open_now if b["state"] == "unrecorded"]
    parts = [f"{NUDGE_MARK} Memory retrievals of this turn are still open: {names}."]
    if unrecorded:
        parts.append(
            f"You assessed {', '.join(unrecorded)} as sufficient: call memory_record_use with its batch_id and exactly "
            "the evidence_refs your answer relied on."
        )
    if unassessed:
        parts.append(
            f"If your answer relied on {', '.join(unassessed)}, call memory_assess for it (batch_id, verdict, "
            "evidence_refs, fit, missing, next_strategy), then memory_record_use with the refs used."
        )
    parts.append(
        "If you used none of them, call memory_record_use with evidence_refs [] and no batch_id. "
        "Then end the turn by restating your final answer. (Automatic reminder, sent once per turn.)"
    )
    return " ".join(parts)


@method("evidence.open_batches", params=OpenBatchesParams, result=OpenBatchesResult)
async def open_batches(app: App, p: OpenBatchesParams) -> dict[str, Any]:
    conn = app.db.reader
    _, sess = await lookup.scope_keys(conn, p.namespace, p.session)
    turn = await weights.current_turn(conn, sess)
    # A subagent's retrievals are its parent's business: the nudge steers only the main agent.
    found = [] if sess is None or p.origin == SUBAGENT else await batches.open_batches(conn, sess, turn)
    return {"namespace": p.namespace, "session": p.session, "turn": turn, "batches": found, "nudge": nudge_text(found)}
