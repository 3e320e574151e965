"""Reads (and the two writes) of the context archive for the agent-facing views: decompress, compress, search, status
and ``/memory purge``. Every read is scoped to one session id, which callers get from ``session_keys`` (namespace
name + session key → ids): a ref of another session or namespace is simply not found."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

import aiosqlite

from stratagate.storage import lookup
from stratagate.storage.db import Database, audit
from stratagate.timeutil import now_iso


@dataclass(frozen=True)
class Node:
    """One archived surface node (context_nodes): ``text`` is what the model saw, redacted."""

    seq: int
    type: str
    kind: str
    turn: int | None
    call_id: str | None
    tool_name: str | None
    call_ids: list[str]
    calls: list[dict[str, Any]]
    is_error: bool
    text: str
    tokens: int
    replaces: list[int]


@dataclass(frozen=True)
class Layer:
    """One replacement (context_layers): a card, a block at a level, or a fold of tier 1–3."""

    id: int
    ref: str
    kind: str
    tier: int
    auto: bool
    topic: str | None
    start_seq: int
    end_seq: int
    covers: list[int]
    children: list[str]
    block_id: int | None
    level: int | None
    text: str
    tokens: int
    shadowed_tokens: int
    state: str
    deferrals: int
    replacement_seq: int | None
    landed_at: str | None
    created_at: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _json_list(value: Any) -> list[Any]:
    try:
        out = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return []
    return out if isinstance(out, list) else []


def _node(r: sqlite3.Row) -> Node:
    return Node(
        seq=int(r["seq"]),
        type=str(r["type"]),
        kind=str(r["kind"]),
        turn=r["turn"],
        call_id=r["call_id"],
        tool_name=r["tool_name"],
        call_ids=[str(c) for c in _json_list(r["call_ids"])],
        calls=[c for c in _json_list(r["calls"]) if isinstance(c, dict)],
        is_error=bool(r["is_error"]),
        text=str(r["text"]),
        tokens=int(r["tokens"]),
        replaces=[int(s) for s in _json_list(r["replaces"]) if isinstance(s, int)],
    )


def _layer(r: sqlite3.Row) -> Layer:
    return Layer(
        id=int(r["id"]),
        ref=str(r["ref"]),
        kind=str(r["kind"]),
        tier=int(r["tier"]),
        auto=bool(r["auto"]),
        topic=r["topic"],
        start_seq=int(r["start_seq"]),
        end_seq=int(r["end_seq"]),
        covers=[int(s) for s in _json_list(r["covers"]) if isinstance(s, int)],
        children=[str(c) for c in _json_list(r["children"])],
        block_id=r["block_id"],
        level=r["level"],
        text=str(r["text"]),
        tokens=int(r["tokens"]),
        shadowed_tokens=int(r["shadowed_tokens"]),
        state=str(r["state"]),
        deferrals=int(r["deferrals"]),
        replacement_seq=r["replacement_seq"],
        landed_at=r["landed_at"],
        created_at=str(r["created_at"]),
    )


_NODE_COLS = "seq, type, kind, turn, call_id, tool_name, call_ids, calls, is_error, text, tokens, replaces"
_LAYER_COLS = (
    "id, ref, kind, tier, auto, topic, start_seq, end_seq, covers, children, block_id, level, text, tokens,"
    " shadowed_tokens, state, deferrals, replacement_seq, landed_at, created_at"
)


async def session_keys(db: Database, namespace: str, session: str) -> tuple[int, int] | None:
    """(namespace id, session id), or None when the session never reached the sidecar (so nothing is archived)."""
    ns, sess = await lookup.scope_keys(db.reader, namespace, session)
    if ns is None or sess is None:
        return None
    return ns, sess


async def nodes(db: Database, session_id: int) -> list[Node]:
    rows = await db.fetchall(f"SELECT {_NODE_COLS} FROM context_nodes WHERE session_id = ? ORDER BY seq", (session_id,))
    return [_node(r) for r in rows]


async def layers(db: Database, session_id: int) -> list[Layer]:
    """Every layer of the session, any state, oldest first."""
    rows = await db.fetchall(
        f"SELECT {_LAYER_COLS} FROM context_layers WHERE session_id = ? ORDER BY id", (session_id,)
    )
    return [_layer(r) for r in rows]


async def session_state(db: Database, session_id: int) -> dict[str, Any]:
    """The engine's per-session state (context_sessions.state, written by the planner), {} before the first plan."""
    raw = await db.scalar("SELECT state FROM context_sessions WHERE session_id = ?", (session_id,))
    try:
        state = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return state if isinstance(state, dict) else {}


async def stored_settings(db: Database) -> dict[str, Any]:
    raw = await db.scalar("SELECT settings FROM context_settings WHERE scope = 'global'")
    try:
        out = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


@dataclass(frozen=True)
class ArchiveSize:
    nodes: int
    bytes: int
    layers: int


async def archive_size(db: Database, session_id: int) -> ArchiveSize:
    row = await db.fetchone(
        "SELECT COUNT(*), COALESCE(SUM(length(CAST(text AS BLOB))), 0) FROM context_nodes WHERE session_id = ?",
        (session_id,),
    )
    count = await db.scalar("SELECT COUNT(*) FROM context_layers WHERE session_id = ?", (session_id,))
    return ArchiveSize(int(row[0]) if row else 0, int(row[1]) if row else 0, int(count or 0))


async def insert_pending_fold(
    conn: aiosqlite.Connection,
    namespace_id: int,
    session_id: int,
    *,
    tier: int,
    topic: str,
    start_seq: int,
    end_seq: int,
    covers: list[int],
    children: list[str],
    render: Any,
    shadowed_tokens: int,
    supersede: list[str],
) -> tuple[int, str, str, int]:
    """Record a model fold as a pending layer inside the caller's transaction. Its ref ``f<id>`` is known only
    after the insert, and its text names the ref, so ``render(ref) -> (text, tokens)`` builds the text then.
    Pending folds it wholly contains become ``superseded`` (they are its children). Returns (id, ref, text, tokens)."""
    now = now_iso()
    cur = await conn.execute(
        "INSERT INTO context_layers(namespace_id, session_id, ref, kind, tier, auto, topic, start_seq, end_seq,"
        " covers, children, text, tokens, shadowed_tokens, state, created_at)"
        " VALUES (?, ?, ?, 'fold', ?, 0, ?, ?, ?, ?, ?, '', 0, ?, 'pending', ?)",
        (
            namespace_id,
            session_id,
            f"pending-{now}",
            tier,
            topic,
            start_seq,
            end_seq,
            json.dumps(covers),
            json.dumps(children),
            shadowed_tokens,
            now,
        ),
    )
    layer_id = int(cur.lastrowid or 0)
    ref = f"f{layer_id}"
    text, tokens = render(ref)
    await conn.execute(
        "UPDATE context_layers SET ref = ?, text = ?, tokens = ? WHERE id = ?", (ref, text, tokens, layer_id)
    )
    for child in supersede:
        await conn.execute(
            "UPDATE context_layers SET state = 'superseded' WHERE session_id = ? AND ref = ? AND state = 'pending'",
            (session_id, child),
        )
    await audit(
        conn,
        namespace_id,
        "agent",
        "context.fold_requested",
        "context_layer",
        ref,
        after={"tier": tier, "start_seq": start_seq, "end_seq": end_seq, "shadowed_tokens": shadowed_tokens},
    )
    return layer_id, ref, text, tokens


@dataclass(frozen=True)
class Purged:
    nodes: int
    layers: int


async def purge_session(db: Database, namespace_id: int, session_id: int) -> Purged:
    """Delete this session's context archive, layers and engine state (``/memory purge confirm``, the only
    deletion, asked for by the user). Captured L5 messages, blocks and events are not touched."""
    async with db.transaction() as conn:
        cur = await conn.execute(
            "DELETE FROM context_nodes WHERE session_id = ? AND namespace_id = ?", (session_id, namespace_id)
        )
        nodes_deleted = cur.rowcount
        cur = await conn.execute(
            "DELETE FROM context_layers WHERE session_id = ? AND namespace_id = ?", (session_id, namespace_id)
        )
        layers_deleted = cur.rowcount
        await conn.execute("DELETE FROM context_sessions WHERE session_id = ?", (session_id,))
        purged = Purged(nodes=nodes_deleted, layers=layers_deleted)
        await audit(
            conn,
            namespace_id,
            "user",
            "context.purged",
            "session",
            str(session_id),
            after={"nodes": purged.nodes, "layers": purged.layers},
        )
    return purged
