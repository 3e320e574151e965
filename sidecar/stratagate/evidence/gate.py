"""memory_assess: the evidence gate. The agent judges one retrieval batch before relying on it.

Rules (the recorded verdict is what counts later):

* The batch must be one of the caller's own (same namespace and session), else -32004.
* ``sufficient`` is recorded only with at least one evidence ref **from that batch** and ``next_strategy = answer``;
  otherwise it is recorded as ``partial`` and ``reason`` says why. ``partial`` and ``wrong`` need no refs.
* Refs the batch did not show are not recorded: each comes back in ``rejected_refs`` with the reason (another batch
  of this session showed it, or none did).
* A batch may be assessed again; its latest assessment is the one memory_record_use reads.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from stratagate import ids
from stratagate.evidence import batches
from stratagate.evidence.weights import current_turn
from stratagate.protocol.context import ToolContext
from stratagate.redact import redact
from stratagate.storage.db import audit
from stratagate.timeutil import now_iso

Verdict = Literal["sufficient", "partial", "wrong"]
Strategy = Literal[
    "answer",
    "search_events",
    "expand_event",
    "search_graph",
    "expand_graph_node",
    "search_raw",
    "get_blocks",
    "expand_block",
    "ask_user",
]
Ref = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]
MAX_ASSESS_REFS = 20
TEXT_CHARS = 500
BATCH_HELP = "The batch_id of the retrieval result being judged, e.g. 'rb_12'."


def _squash(value: str) -> str:
    return " ".join(value.split())


class AssessArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    batch_id: str = Field(min_length=1, max_length=64, description=BATCH_HELP)
    verdict: Verdict = Field(
        description="'sufficient' (this batch answers the question), 'partial' (relevant but not enough) or "
        "'wrong' (not about the question)."
    )
    evidence_refs: list[Ref] = Field(
        default_factory=list,
        max_length=MAX_ASSESS_REFS,
        description="The refs from this batch's evidence_refs that support the verdict (required for sufficient).",
    )
    fit: str = Field(
        min_length=1, max_length=TEXT_CHARS, description="In one sentence: how the evidence fits the question."
    )
    missing: str = Field(
        "", max_length=TEXT_CHARS, description="What is still missing (empty when sufficient)."
    )
    next_strategy: Strategy = Field(
        description="What you do next: 'answer' (required for sufficient), a retrieval to try "
        "('search_events', 'expand_event', 'search_graph', 'expand_graph_node', 'search_raw', 'get_blocks', "
        "'expand_block') or 'ask_user'."
    )

    @field_validator("fit", "missing")
    @classmethod
    def _text(cls, value: str) -> str:
        return _squash(value)

    @field_validator("fit")
    @classmethod
    def _fit_not_blank(cls, value: str) -> str:
        if not value:
            raise ValueError("fit must not be blank")
        return value


async def _rejection(conn: Any, batch: batches.Batch, ref: str) -> str:
    if not batches.REF.match(ref):
        return "not an evidence ref (evt_, nod_, fct_, msg_ or blk_ id)"
    other = await batches.batch_showing(conn, batch.session_id, ref)
    if other is not None:
        return f"{batch.public_id} did not show {ref}; {ids.make('rb', other)} did: assess that batch for it"
    return f"{batch.public_id} did not show {ref}, and no retrieval of this session did"


async def assess(ctx: ToolContext, args: AssessArgs) -> dict[str, Any]:
    refs = list(dict.fromkeys(args.evidence_refs))
    async with ctx.db.transaction() as conn:
        batch = await batches.visible_batch(conn, ctx, args.batch_id)
        shown = set(batch.refs)
        accepted = [r for r in refs if r in shown]
        rejected = [{"ref": r, "reason": await _rejection(conn, batch, r)} for r in refs if r not in shown]
        verdict: Verdict = args.verdict
        problems = []
        if args.verdict == "sufficient":
            if not accepted:
                problems.append(f"sufficient needs at least one evidence ref from {batch.public_id}")
            if args.next_strategy != "answer":
                problems.append(f"sufficient means the next step is 'answer', not {args.next_strategy!r}")
            if problems:
                verdict = "partial"
        reason = "; ".join(problems) or None
        fit, missing = redact(args.fit), redact(args.missing)
        turn = await current_turn(conn, batch.session_id)
        cur = await conn.execute(
            "INSERT INTO evidence_assessments(batch_id, session_id, requested_verdict, verdict, evidence_refs,"
            " rejected_refs, fit, missing, next_strategy, reason, turn, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                batch.id,
                batch.session_id,
                args.verdict,
                verdict,
                json.dumps(accepted),
                json.dumps(rejected, ensure_ascii=False),
                fit,
                missing,
                args.next_strategy,
                reason and redact(reason),
                turn,
                now_iso(),
            ),
        )
        assessment = ids.make("asm", int(cur.lastrowid or 0))
        result: dict[str, Any] = {
            "assessment_id": assessment,
            "batch_id": batch.public_id,
            "verdict": verdict,
            "requested_verdict": args.verdict,
            "reason": reason,
            "evidence_refs": accepted,
            "rejected_refs": rejected,
            "fit": fit,
            "missing": missing,
            "next_strategy": args.next_strategy,
            "note": _note(batch.public_id, verdict, reason),
        }
        await audit(
            conn,
            batch.namespace_id,
            "agent",
            "evidence.assessed",
            "retrieval_batch",
            batch.public_id,
            None,
            {k: result[k] for k in ("assessment_id", "verdict", "requested_verdict", "reason", "evidence_refs")},
        )
    return result


def _note(batch: str, verdict: str, reason: str | None) -> str:
    if verdict == "sufficient":
        return (
            f"recorded as sufficient: answer now, then call memory_record_use with batch_id '{batch}' and the refs "
            "your answer relied on"
        )
    if reason:
        return f"recorded as partial, not sufficient ({reason}); refs of a partial assessment never count as used"
    if verdict == "partial":
        return "recorded as partial: follow next_strategy; refs of a partial assessment never count as used"
    return "recorded as wrong: this batch does not answer the question; follow next_strategy"
