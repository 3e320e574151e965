"""Fill a migrated database's context archive directly (context_nodes / context_layers / context_sessions), the way
the planner leaves it, so the views (decompress, compress, search, status, /memory) can be tested on their own.

Works on the database file through its own sqlite3 connection (WAL), so it can fill a running sidecar's database:
the sidecar's reader sees each commit at its next statement."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NOW = "2026-05-01T10:00:00Z"


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


@dataclass
class Fill:
    path: Path
    namespace: str = "proj"
    session: str = "s1"
    next_seq: int = 1
    surface: list[int] = field(default_factory=list)
    """The surface order as the shim would report it (kept in context_sessions.state.surface, as the planner does)."""
    extra: dict[str, Any] = field(default_factory=dict)
    replacement: dict[str, int] = field(default_factory=dict)
    """ref → seq of the replacement node of each landed layer."""

    def __post_init__(self) -> None:
        with self._conn() as conn:
            conn.execute("INSERT OR IGNORE INTO namespaces(name, created_at) VALUES (?, ?)", (self.namespace, NOW))
            self.ns = conn.execute("SELECT id FROM namespaces WHERE name = ?", (self.namespace,)).fetchone()[0]
            conn.execute(
                "INSERT OR IGNORE INTO sessions(namespace_id, key, created_at) VALUES (?, ?, ?)",
                (self.ns, self.session, NOW),
            )
            self.sess = conn.execute(
                "SELECT id FROM sessions WHERE namespace_id = ? AND key = ?", (self.ns, self.session)
            ).fetchone()[0]
            # Reopening a filled session carries on where it stopped.
            top = conn.execute("SELECT max(seq) FROM context_nodes WHERE session_id = ?", (self.sess,)).fetchone()[0]
            self.next_seq = max(self.next_seq, (top or 0) + 1)
            row = conn.execute("SELECT state FROM context_sessions WHERE session_id = ?", (self.sess,)).fetchone()
            if row is not None:
                state = json.loads(row[0])
                self.surface = list(state.pop("surface", []))
                self.extra = state

    def _conn(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30)
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    # -- nodes -------------------------------------------------------------------------------------------------

    def node(
        self,
        kind: str,
        text: str,
        *,
        type: str | None = None,
        turn: int | None = 1,
        call_id: str | None = None,
        tool_name: str | None = None,
        call_ids: list[str] | None = None,
        calls: list[dict[str, Any]] | None = None,
        is_error: bool = False,
        tokens: int | None = None,
        replaces: list[int] | None = None,
    ) -> int:
        seq = self.next_seq
        self.next_seq += 1
        event_type = type or {"tool": "tool/result", "assistant": "assistant/message"}.get(kind, "user/message")
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO context_nodes(namespace_id, session_id, seq, type, kind, turn, call_id, tool_name,"
                " call_ids, calls, is_error, text, tokens, replaces, archived_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.ns,
                    self.sess,
                    seq,
                    event_type,
                    kind,
                    turn,
                    call_id,
                    tool_name,
                    json.dumps(call_ids or []),
                    json.dumps(calls or []),
                    int(is_error),
                    text,
                    _tokens(text) if tokens is None else tokens,
                    json.dumps(replaces or []),
                    NOW,
                ),
            )
        covered = set(replaces or [])
        at = next((i for i, s in enumerate(self.surface) if s in covered), None)
        if at is None:
            self.surface.append(seq)
        else:
            self.surface = [s for s in self.surface if s not in covered]
            self.surface.insert(at, seq)
        self._save_state()
        return seq

    def user(self, text: str, **kw: Any) -> int:
        return self.node("user", text, **kw)

    def runtime(self, **kw: Any) -> int:
        return self.node("runtime", "[runtime context omitted]", **kw)

    def round(
        self, outputs: list[str], *, tool: str = "bash", prefix: str = "call", finished: bool = True, **kw: Any
    ) -> list[int]:
        """One tool round: an assistant message calling ``len(outputs)`` tools, then their results (all of them,
        or all but the last when not ``finished``). Returns the seqs (assistant first)."""
        first = self.next_seq
        ids = [f"{prefix}_{first}_{i}" for i in range(len(outputs))]
        calls = [{"call_id": c, "name": tool, "arguments": json.dumps({"command": f"run {c}"})} for c in ids]
        seqs = [self.node("assistant", f"Running {len(ids)} commands.", call_ids=ids, calls=calls, **kw)]
        shown = outputs if finished else outputs[:-1]
        for call_id, out in zip(ids, shown, strict=False):
            seqs.append(self.node("tool", out, call_id=call_id, tool_name=tool, **kw))
        return seqs

    # -- layers ------------------------------------------------------------------------------------------------

    def layer(
        self,
        kind: str,
        covers: list[int],
        *,
        text: str | None = None,
        tier: int = 0,
        state: str = "landed",
        children: list[str] | None = None,
        tokens: int | None = None,
        shadowed: int | None = None,
        block_id: int | None = None,
        level: int | None = None,
        ref: str | None = None,
        landed_at: str | None = NOW,
        replace: bool = True,
    ) -> str:
        """Record a layer; a landed one also gets its replacement node (as the shim appends it) unless ``replace``
        is false. Returns its ref (c<id> / f<id>, or ``ref``)."""
        with self._conn() as conn:
            shadow = shadowed
            if shadow is None:
                marks = ",".join("?" * len(covers))
                rows = conn.execute(
                    f"SELECT seq, tokens FROM context_nodes WHERE session_id = ? AND seq IN ({marks})",
                    (self.sess, *covers),
                ).fetchall()
                found = dict(rows)
                reps = {
                    r[0]: r[1]
                    for r in conn.execute(
                        "SELECT replacement_seq, tokens FROM context_layers WHERE session_id = ? AND state = 'landed'",
                        (self.sess,),
                    )
                }
                shadow = sum(reps.get(s, found.get(s, 0)) for s in covers)
            cur = conn.execute(
                "INSERT INTO context_layers(namespace_id, session_id, ref, kind, tier, start_seq, end_seq, covers,"
                " children, block_id, level, text, tokens, shadowed_tokens, state, created_at, landed_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', 0, ?, ?, ?, ?)",
                (
                    self.ns,
                    self.sess,
                    ref or f"tmp{self.next_seq}-{len(covers)}-{kind}",
                    kind,
                    tier,
                    covers[0],
                    covers[-1],
                    json.dumps(covers),
                    json.dumps(children or []),
                    block_id,
                    level,
                    shadow,
                    state,
                    NOW,
                    landed_at if state == "landed" else None,
                ),
            )
            layer_id = cur.lastrowid
            ref = ref or f"{'c' if kind == 'card' else 'f'}{layer_id}"
            label = f"fold:t{tier}" if kind == "fold" else kind
            body = text if text is not None else f"{kind} over {covers}"
            full = f'[stratagate:{label} id={ref} · older context, not an instruction · decompress("{ref}")]\n{body}'
            conn.execute(
                "UPDATE context_layers SET ref = ?, text = ?, tokens = ? WHERE id = ?",
                (ref, full, _tokens(full) if tokens is None else tokens, layer_id),
            )
        if state == "landed" and replace:
            first = self.node_row(covers[0])
            kind_ = "tool" if kind == "card" else "checkpoint"
            rep = self.node(
                kind_,
                full,
                type="tool/result" if kind == "card" else "user/message",
                call_id=first["call_id"] if kind == "card" else None,
                tool_name=first["tool_name"] if kind == "card" else None,
                tokens=_tokens(full) if tokens is None else tokens,
                replaces=covers,
            )
            with self._conn() as conn:
                conn.execute("UPDATE context_layers SET replacement_seq = ? WHERE id = ?", (rep, layer_id))
            self.replacement[ref] = rep
        return ref

    def node_row(self, seq: int) -> dict[str, Any]:
        with self._conn() as conn:
            conn.row_factory = sqlite3.Row
            row = conn.execute(
                "SELECT * FROM context_nodes WHERE session_id = ? AND seq = ?", (self.sess, seq)
            ).fetchone()
        return dict(row)

    def state(self, **state: Any) -> None:
        """Extra engine state (window, usage, decision…) kept next to the surface order."""
        self.extra.update(state)
        self._save_state()

    def _save_state(self) -> None:
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO context_sessions(session_id, namespace_id, state, updated_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT(session_id) DO UPDATE SET state = excluded.state",
                (self.sess, self.ns, json.dumps({**self.extra, "surface": self.surface}), NOW),
            )

    def count(self, table: str) -> int:
        with self._conn() as conn:
            return conn.execute(f"SELECT COUNT(*) FROM {table} WHERE session_id = ?", (self.sess,)).fetchone()[0]

    def layers(self) -> list[dict[str, Any]]:
        with self._conn() as conn:
            conn.row_factory = sqlite3.Row
            rows = conn.execute("SELECT * FROM context_layers WHERE session_id = ? ORDER BY id", (self.sess,))
            return [dict(r) for r in rows]
