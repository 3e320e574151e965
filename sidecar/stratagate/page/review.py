"""Human review on the Memory page: edit, forget, restore, pin, merge and resolve events — each through the store
function the agent's tools and maintenance use, audited as the user's, each result naming its ``audit_ids``.

An edit never changes an event (content is immutable): it admits a corrected event through the one admission path
(origin ``remember``, the original's type, scope, session, times and sources) that supersedes the original, and an
``event.edited`` entry says so. A merge is maintenance's reversible merge of a pair the user chose; a resolve settles
a disputed pair (one kept and the other superseded by it, or both kept). The steps of an edit or a resolve carry
``note.part_of``: they are undone with the compound entry (page/undo.py)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from stratagate import ids
from stratagate.app import App
from stratagate.errors import Invalid
from stratagate.events import store
from stratagate.events.admit import Candidate, Options, admit
from stratagate.events.models import EventRow
from stratagate.events.store import Source
from stratagate.events.temporal import TimeStatus
from stratagate.maintenance import consolidate
from stratagate.maintenance import store as merges
from stratagate.page import longterm_queries as q
from stratagate.page.audit_view import Limit
from stratagate.page.foreign import hide_foreign
from stratagate.page.longterm import PageEvent, event_views
from stratagate.page.undo_rules import PART_OF
from stratagate.page.writes import ACTOR, EventRef, NamespaceParams, Written, event_of, namespace_id
from stratagate.protocol import method
from stratagate.protocol.types import Name, Result
from stratagate.redact import redact
from stratagate.storage.db import audit, collect_audit_ids
from stratagate.text.terms import fts_query
from stratagate.timeutil import parse_time

Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Summary = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=4000)]
When = Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)]


class EventBrief(Result):
    id: str
    title: str
    summary: str
    status: str
    pinned: bool
    successor_id: str | None


def brief(ev: EventRow) -> dict[str, Any]:
    life = ev.lifecycle()
    return {"id": ev.public_id, "title": ev.title, "summary": ev.summary, "status": ev.status,
            "pinned": bool(ev.pinned), "successor_id": life["successor_id"]}


class EventParams(NamespaceParams):
    id: EventRef


class EventResult(Written):
    event: EventBrief


# --- edit ----------------------------------------------------------------------------------------------------------


class EditParams(EventParams):
    title: Title | None = None
    summary: Summary | None = None
    when: When | None = Field(None, description="when it happens, in words or a date (\"next Friday\", "
                              "\"2026-12-14\"), read from when it was said; \"\" says no time")
    time_status: TimeStatus | None = Field(None, description="planned, occurred, ongoing, cancelled or unknown")

    @model_validator(mode="after")
    def _something(self) -> EditParams:
        if self.title is None and self.summary is None and self.when is None and self.time_status is None:
            raise ValueError("give title, summary, when or time_status: what the correction changes")
        return self


class EditResult(Written):
    id: str
    replaces: str


class Wording(Result):
    """What an edit may change: the words and the time (its wording, resolved from when it was said, and status)."""

    title: str
    summary: str
    when: str | None
    time_status: str


def _wording(ev: EventRow) -> Wording:
    return Wording(title=ev.title, summary=ev.summary, when=ev.time_original, time_status=ev.time_status or "unknown")


def _corrected(ev: EventRow, p: EditParams) -> Wording:
    old = _wording(ev)
    when = old.when if p.when is None else (redact(p.when) or None)
    return Wording(title=redact(p.title) if p.title is not None else old.title,
                   summary=redact(p.summary) if p.summary is not None else old.summary,
                   when=when, time_status=p.time_status or old.time_status)


def _correction(ev: EventRow, new: Wording, sources: list[dict[str, Any]]) -> Candidate:
    """The corrected event: the original's type, scope and evidence, the user's words and time (a time wording is
    read from when the original was said). A new summary replaces the narrative too (and the claims, read again from
    the new words); a new title alone keeps both."""
    title, summary = new.title, new.summary
    summary_changed = summary != ev.summary
    return Candidate(
        # Never the original's fingerprint (the correction is not a restatement), and its time is part of what it
        # states: a correction of the time alone is a new statement too.
        statement=f"{title}\n{summary}\n{new.when or ''} ({new.time_status})",
        title=title,
        summary=summary,
        narrative=summary if summary_changed else ev.narrative,
        tags=ev.tags,
        quotes=ev.quotes,
        participants=ev.participants,
        type=ev.type,
        scope=ev.scope,
        criticality=ev.criticality,
        confidence=ev.confidence,
        mentioned_at=parse_time(ev.mentioned_at),
        time_original=new.when,
        time_status=new.time_status,
        block_id=ev.block_id,
        claims=[] if summary_changed else ev.claims,
        sources=[Source(message_id=_key(s["message_id"], "msg"), call_id=s["call_id"],
                        import_id=_key(s["import_id"], "imp"), source_ref=s["source_ref"], quote=s["quote"] or "")
                 for s in sources],
        supersedes=[ev.id],
    )


def _key(public: str | None, prefix: str) -> int | None:
    return None if public is None else ids.parse(public, prefix)


@method("page.events.edit", params=EditParams, result=EditResult, http="POST /events/edit")
async def edit(app: App, p: EditParams) -> dict[str, Any]:
    """Correct an event's title, summary or time: a corrected event supersedes it (undo: page.undo)."""
    with collect_audit_ids() as audit_ids:
        async with app.db.transaction() as conn:
            ns = await namespace_id(conn, p.namespace)
            ev = await event_of(conn, ns, p.id)
            if ev.status not in ("active", "disputed"):
                raise Invalid(f"{ev.public_id} is {ev.status}; only a current (active or disputed) event "
                                     "can be edited")
            before, after = _wording(ev), _corrected(ev, p)
            if before == after:
                raise Invalid("nothing to change: the title, summary and time are the event's own")
            options = Options(
                namespace_id=ns, session_id=ev.session_id, origin="remember", actor=ACTOR, on_tombstone="refuse",
                on_exact_duplicate="error", unknown_target="error", projection_reason=f"edit of {ev.public_id}",
                supersede_note={PART_OF: "event.edited"},
            )
            candidate = _correction(ev, after, await store.sources(conn, ev.id))
            (outcome,) = (await admit(conn, [candidate], options)).outcomes
            new = outcome.event
            assert new is not None
            if outcome.result != "inserted":
                # Admission found the corrected words already held by another memory: editing into it would mix
                # two memories; the transaction rolls back.
                raise Invalid(f"the corrected text restates {new.public_id}; edit that event, or merge the two")
            await audit(conn, ns, ACTOR, "event.edited", "event", ev.public_id, before.model_dump(),
                        {"id": new.public_id, "replaces": ev.public_id} | after.model_dump())
    return {"id": new.public_id, "replaces": ev.public_id, "audit_ids": audit_ids}


# --- forget / restore / pin ------------------------------------------------------------------------------------------


class ForgetParams(EventParams):
    reason: Annotated[str, StringConstraints(max_length=500)] | None = None


@method("page.events.forget", params=ForgetParams, result=EventResult, http="POST /events/forget")
async def forget(app: App, p: ForgetParams) -> dict[str, Any]:
    """Forget an event (hidden everywhere, restatements refused) until it is restored."""
    with collect_audit_ids() as audit_ids:
        async with app.db.transaction() as conn:
            ev = await event_of(conn, await namespace_id(conn, p.namespace), p.id)
            if ev.status == "forgotten":
                raise Invalid(f"{ev.public_id} is already forgotten")
            after = await store.forget(conn, ev, ACTOR, p.reason and redact(p.reason))
    return {"event": brief(after), "audit_ids": audit_ids}


@method("page.events.restore", params=EventParams, result=EventResult, http="POST /events/restore")
async def restore(app: App, p: EventParams) -> dict[str, Any]:
    """Bring a forgotten event back with the status it had before."""
    with collect_audit_ids() as audit_ids:
        async with app.db.transaction() as conn:
            ev = await event_of(conn, await namespace_id(conn, p.namespace), p.id)
            after = await restore_event(conn, ev)
    return {"event": brief(after), "audit_ids": audit_ids}


async def restore_event(conn: Any, ev: EventRow) -> EventRow:
    if ev.status != "forgotten":
        raise Invalid(f"{ev.public_id} is {ev.status}, not forgotten; only forgotten events can be restored")
    if await store.erased(conn, ev.namespace_id, ev.id):
        raise Invalid(f"{ev.public_id} was erased; an erased memory cannot be restored")
    return await store.restore(conn, ev, ACTOR)


class PinParams(EventParams):
    pinned: bool


@method("page.events.pin", params=PinParams, result=EventResult, http="POST /events/pin")
async def pin(app: App, p: PinParams) -> dict[str, Any]:
    """Pin or unpin an event."""
    with collect_audit_ids() as audit_ids:
        async with app.db.transaction() as conn:
            ev = await event_of(conn, await namespace_id(conn, p.namespace), p.id)
            after = await pin_event(conn, ev, p.pinned)
    return {"event": brief(after), "audit_ids": audit_ids}


async def pin_event(conn: Any, ev: EventRow, pinned: bool) -> EventRow:
    if ev.status == "forgotten":
        raise Invalid(f"{ev.public_id} is forgotten; restore it before pinning")
    if bool(ev.pinned) == pinned:
        raise Invalid(f"{ev.public_id} is already {'pinned' if pinned else 'unpinned'}")
    return await store.set_pinned(conn, ev, ACTOR, pinned)


# --- merge -----------------------------------------------------------------------------------------------------------


class MergeParams(NamespaceParams):
    keep: EventRef = Field(description="the survivor: it keeps its words and gains the other's sources")
    merge: EventRef = Field(description="the duplicate: superseded by the survivor (undo: unmerge)")


class MergeResult(Written):
    survivor: str
    merged: str


@method("page.events.merge", params=MergeParams, result=MergeResult, http="POST /events/merge")
async def merge(app: App, p: MergeParams) -> dict[str, Any]:
    """Merge two events the user says are one: maintenance's reversible merge (event_merges) of the chosen pair."""
    with collect_audit_ids() as audit_ids:
        async with app.db.transaction() as conn:
            ns = await namespace_id(conn, p.namespace)
            keep = await event_of(conn, ns, p.keep, "keep")
            dup = await event_of(conn, ns, p.merge, "merge")
            why = consolidate.mergeable(keep, dup, chosen=True)
            if why is None and await merges.is_open_survivor(conn, dup.id):
                why = f"{dup.public_id} holds duplicates merged into it; unmerge them first"
            if why is not None:
                raise Invalid(f"cannot merge {dup.public_id} into {keep.public_id}: {why}")
            score = consolidate.similarity(keep.model_dump(), dup.model_dump())
            plan = consolidate.Merge(namespace_id=ns, namespace=p.namespace, survivor_id=keep.id, merged_id=dup.id,
                                     similarity=score[0] if score else 0.0, match=score[1] if score else "chosen")
            made = await consolidate.merge_one(conn, plan, ACTOR, None, "merged on the Memory page", chosen=True)
            if not made:  # mergeable() said yes inside this very transaction
                raise Invalid(f"cannot merge {dup.public_id} into {keep.public_id}")
    return {"survivor": keep.public_id, "merged": dup.public_id, "audit_ids": audit_ids}


class MergeOptionsParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    id: EventRef = Field(description="the survivor the chosen event would be merged into")
    q: str | None = Field(None, max_length=2000, description="words to find (the event full-text index)")
    limit: Limit = 20


class MergeOptionsResult(Result):
    events: list[PageEvent]


@method("page.events.merge_options", params=MergeOptionsParams, result=MergeOptionsResult,
        http="GET /events/merge-options")
async def merge_options(app: App, p: MergeOptionsParams) -> dict[str, Any]:
    """The events ``page.events.merge`` would merge into ``id`` (the same rule): none when ``id`` cannot survive."""
    conn = app.db.reader
    ns = await namespace_id(conn, p.namespace)
    keep = await event_of(conn, ns, p.id)
    match = fts_query(p.q) if p.q and p.q.strip() else None
    if keep.status != "active" or (p.q and p.q.strip() and match is None):
        return {"events": []}
    rows, _ = await q.list_events(conn, ns, match=match, statuses=["active"], event_type=None, scope=keep.scope,
                                  session=keep.session_key if keep.scope == "session" else None, limit=200, offset=0)
    eligible = [ev for ev in rows if consolidate.mergeable(keep, ev, chosen=True) is None
                and not await merges.is_open_survivor(conn, ev.id)]
    views = await event_views(app, ns, eligible[:p.limit])
    return await hide_foreign(conn, ns, {"events": views})


# --- resolve ---------------------------------------------------------------------------------------------------------


class ResolveParams(NamespaceParams):
    keep: EventRef | Literal["both"] = Field(description="the event that stays, or 'both'")
    other: EventRef | None = Field(None, description="the other event of the pair (superseded by keep)")
    ids: list[EventRef] | None = Field(None, description="with keep 'both': the two events of the pair")

    @model_validator(mode="after")
    def _pair(self) -> ResolveParams:
        if self.keep == "both":
            if self.ids is None or len(self.ids) != 2 or self.other is not None:
                raise ValueError("keep 'both' takes ids: the two events of the disputed pair (and no other)")
        elif self.other is None or self.ids is not None:
            raise ValueError("give keep and other (the event it replaces), or keep 'both' with ids")
        return self


class ResolveResult(Written):
    events: list[EventBrief]


@method("page.events.resolve", params=ResolveParams, result=ResolveResult, http="POST /events/resolve")
async def resolve(app: App, p: ResolveParams) -> dict[str, Any]:
    """Settle a disputed pair: keep one (the other is superseded by it) or keep both (the dispute is cleared)."""
    refs = p.ids if p.keep == "both" else [p.keep, p.other]
    assert refs is not None and all(refs)
    note = {PART_OF: "event.resolved"}
    with collect_audit_ids() as audit_ids:
        async with app.db.transaction() as conn:
            ns = await namespace_id(conn, p.namespace)
            a = await event_of(conn, ns, str(refs[0]), "ids" if p.keep == "both" else "keep")
            b = await event_of(conn, ns, str(refs[1]), "ids" if p.keep == "both" else "other")
            if a.id == b.id:
                raise Invalid("a disputed pair is two different events")
            for ev in (a, b):
                if ev.status != "disputed":
                    raise Invalid(f"{ev.public_id} is {ev.status}, not disputed; only a disputed pair is "
                                         "resolved")
            before = {a.public_id: a.lifecycle(), b.public_id: b.lifecycle()}
            kept = await store.settle(conn, a, ACTOR, note)
            if p.keep == "both":
                other = await store.settle(conn, b, ACTOR, note)
            else:
                await store.supersede(conn, b, kept, ACTOR, note)
                other = await store.get_event(conn, b.id) or b
            await audit(conn, ns, ACTOR, "event.resolved", "event", a.public_id, before,
                        {"pair": [a.public_id, b.public_id], "kept": "both" if p.keep == "both" else a.public_id,
                         a.public_id: kept.lifecycle(), b.public_id: other.lifecycle()})
    return {"events": [brief(kept), brief(other)], "audit_ids": audit_ids}
