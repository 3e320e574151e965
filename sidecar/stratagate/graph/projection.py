"""Projecting events onto the graph.

An event's claims (given by the extraction model or memory_remember, else read from its words by
``claims.read_claims``) become facts. Rules:

- A plan or a cancelled event projects nothing: a plan is never evidence that something is true.
- The same fact stated again gains a supporting event instead of a second row.
- A fact in a *slot* (one value at a time, e.g. the project's package manager) ends the slot's current fact: that
  fact is superseded, its window closes where the new one opens, and it points to its successor. An event left with
  no current fact by this is superseded by the new event too (unless the caller is superseding it explicitly).
- An ``ended`` claim ("stop using jest", "switch from npm") closes the matching current fact.
- Valid time: the event's occurrence time when known; the time it was said when the event changes something;
  otherwise unknown (``valid_from`` null: true since before memory knew).

memory_remember projects in its own transaction (the agent reads the graph right after). Extracted and imported
events are projected by ``graph_projection`` jobs in batches of ``BATCH_SIZE``
(queued by ``stratagate.events.projection_queue``); progress is stored per event, so a
retried or restarted batch skips what is done, and a failing batch only delays itself.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import ValidationError

from stratagate import ids
from stratagate.events import store as events
from stratagate.events.claims import Claim, read_claims, with_lexicon
from stratagate.events.models import EventRow
from stratagate.graph import store
from stratagate.jobs.pipeline import EMBEDDING, FollowUp, StageDeps
from stratagate.jobs.queue import JobRow, mark_done
from stratagate.jobs.runner import PermanentJobError
from stratagate.storage import lookup
from stratagate.storage.db import Actor, Database, audit
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import now_iso

log = logging.getLogger("stratagate.graph")


def claims_of(event: EventRow) -> list[Claim]:
    """The event's stored claims (validated again: they cross a storage boundary), else the rule-based reading."""
    out: list[Claim] = []
    for raw in event.claims:
        try:
            out.append(with_lexicon(Claim.model_validate(raw)))
        except ValidationError:
            continue
    if event.claims:
        return out
    return read_claims(f"{event.title}\n{event.narrative}" if event.title not in event.narrative else event.narrative)


async def _namespace_key(conn: Connection, namespace_id: int) -> str:
    return await lookup.namespace_name(conn, namespace_id) or ""


def _not_evidence(event: EventRow) -> str | None:
    """Why the event says nothing about the current state, or None when it does."""
    if event.status in ("forgotten", "archived"):
        return f"event is {event.status}"
    if event.time_status in ("planned", "cancelled"):
        return f"a {event.time_status} event is not evidence of the current state"
    return None


def _in_scope(fact: store.FactRow, event: EventRow) -> bool:
    """A current fact of the event's scope (and session, for a session-scoped event)."""
    return (
        fact.status in ("active", "disputed")
        and fact.scope == event.scope
        and fact.session_id == (event.session_id if event.scope == "session" else None)
    )


async def project_event(
    conn: Connection, event: EventRow, actor: Actor, *, explicit_targets: frozenset[int] = frozenset()
) -> dict[str, Any]:
    """Apply one event's claims to the graph inside the caller's transaction; a summary of what changed."""
    result: dict[str, Any] = {"event": event.public_id, "facts": [], "superseded_facts": [], "superseded_events": []}
    if (why := _not_evidence(event)) is not None:
        result["skipped"] = why
        return result
    claims = claims_of(event)
    if not claims:
        result["skipped"] = "no claims"
        return result
    ns = event.namespace_id
    ns_key = await _namespace_key(conn, ns)
    status: store.FactStatus = "disputed" if event.status == "disputed" else "active"
    # New values first, so a slot's old fact is linked to its successor; then what the event says has ended.
    for claim in sorted(claims, key=lambda c: c.ended):
        await _project_claim(conn, event, claim, (ns, ns_key), status, actor, explicit_targets, result)
    return result


async def _project_claim(
    conn: Connection,
    event: EventRow,
    claim: Claim,
    namespace: tuple[int, str],
    status: store.FactStatus,
    actor: Actor,
    explicit_targets: frozenset[int],
    result: dict[str, Any],
) -> None:
    """One claim: it ends its current facts, supports the same fact, or adds a fact (closing the facts of its slot
    it replaces). ``result`` gathers what changed."""
    ns, ns_key = namespace
    subject = await store.resolve_node(conn, ns, ns_key, claim.subject, claim.subject_kind, actor)
    obj = (
        await store.resolve_node(conn, ns, ns_key, claim.object, claim.object_kind, actor)
        if claim.object is not None
        else None
    )
    same = [
        f
        for f in await store.facts_of_node(conn, subject.id)
        if f.node_id == subject.id
        and f.attribute == claim.predicate
        and (f.object_id == obj.id if obj is not None else f.value == claim.value)
        and _in_scope(f, event)
    ]
    if claim.ended:
        for fact in same:
            await store.link(conn, fact.id, event.id, "ends")
            after = await store.refresh_fact(conn, fact, actor)
            result["superseded_facts"].append(after.public_id)
        return
    if same:
        await store.link(conn, same[0].id, event.id, "supports")
        await store.refresh_fact(conn, same[0], actor)
        result["facts"].append(same[0].public_id)
        return
    replaced = []
    # A disputed event does not settle its slot: its fact stands beside the other one, both disputed.
    if claim.slot and status != "disputed":
        replaced = [
            f
            for f in await store.facts_of_node(conn, subject.id)
            if f.node_id == subject.id and f.slot == claim.slot and _in_scope(f, event)
        ]
    changes = bool(replaced) or event.type in ("change", "decision") or event.time_basis != "unknown"
    valid_from = store.event_time(event) if changes else None
    fact = await store.insert_fact(
        conn,
        ns,
        subject.id,
        edge=(claim.predicate, obj.id) if obj is not None else None,
        attribute=claim.predicate,
        value=claim.value,
        slot=claim.slot,
        event=event,
        status=status,
        valid_from=valid_from,
        actor=actor,
    )
    if event.status == "superseded":
        # Projected after its successor superseded it (the projection job ran late): the fact is history from the
        # start, its window closed at the successor's time, not a current fact beside the successor's.
        fact = await store.refresh_fact(conn, fact, actor)
    result["facts"].append(fact.public_id)
    for old in replaced:
        await _close_replaced(conn, old, fact, event, valid_from, actor, explicit_targets, result)
    await store.reindex_node(conn, subject.id)
    if obj is not None:
        await store.reindex_node(conn, obj.id)


async def _close_replaced(
    conn: Connection,
    old: store.FactRow,
    fact: store.FactRow,
    event: EventRow,
    valid_from: str | None,
    actor: Actor,
    explicit_targets: frozenset[int],
    result: dict[str, Any],
) -> None:
    """``fact`` took ``old``'s slot: ``old`` is superseded, its window closed where the new one starts (when the
    event was said, without a start), never before its own start; events left with no current fact are superseded
    by ``event``."""
    await store.link(conn, old.id, event.id, "ends")
    closed = await store.update_fact(
        conn,
        old,
        actor,
        "fact.superseded",
        {"by": fact.public_id, "event": event.public_id},
        status="superseded",
        prior_status=old.status,
        valid_to=max(valid_from or event.mentioned_at, old.valid_from or ""),
        superseded_by=fact.id,
    )
    result["superseded_facts"].append(closed.public_id)
    result["superseded_events"] += await _supersede_emptied(conn, closed, event, actor, explicit_targets)


async def _supersede_emptied(
    conn: Connection, closed: store.FactRow, successor: EventRow, actor: Actor, explicit: frozenset[int]
) -> list[str]:
    """Events whose every fact is now superseded are superseded by the event that replaced them."""
    out = []
    for role, ev in await store.fact_events(conn, closed.id):
        if role != "supports" or ev.id == successor.id or ev.id in explicit or ev.status not in ("active", "disputed"):
            continue
        if ev.scope != successor.scope:
            continue
        facts = await store.facts_of_event(conn, ev.id)
        if any(f.status in ("active", "disputed") for f in facts):
            continue
        outcome = await events.supersede(conn, ev, successor, actor)
        if outcome.get("superseded"):
            out.append(ev.public_id)
    return out


async def mark_projected(conn: Connection, event_id: int, result: dict[str, Any]) -> None:
    await conn.execute(
        "INSERT INTO graph_projection(event_id, batch_id, state, result, updated_at) VALUES (?, NULL, 'done', ?, ?)"
        " ON CONFLICT(event_id) DO UPDATE SET state = 'done', result = excluded.result,"
        " updated_at = excluded.updated_at",
        (event_id, json.dumps(result, ensure_ascii=False), now_iso()),
    )


def job_handler(deps: StageDeps) -> GraphProjector:
    """The ``graph_projection`` stage's handler (declared in jobs/pipeline.py)."""
    return GraphProjector(deps.db)


class GraphProjector:
    """Job handler: project one batch of events, one transaction per event, skipping events already done."""

    def __init__(self, db: Database):
        self._db = db

    async def __call__(self, job: JobRow) -> list[FollowUp]:
        batch = await self._db.fetchone(
            "SELECT event_ids FROM graph_batches WHERE id = ? AND namespace_id = ?", (job.subject_id, job.namespace_id)
        )
        if batch is None:
            raise PermanentJobError(f"projection batch {job.subject_id} no longer exists")
        projected = 0
        for event_id in json.loads(batch["event_ids"]):
            async with self._db.transaction() as conn:
                state = await (
                    await conn.execute("SELECT state FROM graph_projection WHERE event_id = ?", (event_id,))
                ).fetchone()
                if state is not None and state[0] == "done":
                    continue
                event = await events.get_event(conn, int(event_id))
                if event is None:
                    continue
                result = await project_event(conn, event, "system")
                await mark_projected(conn, event.id, result)
                projected += 1
        async with self._db.transaction() as conn:
            await conn.execute("UPDATE graph_batches SET done_at = ? WHERE id = ?", (now_iso(), job.subject_id))
            await audit(
                conn,
                job.namespace_id,
                "system",
                "graph.batch_projected",
                "job",
                ids.make("job", job.id),
                None,
                {"batch": job.subject_id, "projected": projected},
            )
            await mark_done(conn, job)
        if not projected:
            return []
        # New or renamed graph nodes get vectors.
        return [FollowUp(kind=EMBEDDING, namespace_id=job.namespace_id, subject_id=job.namespace_id)]
