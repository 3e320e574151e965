"""Long-term weight of an event or graph node, seen from one session.

    weight = 0                                         if the event is forgotten or archived
    w      = 1                                         if pinned
             exp(−λ(n) · d)                            otherwise
    w      = max(floor(criticality), w)
    weight = min(cap, w)                               if a cap is set (superseded: 0.1)

    λ(n) = λ₀ / (1 + ρ · ln(1 + n)),   λ₀ = 0.15 per turn,  ρ = 1.5

* ``d``, the **turn distance**, is counted on the session's own clock: the session's current turn (captured turns
  + 1, the turn in progress) minus the turn of the memory's last use *in this session*; never used here, it is the
  number of this session's turns captured after the memory was created. Turns of other sessions never age a memory
  (the reference counted the namespace-wide turn, so a busy parallel session decayed everything).
* ``n`` is how many use receipts counted the memory, in any session (of any namespace, for a user-tier event): a
  memory that answers have relied on often decays more slowly everywhere. Half-lives: n=0 → 4.6 turns, 1 → 9.4,
  2 → 12.2, 4 → 15.8, 9 → 20.6.
* Floors by criticality: safety 1.0, identity 0.9, preference 0.3, routine 0 (graph nodes: 0).
* A superseded event is capped at its ``weight_cap`` (0.1): supersession beats both the floor and a pin (the
  reference let a pin lift a superseded memory back to 1).
* Only :func:`reinforce`, called by use receipts, writes the inputs. Retrieving a memory never changes its weight.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from stratagate import ids
from stratagate.events import queries as event_queries
from stratagate.events.models import SUPERSEDED_WEIGHT_CAP
from stratagate.storage import lookup
from stratagate.storage.sqlite import Connection, Raw, on_thread
from stratagate.timeutil import now_iso

Kind = Literal["event", "node"]

DECAY_RATE = 0.15
"""λ₀: decay per turn of a memory no answer has relied on yet."""
REHEARSAL = 1.5
"""ρ: how strongly each counted use slows decay (λ shrinks with ln(1 + uses))."""
FLOORS: dict[str, float] = {"routine": 0.0, "preference": 0.3, "identity": 0.9, "safety": 1.0}
"""Criticality floors: a safety memory never fades; an identity memory barely does."""
GONE = ("forgotten", "archived")


def decay_rate(uses: int) -> float:
    """λ for a memory counted ``uses`` times: λ₀ at 0 uses, strictly smaller with every use."""
    return DECAY_RATE / (1.0 + REHEARSAL * math.log1p(max(0, uses)))


def long_term_weight(
    distance: int,
    uses: int,
    *,
    floor: float = 0.0,
    pinned: bool = False,
    cap: float | None = None,
    status: str = "active",
) -> float:
    """The weight in [0, 1]. Monotone: never rises with ``distance``, never falls with ``uses``.

    Never below ``floor`` unless capped; never above ``cap``.
    """
    if status in GONE:
        return 0.0
    w = 1.0 if pinned else math.exp(-decay_rate(uses) * max(0, distance))
    w = max(min(1.0, max(0.0, floor)), w)
    if cap is not None:
        w = min(w, max(0.0, cap))
    return w


# --- stored inputs -----------------------------------------------------------------------------------------------


async def current_turn(conn: Connection, session_id: int | None) -> int:
    """The session's turn in progress: captured turns + 1 (1 for a session that has none yet)."""
    if session_id is None:
        return 1
    return 1 + (await lookup.session_turn_count(conn, session_id) or 0)


async def _turns_since(conn: Connection, session_id: int | None, instant: str) -> int:
    if session_id is None:
        return 0
    (row,) = await conn.execute_fetchall(
        "SELECT COUNT(*) FROM turns WHERE session_id = ? AND captured_at > ?", (session_id, instant)
    )
    return int(row[0])


async def _item(conn: Connection, kind: Kind, item_id: int) -> dict[str, Any] | None:
    if kind == "event":
        row = await (
            await conn.execute(
                "SELECT namespace_id, criticality, status, pinned, weight_cap, created_at FROM events WHERE id = ?",
                (item_id,),
            )
        ).fetchone()
        if row is None:
            return None
        cap = row["weight_cap"]
        if cap is None and row["status"] == "superseded":
            cap = SUPERSEDED_WEIGHT_CAP
        return {
            "namespace_id": int(row["namespace_id"]),
            "criticality": row["criticality"],
            "floor": FLOORS.get(row["criticality"], 0.0),
            "status": row["status"],
            "pinned": bool(row["pinned"]),
            "cap": None if cap is None else float(cap),
            "created_at": row["created_at"],
        }
    row = await (
        await conn.execute("SELECT namespace_id, created_at FROM graph_nodes WHERE id = ?", (item_id,))
    ).fetchone()
    if row is None:
        return None
    return {
        "namespace_id": int(row["namespace_id"]),
        "criticality": None,
        "floor": 0.0,
        "status": None,
        "pinned": False,
        "cap": None,
        "created_at": row["created_at"],
    }


async def weight_of(
    conn: Connection, namespace_id: int | None, session_id: int | None, kind: Kind, item_id: int
) -> dict[str, Any] | None:
    """The weight of one event or node as seen from a session, with every input; None if the session cannot see it
    (a node of another namespace; an event outside the visibility rule of events/visibility.py)."""
    item = await _item(conn, kind, item_id)
    if item is None:
        return None
    if item["namespace_id"] != namespace_id and not (
        kind == "event" and await event_queries.is_visible(conn, namespace_id, session_id, item_id)
    ):
        return None
    # Uses in any namespace count: a user-tier memory relied on in one project decays more slowly in every one.
    # (Item ids are unique across namespaces, so an item of this namespace only has this namespace's uses.)
    (total,) = await conn.execute_fetchall(
        "SELECT COALESCE(SUM(uses), 0) FROM memory_use_stats"
        " WHERE namespace_id IN (SELECT id FROM namespaces) AND kind = ? AND item_id = ?",  # by its index
        (kind, item_id),
    )
    uses = int(total[0])
    mine = None
    if session_id is not None:
        mine = await (
            await conn.execute(
                "SELECT uses, last_used_turn FROM memory_use_stats WHERE session_id = ? AND kind = ? AND item_id = ?",
                (session_id, kind, item_id),
            )
        ).fetchone()
    turn = await current_turn(conn, session_id)
    if mine is not None:
        distance = max(0, turn - int(mine["last_used_turn"]))
    else:
        distance = await _turns_since(conn, session_id, item["created_at"])
    weight = long_term_weight(
        distance, uses, floor=item["floor"], pinned=item["pinned"], cap=item["cap"], status=item["status"] or "active"
    )
    return {
        "id": ids.make("evt" if kind == "event" else "nod", item_id),
        "kind": kind,
        "weight": round(weight, 4),
        "distance": distance,
        "uses": uses,
        "session_uses": int(mine["uses"]) if mine is not None else 0,
        "last_used_turn": int(mine["last_used_turn"]) if mine is not None else None,
        "turn": turn,
        "decay_rate": round(decay_rate(uses), 4),
        "floor": item["floor"],
        "cap": item["cap"],
        "pinned": item["pinned"],
        "status": item["status"],
        "criticality": item["criticality"],
    }


async def event_weights(
    conn: Connection, namespace_id: int | None, session_id: int | None, event_ids: list[int]
) -> dict[int, float]:
    """``weight_of(..., "event", id)["weight"]`` for many events in five statements instead of five per event
    (activation scales a dozen candidates per step), run as one hand-off to the connection's thread; an event
    ``weight_of`` gives None for is left out."""
    if not event_ids:
        return {}
    return await on_thread(conn, lambda raw: _event_weights_now(raw, namespace_id, session_id, event_ids))


def _event_weights_now(
    raw: Raw, namespace_id: int | None, session_id: int | None, event_ids: list[int]
) -> dict[int, float]:
    marks = ", ".join("?" for _ in event_ids)
    rows = raw.execute(
        "SELECT id, namespace_id, criticality, status, pinned, weight_cap, created_at FROM events"
        f" WHERE id IN ({marks})",
        event_ids,
    ).fetchall()
    items = {
        int(r["id"]): r for r in rows
        if int(r["namespace_id"]) == namespace_id
        or event_queries.is_visible_now(raw, namespace_id, session_id, int(r["id"]))
    }
    if not items:
        return {}
    marks = ", ".join("?" for _ in items)
    uses = {
        int(r[0]): int(r[1])
        for r in raw.execute(
            "SELECT item_id, COALESCE(SUM(uses), 0) FROM memory_use_stats"
            " WHERE namespace_id IN (SELECT id FROM namespaces)"  # by its index, as weight_of
            f" AND kind = 'event' AND item_id IN ({marks}) GROUP BY item_id",
            list(items),
        )
    }
    mine: dict[int, int] = {}
    since: dict[str, int] = {}
    if session_id is not None:
        mine = {
            int(r[0]): int(r[1])
            for r in raw.execute(
                "SELECT item_id, last_used_turn FROM memory_use_stats WHERE session_id = ? AND kind = 'event'"
                f" AND item_id IN ({marks})",
                (session_id, *items),
            )
        }
        instants = sorted({str(r["created_at"]) for key, r in items.items() if key not in mine})
        if instants:
            since = {
                str(r[0]): int(r[1])
                for r in raw.execute(
                    "SELECT j.value, (SELECT COUNT(*) FROM turns WHERE session_id = ? AND captured_at > j.value)"
                    " FROM json_each(?) j",
                    (session_id, json.dumps(instants)),
                )
            }
    turn = 1 if session_id is None else 1 + (lookup.session_turn_count_now(raw, session_id) or 0)  # current_turn
    out = {}
    for key, r in items.items():
        cap = r["weight_cap"]
        if cap is None and r["status"] == "superseded":
            cap = SUPERSEDED_WEIGHT_CAP
        distance = max(0, turn - mine[key]) if key in mine else since.get(str(r["created_at"]), 0)
        weight = long_term_weight(
            distance, uses.get(key, 0), floor=FLOORS.get(r["criticality"], 0.0), pinned=bool(r["pinned"]),
            cap=None if cap is None else float(cap), status=r["status"] or "active",
        )
        out[key] = round(weight, 4)
    return out


async def reinforce(
    conn: Connection, namespace_id: int, session_id: int, kind: Kind, item_id: int, turn: int
) -> dict[str, Any]:
    """Count one use of a memory in a session's turn (inside the caller's transaction). Only use receipts call this."""
    now = now_iso()
    await conn.execute(
        "INSERT INTO memory_use_stats(namespace_id, session_id, kind, item_id, uses, first_used_turn, last_used_turn,"
        " last_used_at) VALUES (?, ?, ?, ?, 1, ?, ?, ?)"
        " ON CONFLICT(session_id, kind, item_id) DO UPDATE SET uses = uses + 1,"
        " last_used_turn = MAX(last_used_turn, excluded.last_used_turn), last_used_at = excluded.last_used_at",
        (namespace_id, session_id, kind, item_id, turn, turn, now),
    )
    (row,) = await conn.execute_fetchall(
        "SELECT uses, last_used_turn FROM memory_use_stats WHERE session_id = ? AND kind = ? AND item_id = ?",
        (session_id, kind, item_id),
    )
    return {"session_uses": int(row[0]), "last_used_turn": int(row[1])}
