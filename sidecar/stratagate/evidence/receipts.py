"""memory_record_use: a use receipt names the evidence an answer relied on. Receipts are the only thing that
strengthens a memory's long-term weight.

* A ref counts only if the latest assessment of the batch it came from is ``sufficient`` and names it. With
  ``batch_id`` the refs are checked against that batch; without it, each ref is matched to the newest batch of this
  session whose latest assessment is sufficient and names it. The result lists what counted and, for every other
  ref, why not.
* ``evidence_refs: []`` says no memory was used: with ``batch_id`` it settles that batch, without it every open batch
  of the current turn.
* Idempotent: the key is the session, the batch (or none), the sorted refs and the assessments they were checked
  against. The same call again (also after a restart) returns the stored receipt with ``duplicate: true`` and changes
  nothing. Beyond that, a ref counts once per batch, and each event or node is strengthened at most once per batch.
* Event refs strengthen that event (not when forgotten or archived); node refs and fact refs strengthen the node;
  message and block refs count as evidence but have no long-term weight.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from stratagate import ids
from stratagate.evidence import batches, weights
from stratagate.evidence.gate import Ref
from stratagate.protocol.context import ToolContext
from stratagate.redact import redact_value
from stratagate.storage.db import audit
from stratagate.storage.lookup import ensure_namespace, ensure_session
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import now_iso

MAX_USE_REFS = 50
NOT_A_REF = "not an evidence ref (an evt_, nod_, fct_, msg_ or blk_ id)"


class RecordUseArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    batch_id: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="The batch the refs come from ('rb_12'); omit to match each ref to this session's sufficient "
        "assessments.",
    )
    evidence_refs: list[Ref] = Field(
        max_length=MAX_USE_REFS,
        description="Exactly the refs your answer relied on; [] if it used no memory.",
    )


@dataclass
class Assessment:
    id: int
    batch_id: int
    verdict: str
    refs: tuple[str, ...]

    @property
    def public_id(self) -> str:
        return ids.make("asm", self.id)


def _assessment(row: Any) -> Assessment:
    return Assessment(int(row["id"]), int(row["batch_id"]), row["verdict"], tuple(json.loads(row["evidence_refs"])))


async def latest_assessment(conn: Connection, batch_id: int) -> Assessment | None:
    row = await (
        await conn.execute(
            "SELECT id, batch_id, verdict, evidence_refs FROM evidence_assessments WHERE batch_id = ?"
            " ORDER BY id DESC LIMIT 1",
            (batch_id,),
        )
    ).fetchone()
    return None if row is None else _assessment(row)


async def sufficient_for(conn: Connection, session_id: int, ref: str) -> Assessment | None:
    """The newest batch of the session whose latest assessment is sufficient and names ``ref``."""
    row = await (
        await conn.execute(
            "SELECT a.id, a.batch_id, a.verdict, a.evidence_refs"
            " FROM evidence_assessments a, json_each(a.evidence_refs) j"
            " WHERE a.session_id = ? AND a.verdict = 'sufficient' AND j.value = ?"
            " AND a.id = (SELECT MAX(b.id) FROM evidence_assessments b WHERE b.batch_id = a.batch_id)"
            " ORDER BY a.batch_id DESC LIMIT 1",
            (session_id, ref),
        )
    ).fetchone()
    return None if row is None else _assessment(row)


def _why_not(batch: str, ref: str, shown: bool, assessment: Assessment | None) -> str | None:
    """Why ``ref`` of ``batch`` does not count, or None when it does."""
    if not shown:
        return f"{batch} did not show {ref}"
    if assessment is None:
        return f"{batch} has not been assessed; call memory_assess first (only refs of a sufficient assessment count)"
    if assessment.verdict != "sufficient":
        return (
            f"the latest assessment of {batch} ({assessment.public_id}) is {assessment.verdict}; "
            "only refs of a sufficient assessment count"
        )
    if ref not in assessment.refs:
        return f"not among the refs of the sufficient assessment {assessment.public_id} of {batch}"
    return None


async def _target(conn: Connection, ref: str) -> tuple[Literal["source"] | weights.Kind, int | None, str | None]:
    """(kind, item id, note): what a counted ref strengthens. Sources and gone memories strengthen nothing."""
    if (key := ids.parse(ref, "evt")) is not None:
        row = await (await conn.execute("SELECT status FROM events WHERE id = ?", (key,))).fetchone()
        if row is None:
            return "source", None, "the event no longer exists"
        if row[0] in weights.GONE:
            return "event", key, f"{row[0]}: not strengthened"
        return "event", key, None
    if (key := ids.parse(ref, "nod")) is not None:
        row = await (await conn.execute("SELECT id FROM graph_nodes WHERE id = ?", (key,))).fetchone()
        return ("node", key, None) if row else ("source", None, "the node no longer exists")
    if (key := ids.parse(ref, "fct")) is not None:
        row = await (await conn.execute("SELECT node_id FROM graph_facts WHERE id = ?", (key,))).fetchone()
        return ("node", int(row[0]), None) if row else ("source", None, "the fact no longer exists")
    return "source", None, "a source (message or block): evidence, without a long-term weight"


async def _strengthened(conn: Connection, batch_id: int, kind: str, item_id: int) -> bool:
    row = await (
        await conn.execute(
            "SELECT 1 FROM evidence_uses WHERE batch_id = ? AND kind = ? AND item_id = ? AND reinforced = 1",
            (batch_id, kind, item_id),
        )
    ).fetchone()
    return row is not None


def _key(material: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


async def _existing(conn: Connection, key: str) -> dict[str, Any] | None:
    row = await (
        await conn.execute("SELECT id, result, created_at FROM use_receipts WHERE idempotency_key = ?", (key,))
    ).fetchone()
    if row is None:
        return None
    return _public(int(row["id"]), json.loads(row["result"]), row["created_at"], duplicate=True)


def _public(receipt_id: int, stored: dict[str, Any], created_at: str, duplicate: bool) -> dict[str, Any]:
    return {"receipt_id": ids.make("rcp", receipt_id), **stored, "duplicate": duplicate, "created_at": created_at}


Counted = tuple[str, int, Assessment]
"""A ref that counts: (ref, the batch it counts for, the sufficient assessment of that batch that names it)."""
Use = tuple[int, int, str, str, int | None, bool]
"""A row of ``evidence_uses``: (batch, assessment, ref, kind, item id, reinforced)."""


@dataclass
class _Checked:
    """The refs checked: which count, which do not and why, which batches the receipt settles, and what of this the
    idempotency key covers (the assessments checked against, and for a receipt of no refs the turn it settles)."""

    counted: list[Counted]
    not_counted: list[dict[str, str]]
    settles: list[int]
    key_material: dict[str, Any]


async def _check_in_batch(conn: Connection, batch: batches.Batch, refs: list[str]) -> _Checked:
    """With ``batch_id``: every ref against that batch's latest assessment; the receipt settles that batch."""
    counted: list[Counted] = []
    not_counted: list[dict[str, str]] = []
    assessment = await latest_assessment(conn, batch.id)
    for ref in refs:
        reason = (
            NOT_A_REF
            if not batches.REF.match(ref)
            else _why_not(batch.public_id, ref, ref in batch.refs, assessment)
        )
        if reason is None and assessment is not None:
            counted.append((ref, batch.id, assessment))
        else:
            not_counted.append({"ref": ref, "reason": reason or "not counted"})
    basis = [] if assessment is None else [assessment.id]
    return _Checked(counted, not_counted, [batch.id], {"basis": basis})


async def _check_in_session(conn: Connection, sess: int, turn: int, refs: list[str]) -> _Checked:
    """Without ``batch_id``: each ref matched to the newest batch of the session whose latest assessment is
    sufficient and names it. No refs settle every open batch of the current turn."""
    counted: list[Counted] = []
    not_counted: list[dict[str, str]] = []
    for ref in refs:
        if not batches.REF.match(ref):
            not_counted.append({"ref": ref, "reason": NOT_A_REF})
            continue
        found = await sufficient_for(conn, sess, ref)
        if found is not None:
            counted.append((ref, found.batch_id, found))
            continue
        shown = await batches.batch_showing(conn, sess, ref)
        not_counted.append(
            {
                "ref": ref,
                "reason": (
                    f"{ids.make('rb', shown)} showed it, but no sufficient assessment of this session names it"
                    if shown is not None
                    else "no retrieval batch of this session showed it"
                ),
            }
        )
    material: dict[str, Any] = {"basis": sorted({a.id for _, _, a in counted})}
    if refs:
        settles = sorted({b for _, b, _ in counted})
    else:
        open_now = await batches.open_batches(conn, sess, turn)
        settles = [batches.parse_batch_id(b["batch_id"]) for b in open_now]
        material["turn"], material["settles"] = turn, settles
    return _Checked(counted, not_counted, settles, material)


async def _plan_uses(
    conn: Connection, ns: int, sess: int, turn: int, counted: list[Counted]
) -> tuple[list[Use], list[dict[str, Any]], list[dict[str, Any]]]:
    """The counted uses, strengthening their memories: (uses, each counted ref's entry, the memories strengthened).
    A ref counts once per batch; a memory is strengthened once per batch."""
    uses: list[Use] = []
    detail: list[dict[str, Any]] = []
    reinforced: list[dict[str, Any]] = []
    done: set[tuple[int, str, int]] = set()
    for ref, batch_key, assessment in counted:
        entry: dict[str, Any] = {
            "ref": ref,
            "batch_id": ids.make("rb", batch_key),
            "assessment_id": assessment.public_id,
            "strengthens": None,
        }
        earlier = await (
            await conn.execute(
                "SELECT receipt_id FROM evidence_uses WHERE batch_id = ? AND ref = ?", (batch_key, ref)
            )
        ).fetchone()
        if earlier is not None:
            entry["note"] = f"already counted for {entry['batch_id']} by {ids.make('rcp', int(earlier[0]))}"
            detail.append(entry)
            continue
        kind, item, note = await _target(conn, ref)
        strengthen = kind != "source" and note is None
        if kind != "source" and note is None and item is not None:
            if (batch_key, kind, item) in done or await _strengthened(conn, batch_key, kind, item):
                strengthen = False
                note = f"{ids.make('evt' if kind == 'event' else 'nod', item)} already strengthened for this batch"
            else:
                done.add((batch_key, kind, item))
                target = ids.make("evt" if kind == "event" else "nod", item)
                stats = await weights.reinforce(conn, ns, sess, kind, item, turn)
                entry["strengthens"] = target
                reinforced.append({"id": target, "session_uses": stats["session_uses"], "turn": turn})
        if note:
            entry["note"] = note
        uses.append((batch_key, assessment.id, ref, kind, item, strengthen))
        detail.append(entry)
    return uses, detail, reinforced


async def _store_receipt(
    conn: Connection,
    ctx: ToolContext,
    key: str,
    where: tuple[int, int, int | None],
    stored: dict[str, Any],
    settles: list[int],
    uses: list[Use],
) -> tuple[int, str]:
    """Insert the receipt, the batches it settles and its uses, and audit it: (receipt id, created_at).
    ``where``: (namespace, session, batch or None)."""
    ns, sess, batch_id = where
    counted_refs = [e["ref"] for e in stored["counted"]]
    created_at = now_iso()
    cur = await conn.execute(
        "INSERT INTO use_receipts(idempotency_key, namespace_id, session_id, batch_id, evidence_refs, counted_refs,"
        " result, turn, call_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            key,
            ns,
            sess,
            batch_id,
            json.dumps(stored["evidence_refs"]),
            json.dumps(counted_refs),
            json.dumps(redact_value(stored), ensure_ascii=False),
            stored["turn"],
            ctx.call_id,
            created_at,
        ),
    )
    receipt = int(cur.lastrowid or 0)
    for b in settles:
        await conn.execute("INSERT INTO use_receipt_batches(receipt_id, batch_id) VALUES (?, ?)", (receipt, b))
    for batch_key, assessment_id, ref, kind, item, strengthen in uses:
        await conn.execute(
            "INSERT INTO evidence_uses(receipt_id, batch_id, assessment_id, ref, kind, item_id, reinforced)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (receipt, batch_key, assessment_id, ref, kind, item, int(strengthen)),
        )
    await audit(
        conn,
        ns,
        "agent",
        "evidence.used",
        "use_receipt",
        ids.make("rcp", receipt),
        None,
        {k: stored[k] for k in ("batch_id", "evidence_refs", "reinforced", "settles")} | {"counted": counted_refs},
    )
    return receipt, created_at


async def record_use(ctx: ToolContext, args: RecordUseArgs) -> dict[str, Any]:
    refs = sorted(set(args.evidence_refs))
    async with ctx.db.transaction() as conn:
        batch = await batches.visible_batch(conn, ctx, args.batch_id) if args.batch_id is not None else None
        if batch is not None:
            ns, sess = batch.namespace_id, batch.session_id
        else:
            ns = await ensure_namespace(conn, ctx.namespace)
            sess, _ = await ensure_session(conn, ns, ctx.session)
        turn = await weights.current_turn(conn, sess)

        if batch is not None:
            checked = await _check_in_batch(conn, batch, refs)
        else:
            checked = await _check_in_session(conn, sess, turn, refs)
        key = _key({"session": sess, "batch": None if batch is None else batch.id, "refs": refs} | checked.key_material)
        if (existing := await _existing(conn, key)) is not None:
            return existing

        uses, detail, reinforced = await _plan_uses(conn, ns, sess, turn, checked.counted)
        stored: dict[str, Any] = {
            "batch_id": None if batch is None else batch.public_id,
            "evidence_refs": refs,
            "counted": detail,
            "not_counted": checked.not_counted,
            "reinforced": reinforced,
            "settles": [ids.make("rb", b) for b in checked.settles],
            "turn": turn,
            "note": _note(refs, detail, reinforced, checked.settles),
        }
        where = (ns, sess, None if batch is None else batch.id)
        receipt, created_at = await _store_receipt(conn, ctx, key, where, stored, checked.settles, uses)
    return _public(receipt, stored, created_at, duplicate=False)


def _note(refs: list[str], counted: list[dict[str, Any]], reinforced: list[dict[str, Any]], settles: list[int]) -> str:
    closed = ", ".join(ids.make("rb", b) for b in settles) or "no open batch"
    if not refs:
        return f"recorded that no memory was used (settles {closed})"
    return (
        f"{len(counted)} of {len(refs)} refs counted; {len(reinforced)} "
        f"{'memory' if len(reinforced) == 1 else 'memories'} strengthened (settles {closed}). "
        "Refs that did not count are listed with the reason."
    )
