"""The context engine's SQL (tests/test_sql_placement.py: SQL stays in storage-facing modules).

``conn`` is the reader, or the writer inside the caller's ``Database.transaction()``. Archived nodes are only ever
inserted (a trigger refuses updates); layers only change state, landing and text of a pending row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from stratagate.context.records import Layer, Node
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import now_iso

_NODE_COLUMNS = "seq, type, kind, turn, step, call_id, tool_name, calls, is_error, text, tokens, replaces"
_LAYER_COLUMNS = (
    "id, ref, kind, tier, auto, topic, start_seq, end_seq, covers, children, block_id, level, text, tokens,"
    " shadowed_tokens, state, deferrals, replacement_seq, error, created_at, landed_at"
)


# --- nodes -------------------------------------------------------------------------------------------------------


async def insert_node(conn: Connection, ns_id: int, session_id: int, node: Node) -> bool:
    """Archive one node; False when (session, seq) was archived before (the first copy wins: immutable)."""
    cur = await conn.execute(
        "INSERT OR IGNORE INTO context_nodes(namespace_id, session_id, seq, type, kind, turn, step, call_id,"
        " tool_name, call_ids, calls, is_error, text, tokens, replaces, archived_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            ns_id, session_id, node.seq, node.type, node.kind, node.turn, node.step, node.call_id, node.tool_name,
            json.dumps(node.call_ids), json.dumps([c.public() for c in node.calls], ensure_ascii=False),
            int(node.is_error), node.text, node.tokens, json.dumps(list(node.replaces)), now_iso(),
        ),
    )
    return cur.rowcount > 0


async def archived_through(conn: Connection, session_id: int) -> int:
    """The highest archived seq of the session (-1 when none)."""
    row = await (
        await conn.execute("SELECT max(seq) FROM context_nodes WHERE session_id = ?", (session_id,))
    ).fetchone()
    return -1 if row is None or row[0] is None else int(row[0])


async def archived_seqs(conn: Connection, session_id: int, seqs: Sequence[int]) -> set[int]:
    found: set[int] = set()
    for chunk in _chunks(seqs):
        marks = ",".join("?" * len(chunk))
        rows = await conn.execute_fetchall(
            f"SELECT seq FROM context_nodes WHERE session_id = ? AND seq IN ({marks})", (session_id, *chunk)
        )
        found.update(int(r[0]) for r in rows)
    return found


async def nodes_by_seqs(conn: Connection, session_id: int, seqs: Sequence[int]) -> dict[int, Node]:
    out: dict[int, Node] = {}
    for chunk in _chunks(seqs):
        marks = ",".join("?" * len(chunk))
        rows = await conn.execute_fetchall(
            f"SELECT {_NODE_COLUMNS} FROM context_nodes WHERE session_id = ? AND seq IN ({marks})",
            (session_id, *chunk),
        )
        out.update((int(r["seq"]), Node.from_row(r)) for r in rows)
    return out


async def session_nodes(conn: Connection, session_id: int) -> list[Node]:
    """Every archived node of the session, by seq (originals and replacements alike)."""
    rows = await conn.execute_fetchall(
        f"SELECT {_NODE_COLUMNS} FROM context_nodes WHERE session_id = ? ORDER BY seq", (session_id,)
    )
    return [Node.from_row(r) for r in rows]


async def count_requests(conn: Connection, session_id: int) -> int:
    """Requests sent so far, estimated by the assistant messages archived (one per model request)."""
    (row,) = await conn.execute_fetchall(
        "SELECT count(*) FROM context_nodes WHERE session_id = ? AND type = 'assistant/message'"
        " AND replaces = '[]'",
        (session_id,),
    )
    return int(row[0])


async def archive_size(conn: Connection, session_id: int) -> tuple[int, int, int]:
    """(nodes, text bytes, tokens) of the session's archive."""
    (row,) = await conn.execute_fetchall(
        "SELECT count(*), coalesce(sum(length(CAST(text AS BLOB))), 0), coalesce(sum(tokens), 0)"
        " FROM context_nodes WHERE session_id = ?",
        (session_id,),
    )
    return int(row[0]), int(row[1]), int(row[2])


# --- layers ------------------------------------------------------------------------------------------------------


async def insert_layer(
    conn: Connection,
    ns_id: int,
    session_id: int,
    *,
    prefix: str | None,
    kind: str,
    start_seq: int,
    end_seq: int,
    covers: Sequence[int],
    text: str | Callable[[str], str],
    tokens: int | Callable[[str], int],
    shadowed_tokens: int,
    tier: int = 0,
    auto: bool = False,
    topic: str | None = None,
    children: Sequence[str] = (),
    block_id: int | None = None,
    level: int | None = None,
    ref: str | None = None,
    state: str = "pending",
) -> Layer:
    """A new layer row. Its ref is ``ref`` or ``<prefix><id>`` (c7, f9). ``text`` may be a function of the ref (the
    tag line names it before the id exists), ``tokens`` a function of the text."""
    placeholder = ref or f"?{now_iso()}"
    cur = await conn.execute(
        "INSERT INTO context_layers(namespace_id, session_id, ref, kind, tier, auto, topic, start_seq, end_seq,"
        " covers, children, block_id, level, text, tokens, shadowed_tokens, state, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', 0, ?, ?, ?)",
        (
            ns_id, session_id, placeholder, kind, tier, int(auto), topic, start_seq, end_seq,
            json.dumps(list(covers)), json.dumps(list(children)), block_id, level, shadowed_tokens, state, now_iso(),
        ),
    )
    layer_id = int(cur.lastrowid or 0)
    final = ref or f"{prefix}{layer_id}"
    body = text(final) if callable(text) else text
    size = tokens(body) if callable(tokens) else tokens
    await conn.execute(
        "UPDATE context_layers SET ref = ?, text = ?, tokens = ? WHERE id = ?", (final, body, size, layer_id)
    )
    layer = await layer_by_id(conn, layer_id)
    assert layer is not None
    return layer


async def layer_by_id(conn: Connection, layer_id: int) -> Layer | None:
    row = await (
        await conn.execute(f"SELECT {_LAYER_COLUMNS} FROM context_layers WHERE id = ?", (layer_id,))
    ).fetchone()
    return None if row is None else Layer.from_row(row)


async def layer_by_ref(conn: Connection, session_id: int, ref: str) -> Layer | None:
    row = await (
        await conn.execute(
            f"SELECT {_LAYER_COLUMNS} FROM context_layers WHERE session_id = ? AND ref = ?", (session_id, ref)
        )
    ).fetchone()
    return None if row is None else Layer.from_row(row)


async def session_layers(
    conn: Connection, session_id: int, states: Iterable[str] | None = None
) -> list[Layer]:
    """The session's layers (of the given states), oldest first."""
    wanted = list(states) if states is not None else None
    if wanted is None:
        rows = await conn.execute_fetchall(
            f"SELECT {_LAYER_COLUMNS} FROM context_layers WHERE session_id = ? ORDER BY id", (session_id,)
        )
    else:
        marks = ",".join("?" * len(wanted))
        rows = await conn.execute_fetchall(
            f"SELECT {_LAYER_COLUMNS} FROM context_layers WHERE session_id = ? AND state IN ({marks}) ORDER BY id",
            (session_id, *wanted),
        )
    return [Layer.from_row(r) for r in rows]


async def find_pending(
    conn: Connection, session_id: int, kind: str, start_seq: int, end_seq: int, auto: bool
) -> Layer | None:
    """A pending layer of this kind over exactly this span (re-planned after a deferral or a failed landing)."""
    row = await (
        await conn.execute(
            f"SELECT {_LAYER_COLUMNS} FROM context_layers WHERE session_id = ? AND state = 'pending' AND kind = ?"
            " AND start_seq = ? AND end_seq = ? AND auto = ? ORDER BY id DESC LIMIT 1",
            (session_id, kind, start_seq, end_seq, int(auto)),
        )
    ).fetchone()
    return None if row is None else Layer.from_row(row)


async def refresh_pending(conn: Connection, layer_id: int, text: str, tokens: int, shadowed: int,
                          covers: Sequence[int], children: Sequence[str], level: int | None) -> None:
    """A pending layer re-planned over the same span: its content follows what the surface holds now."""
    await conn.execute(
        "UPDATE context_layers SET text = ?, tokens = ?, shadowed_tokens = ?, covers = ?, children = ?, level = ?"
        " WHERE id = ? AND state = 'pending'",
        (text, tokens, shadowed, json.dumps(list(covers)), json.dumps(list(children)), level, layer_id),
    )


async def add_deferrals(conn: Connection, layer_ids: Sequence[int]) -> None:
    for chunk in _chunks(layer_ids):
        marks = ",".join("?" * len(chunk))
        await conn.execute(
            f"UPDATE context_layers SET deferrals = deferrals + 1 WHERE state = 'pending' AND id IN ({marks})",
            tuple(chunk),
        )


async def mark_landed(conn: Connection, layer_id: int, replacement_seq: int) -> None:
    await conn.execute(
        "UPDATE context_layers SET state = 'landed', replacement_seq = ?, error = NULL, landed_at = ? WHERE id = ?",
        (replacement_seq, now_iso(), layer_id),
    )


async def reland(conn: Connection, layer_id: int, text: str, tokens: int, level: int,
                 replacement_seq: int) -> None:
    """A landed block shown again at its decayed level: the same layer, its new text in a new replacement node."""
    await conn.execute(
        "UPDATE context_layers SET text = ?, tokens = ?, level = ?, replacement_seq = ?, landed_at = ?"
        " WHERE id = ? AND state = 'landed'",
        (text, tokens, level, replacement_seq, now_iso(), layer_id),
    )


async def mark_failed(conn: Connection, layer_id: int, error: str) -> None:
    """The host refused it: nothing landed, so it waits again (pending) with the reason recorded."""
    await conn.execute(
        "UPDATE context_layers SET state = 'pending', error = ? WHERE id = ? AND state = 'pending'",
        (error, layer_id),
    )


async def set_state(conn: Connection, layer_ids: Sequence[int], state: str, error: str | None = None) -> None:
    for chunk in _chunks(layer_ids):
        marks = ",".join("?" * len(chunk))
        await conn.execute(
            f"UPDATE context_layers SET state = ?, error = coalesce(?, error) WHERE id IN ({marks})",
            (state, error, *chunk),
        )


async def delete_session_context(conn: Connection, session_id: int) -> tuple[int, int]:
    """``/memory purge confirm``: this session's archive and layers (the only deletion, user-initiated). The
    immutability trigger guards updates only."""
    layers = await conn.execute("DELETE FROM context_layers WHERE session_id = ?", (session_id,))
    nodes = await conn.execute("DELETE FROM context_nodes WHERE session_id = ?", (session_id,))
    await conn.execute("DELETE FROM context_sessions WHERE session_id = ?", (session_id,))
    return int(nodes.rowcount), int(layers.rowcount)


# --- per-session state and settings --------------------------------------------------------------------------------


async def session_state(conn: Connection, session_id: int) -> dict[str, Any] | None:
    row = await (
        await conn.execute("SELECT state FROM context_sessions WHERE session_id = ?", (session_id,))
    ).fetchone()
    return None if row is None else dict(json.loads(row[0]))


async def put_session_state(conn: Connection, ns_id: int, session_id: int, state: dict[str, Any]) -> None:
    await conn.execute(
        "INSERT INTO context_sessions(session_id, namespace_id, state, updated_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT(session_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
        (session_id, ns_id, json.dumps(state, ensure_ascii=False, separators=(",", ":")), now_iso()),
    )


async def state_by_name(conn: Connection, namespace: str, session: str) -> dict[str, Any] | None:
    """The engine's state of a session by names (None: the engine never planned for it, so it does not manage it)."""
    row = await (
        await conn.execute(
            "SELECT c.state FROM context_sessions c JOIN sessions s ON s.id = c.session_id"
            " JOIN namespaces n ON n.id = s.namespace_id WHERE n.name = ? AND s.key = ?",
            (namespace, session),
        )
    ).fetchone()
    return None if row is None else dict(json.loads(row[0]))


async def newest_model_fold(conn: Connection, namespace: str, session: str) -> int:
    """The id of the session's newest model-written fold (0: none): a ``compress`` answers the reminders."""
    row = await (
        await conn.execute(
            "SELECT max(l.id) FROM context_layers l JOIN sessions s ON s.id = l.session_id"
            " JOIN namespaces n ON n.id = s.namespace_id WHERE n.name = ? AND s.key = ? AND l.kind = 'fold'"
            " AND l.auto = 0",
            (namespace, session),
        )
    ).fetchone()
    return 0 if row is None or row[0] is None else int(row[0])


async def is_managed(conn: Connection, namespace: str, session: str) -> bool:
    """Whether the engine manages this session's history (it has planned for it at least once)."""
    return await state_by_name(conn, namespace, session) is not None


async def stored_settings(conn: Connection) -> dict[str, Any]:
    row = await (await conn.execute("SELECT settings FROM context_settings WHERE scope = 'global'")).fetchone()
    return {} if row is None else dict(json.loads(row[0]))


async def put_settings(conn: Connection, settings: dict[str, Any]) -> None:
    await conn.execute(
        "INSERT INTO context_settings(scope, settings, updated_at) VALUES ('global', ?, ?)"
        " ON CONFLICT(scope) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at",
        (json.dumps(settings, sort_keys=True), now_iso()),
    )


# --- blocks of the session ----------------------------------------------------------------------------------------


async def block_turn_receipts(conn: Connection, session_id: int) -> dict[int, list[str]]:
    """Receipts of each block's turns (``dsh:<session>:turn:<n>`` maps a block to DSH turns)."""
    rows = await conn.execute_fetchall(
        "SELECT block_id, receipt FROM turns WHERE session_id = ? AND block_id IS NOT NULL ORDER BY seq",
        (session_id,),
    )
    out: dict[int, list[str]] = {}
    for r in rows:
        out.setdefault(int(r[0]), []).append(str(r[1]))
    return out


def _chunks(values: Sequence[int] | Iterable[int], size: int = 500) -> list[list[int]]:
    items = list(values)
    return [items[i : i + size] for i in range(0, len(items), size)]
