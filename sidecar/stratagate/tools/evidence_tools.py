"""memory_assess and memory_record_use: the agent's side of the evidence gate (rules in stratagate/evidence/)."""

from __future__ import annotations

from stratagate.evidence.gate import AssessArgs, assess
from stratagate.evidence.receipts import RecordUseArgs, record_use
from stratagate.protocol import tool
from stratagate.protocol.tool_results import AssessResult, RecordUseResult

tool(
    "memory_assess",
    args=AssessArgs,
    result=AssessResult,
    description="Judge one memory retrieval before relying on it. Every retrieval result has a batch_id and "
    "evidence_refs; give the verdict 'sufficient' (it answers the question: cite the refs from that batch that do, "
    "next_strategy 'answer'), 'partial' or 'wrong', with fit, missing and next_strategy. 'sufficient' without a "
    "ref from that batch or with another next_strategy is recorded as 'partial', and the reason is returned.",
)(assess)

tool(
    "memory_record_use",
    args=RecordUseArgs,
    result=RecordUseResult,
    description="After answering, record which memory the answer relied on: exactly those evidence_refs ([] if none). "
    "Only refs of a 'sufficient' memory_assess count, and only counted refs strengthen a memory's long-term weight "
    "(searching never does). Without batch_id, refs are matched to this session's sufficient assessments, and "
    "[] settles this turn's open retrievals. Repeating the same call changes nothing.",
)(record_use)
