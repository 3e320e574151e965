"""``page.evidence`` (GET /evidence): what the agent's answers relied on. Use receipts (memory_record_use) with each
ref they named, whether it counted and under which verdict, and the assessments (memory_assess) of the
namespace's retrieval batches."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stratagate import ids
from stratagate.app import App
from stratagate.page import longterm_queries as q
from stratagate.page.audit_view import Limit, Offset
from stratagate.page.foreign import hide_foreign
from stratagate.protocol import method
from stratagate.protocol.types import Name, Result
from stratagate.storage.lookup import namespace_id

KINDS = {"evt": "event", "nod": "node", "fct": "fact", "msg": "message", "blk": "block"}


class EvidenceParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    session: Name | None = Field(None, description="Only this session's receipts and assessments.")
    limit: Limit = 50
    offset: Offset = 0


class Use(Result):
    ref: str
    kind: str | None
    title: str | None
    verdict: str | None
    counted: bool
    note: str | None


class Receipt(Result):
    id: str
    session: str
    turn: int
    at: str
    batch: str | None
    answer: str
    uses: list[Use]


class Assessment(Result):
    id: str
    batch: str
    session: str
    turn: int
    at: str
    tool: str
    query: str | None
    verdict: str
    requested_verdict: str
    next_strategy: str
    refs: list[str]
    note: str


class EvidenceResult(Result):
    receipts: list[Receipt]
    assessments: list[Assessment]
    total: int
    assessments_total: int


def _kind(ref: str) -> tuple[str | None, int | None]:
    prefix = ref.split("_", 1)[0]
    key = ids.parse(ref, prefix) if prefix in KINDS else None
    return (prefix, key) if key is not None else (None, None)


async def _titles(app: App, ns: int, refs: set[str]) -> dict[str, str]:
    """A title for every ref that names something of the namespace (a fact: its statement)."""
    by_kind: dict[str, set[int]] = {}
    for ref in refs:
        prefix, key = _kind(ref)
        if prefix is not None and key is not None:
            by_kind.setdefault(prefix, set()).add(key)
    out: dict[str, str] = {}
    for prefix in ("evt", "nod", "blk", "msg"):
        for key, title in (await q.titles(app.db.reader, ns, prefix, by_kind.get(prefix, ()))).items():
            out[ids.make(prefix, key)] = title
    if by_kind.get("fct"):
        facts = {int(f["id"]): f for f in await q.graph_facts(app.db.reader, ns) if int(f["id"]) in by_kind["fct"]}
        nodes = await q.titles(app.db.reader, ns, "nod", {n for f in facts.values() for n in
                                                           (f["node_id"], f["object_id"]) if n is not None})
        for key, f in facts.items():
            obj = nodes.get(f["object_id"]) if f["object_id"] is not None else f["value"]
            out[ids.make("fct", key)] = f"{nodes.get(f['node_id'], '?')} {f['attribute'].replace('_', ' ')} {obj}"
    return out


@method("page.evidence", params=EvidenceParams, result=EvidenceResult, http="GET /evidence")
async def page_evidence(app: App, p: EvidenceParams) -> dict[str, Any]:
    conn = app.db.reader
    ns = await namespace_id(app.db, p.namespace)
    receipts, total = await q.receipts(conn, ns, p.session, p.limit, p.offset)
    assessed, assessed_total = await q.assessments(conn, ns, p.session, p.limit, p.offset)
    stored = [json.loads(r["result"]) for r in receipts]
    verdicts = await q.assessment_verdicts(conn, [
        k for s in stored for c in s.get("counted", []) if (k := ids.parse(c.get("assessment_id"), "asm"))
    ])
    refs = {ref for r in receipts for ref in json.loads(r["evidence_refs"])}
    refs |= {ref for a in assessed for ref in json.loads(a["evidence_refs"])}
    titles = await _titles(app, ns, refs)

    def uses(row: dict[str, Any], result: dict[str, Any]) -> list[dict[str, Any]]:
        counted = {c["ref"]: c for c in result.get("counted", [])}
        refused = {c["ref"]: c.get("reason") for c in result.get("not_counted", [])}
        out = []
        for ref in json.loads(row["evidence_refs"]):
            use = counted.get(ref)
            prefix, _ = _kind(ref)
            out.append({
                "ref": ref,
                "kind": KINDS.get(prefix or ""),
                "title": titles.get(ref),
                "verdict": verdicts.get(ids.parse(use.get("assessment_id"), "asm") or 0) if use else None,
                "counted": use is not None,
                "note": (use or {}).get("note") if use else refused.get(ref),
            })
        return out

    return await hide_foreign(conn, ns, {
        "receipts": [
            {"id": ids.make("rcp", int(r["id"])), "session": r["session"], "turn": r["turn"], "at": r["created_at"],
             "batch": ids.make("rb", int(r["batch_id"])) if r["batch_id"] else None,
             "answer": str(s.get("note") or ""), "uses": uses(r, s)}
            for r, s in zip(receipts, stored, strict=True)
        ],
        "assessments": [
            {"id": ids.make("asm", int(a["id"])), "batch": ids.make("rb", int(a["batch_id"])),
             "session": a["session"], "turn": a["turn"], "at": a["created_at"], "tool": a["tool"], "query": a["query"],
             "verdict": a["verdict"], "requested_verdict": a["requested_verdict"], "next_strategy": a["next_strategy"],
             "refs": json.loads(a["evidence_refs"]), "note": _assessment_note(a)}
            for a in assessed
        ],
        "total": total,
        "assessments_total": assessed_total,
    })


def _assessment_note(a: dict[str, Any]) -> str:
    parts = [f"fit: {a['fit']}" if a["fit"] else "", f"missing: {a['missing']}" if a["missing"] else ""]
    if a["reason"]:
        parts.append(f"gate: {a['reason']}")
    return "; ".join(p for p in parts if p)
