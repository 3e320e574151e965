"""``context.landed``: the shim applied a batch (or failed to); layers become landed with their replacement seq, or
wait again (pending) with the host's error recorded. A landed layer's lower layers (the cards and folds inside its
range) become superseded; nothing is deleted. The session's last change (the composer dock's label) is recorded."""

from __future__ import annotations

from typing import Any

from stratagate.context import queries
from stratagate.context.models import LandedParams, LandedResult
from stratagate.context.plan import apply_reland
from stratagate.context.records import Layer
from stratagate.errors import DomainError
from stratagate.storage import lookup
from stratagate.storage.db import Database
from stratagate.timeutil import now_iso

KIND_ORDER = {"fold": 0, "block": 1, "card": 2}


def change_label(layers: list[Layer]) -> dict[str, Any]:
    """``{"kind", "tier", "saved", "label"}`` of a landed batch: named by its highest kind (fold > block > card)."""
    top = min(layers, key=lambda la: (KIND_ORDER[la.kind], -la.tier))
    saved = sum(max(0, la.shadowed_tokens - la.tokens) for la in layers)
    name = {"fold": f"Fold T{max(1, top.tier)}", "block": "Block", "card": "Cards"}[top.kind]
    if top.kind == "card" and len(layers) == 1:
        name = "Card"
    return {"kind": top.kind, "tier": top.tier, "saved": saved, "label": f"{name} −{saved / 1000:.1f}K",
            "layers": len(layers), "at": now_iso()}


async def landed(db: Database, p: LandedParams) -> LandedResult:
    async with db.transaction() as conn:
        ns_id, session_id = await lookup.scope_keys(conn, p.namespace, p.session)
        if session_id is None:
            raise DomainError(f"unknown session {p.session!r}: context.plan was never called for it")
        layers: list[tuple[Layer, Any]] = []
        unknown = []
        for op in p.ops:
            layer = await queries.layer_by_ref(conn, session_id, op.ref)
            if layer is None:
                unknown.append(op.ref)
            else:
                if (op.replacement_seq is None) == (op.error is None):
                    raise DomainError(f"ops: {op.ref}: give exactly one of replacement_seq or error")
                layers.append((layer, op))
        if unknown:
            raise DomainError(f"ops: unknown layer ref(s) {', '.join(unknown[:5])} in this session")
        state = await queries.session_state(conn, session_id) or {}
        relands = state.setdefault("relands", {})
        done: list[Layer] = []
        failed = 0
        for layer, op in layers:
            if layer.state == "landed" and layer.ref in relands:  # a block re-landed at its decayed level
                shown = relands.pop(layer.ref)
                if op.error is not None:
                    failed += 1
                else:
                    await apply_reland(conn, layer, shown, op.replacement_seq)
                    shown_layer = Layer(**{**layer.__dict__, "tokens": int(shown["tokens"]),
                                           "shadowed_tokens": layer.tokens})
                    done.append(shown_layer)
                continue
            if op.error is not None:
                await queries.mark_failed(conn, layer.id, op.error)
                failed += 1
                continue
            await queries.mark_landed(conn, layer.id, op.replacement_seq)
            done.append(layer)
            lower = [la.id for la in await queries.session_layers(conn, session_id, ["landed"])
                     if la.ref in layer.children and la.id != layer.id]
            if lower:
                await queries.set_state(conn, lower, "superseded")
        if done:
            state["last_change"] = change_label(done)
        state["in_flight"] = [r for r in state.get("in_flight", []) if r not in {op.ref for _, op in layers}]
        assert ns_id is not None
        await queries.put_session_state(conn, ns_id, session_id, state)
    return LandedResult(landed=len(done), failed=failed)
