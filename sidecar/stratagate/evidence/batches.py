"""Retrieval batches: every retrieval tool result is stored as a numbered batch of the evidence refs it showed.

The result gains ``batch_id`` (``rb_N``, never reused, also across restarts) and ``evidence_refs`` (the ``evt_`` /
``nod_`` / ``fct_`` / ``msg_`` / ``blk_`` ids it shows, in order of appearance). memory_assess judges one batch;
memory_record_use names the refs an answer relied on. A batch belongs to the session that retrieved it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from stratagate import ids
from stratagate.errors import Invalid, NotFound, is_storage_full
from stratagate.protocol.context import ToolContext
from stratagate.redact import redact_value
from stratagate.storage import lookup
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import now_iso

REF_PREFIXES = ("evt", "nod", "fct", "msg", "blk")
REF = re.compile(r"^(" + "|".join(REF_PREFIXES) + r")_[1-9][0-9]{0,17}$")
MAX_REFS = 256
"""A batch keeps at most this many refs (the first ones shown); larger results are cut, never refused."""
NOT_EVIDENCE_KEYS = frozenset({"query"})
"""Result keys that echo the caller's own input: an id there was asked for, not shown."""
QUERY_ARGS = ("query", "id", "node")
STORAGE_FULL_NOTE = (
    "storage is full (disk full or STRATAGATE_DB_MAX_MB reached): this result was not recorded as a retrieval "
    "batch, so memory_assess and memory_record_use cannot refer to it"
)

ToolRun = Callable[[ToolContext, Any], Awaitable[dict[str, Any]]]


def collect_refs(result: Any) -> list[str]:
    """Every evidence id the result shows (whole string values only), first appearance first, without repeats."""
    found: dict[str, None] = {}

    def walk(value: Any) -> None:
        if len(found) >= MAX_REFS:
            return
        if isinstance(value, str):
            if REF.match(value):
                found.setdefault(value)
        elif isinstance(value, dict):
            for key, item in value.items():
                if key not in NOT_EVIDENCE_KEYS:
                    walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk(result)
    return list(found)[:MAX_REFS]


@dataclass(frozen=True)
class Batch:
    id: int
    namespace_id: int
    session_id: int
    tool: str
    query: str | None
    refs: tuple[str, ...]
    turn: int
    created_at: str

    @property
    def public_id(self) -> str:
        return ids.make("rb", self.id)

    @classmethod
    def from_row(cls, row: Any) -> Batch:
        return cls(
            id=int(row["id"]),
            namespace_id=int(row["namespace_id"]),
            session_id=int(row["session_id"]),
            tool=row["tool"],
            query=row["query"],
            refs=tuple(json.loads(row["evidence_refs"])),
            turn=int(row["turn"]),
            created_at=row["created_at"],
        )


def parse_batch_id(value: str) -> int:
    key = ids.parse(value, "rb")
    if key is None:
        raise Invalid(f"batch ids look like 'rb_12' (got {value!r}); every retrieval result names its batch_id")
    return key


async def get_batch(conn: Connection, batch_id: int) -> Batch | None:
    row = await (await conn.execute("SELECT * FROM retrieval_batches WHERE id = ?", (batch_id,))).fetchone()
    return None if row is None else Batch.from_row(row)


async def visible_batch(conn: Connection, ctx: ToolContext, value: str) -> Batch:
    """The caller's own batch; -32004 for an unknown one or one of another namespace or session (they look alike)."""
    key = parse_batch_id(value)
    ns, sess = await lookup.scope_keys(conn, ctx.namespace, ctx.session)
    batch = await get_batch(conn, key)
    if batch is None or ns is None or batch.namespace_id != ns or batch.session_id != sess:
        raise NotFound(f"unknown retrieval batch {ids.make('rb', key)} in this session")
    return batch


async def batch_showing(conn: Connection, session_id: int, ref: str) -> int | None:
    """The newest batch of the session that showed ``ref``."""
    row = await (
        await conn.execute(
            "SELECT b.id FROM retrieval_batches b, json_each(b.evidence_refs) j"
            " WHERE b.session_id = ? AND j.value = ? ORDER BY b.id DESC LIMIT 1",
            (session_id, ref),
        )
    ).fetchone()
    return None if row is None else int(row[0])


def _redacted(value: Any) -> Any:
    return redact_value(value)


def _query(arguments: dict[str, Any]) -> str | None:
    for key in QUERY_ARGS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


async def record_batch(ctx: ToolContext, tool: str, args: BaseModel, result: dict[str, Any]) -> dict[str, Any]:
    """Store the result's evidence as a new batch of the caller's session; the result with batch_id and refs first."""
    refs = collect_refs(result)
    arguments = _redacted(args.model_dump(mode="json"))
    async with ctx.db.transaction() as conn:
        ns = await lookup.ensure_namespace(conn, ctx.namespace)
        sess, captured = await lookup.ensure_session(conn, ns, ctx.session)
        cur = await conn.execute(
            "INSERT INTO retrieval_batches(namespace_id, session_id, tool, query, arguments, evidence_refs, turn,"
            " call_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                ns,
                sess,
                tool,
                _query(arguments),
                json.dumps(arguments, ensure_ascii=False),
                json.dumps(refs),
                captured + 1,
                ctx.call_id,
                now_iso(),
            ),
        )
        key = int(cur.lastrowid or 0)
    return {"batch_id": ids.make("rb", key), "evidence_refs": refs, **result}


def batched(tool: str, run: ToolRun) -> ToolRun:
    """Wrap a retrieval tool so that each successful result becomes a batch (errors stay errors, with no batch)."""

    async def run_batched(ctx: ToolContext, args: Any) -> dict[str, Any]:
        result = await run(ctx, args)
        try:
            return await record_batch(ctx, tool, args, result)
        except Exception as exc:
            if not is_storage_full(exc):
                raise
            # A full disk (or the STRATAGATE_DB_MAX_MB cap) must not take recall away: answer without a batch.
            return {"batch_id": None, "evidence_refs": collect_refs(result), "note": STORAGE_FULL_NOTE, **result}

    return run_batched


# --- settled / open ------------------------------------------------------------------------------------------------


async def open_batches(conn: Connection, session_id: int, turn: int) -> list[dict[str, Any]]:
    """Batches of one session turn left open: no receipt settles them, and no assessment says they were not enough.

    ``state`` is ``unassessed`` (never judged) or ``unrecorded`` (judged sufficient, no receipt yet). A batch whose
    latest assessment is partial or wrong is settled: nothing in it can count as used.
    """
    rows = await (
        await conn.execute(
            "SELECT b.*, (SELECT a.verdict FROM evidence_assessments a WHERE a.batch_id = b.id"
            "  ORDER BY a.id DESC LIMIT 1) AS verdict"
            " FROM retrieval_batches b WHERE b.session_id = ? AND b.turn = ?"
            " AND NOT EXISTS (SELECT 1 FROM use_receipt_batches rb WHERE rb.batch_id = b.id)"
            " ORDER BY b.id",
            (session_id, turn),
        )
    ).fetchall()
    out = []
    for row in rows:
        if row["verdict"] in ("partial", "wrong"):
            continue
        batch = Batch.from_row(row)
        out.append(
            {
                "batch_id": batch.public_id,
                "tool": batch.tool,
                "query": batch.query,
                "refs": len(batch.refs),
                "state": "unrecorded" if row["verdict"] == "sufficient" else "unassessed",
                "created_at": batch.created_at,
            }
        )
    return out
