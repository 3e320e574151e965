"""Re-projection of a stale graph: what "stale" means, and how it is repaired through the usual paths.

Stale is one of three things, all found by reading:

1. **A fact out of step with its events.** Facts follow their events' status in the same transaction (the status
   hook of ``events/store.py``), so this only happens to rows written before that hook existed or by hand: a fact
   shown as current although none of its supporting events is current any more (forgotten, superseded, merged,
   archived), or a fact not current although a current event supports it and no current event ended it. Repair:
   ``graph.store.refresh_fact`` recomputes its status from its events (audited ``fact.*`` like every change).
2. **A current event the graph never saw**: no ``graph_projection`` record (events older than the graph, or a lost
   batch). Repair: ``graph.projection.project_event`` + ``mark_projected``, one short transaction per event, exactly
   as a ``graph_projection`` job does (the pass is a background job itself; only admission queues projection jobs).
3. **A current event stuck in a failed projection job.** Repair: that job is retried (``jobs.retry``: a fresh
   attempt budget, due now).
"""

from __future__ import annotations

import asyncio
from types import ModuleType

from pydantic import BaseModel, Field

from stratagate import ids
from stratagate.events import store as events
from stratagate.graph import store as graph
from stratagate.jobs import queue
from stratagate.jobs.pipeline import GRAPH_PROJECTION
from stratagate.maintenance import store
from stratagate.maintenance.gate import Pause, no_wait
from stratagate.storage.db import Actor, Database
from stratagate.storage.sqlite import Connection

SWEEP_IDS = 2048  # ids one re-projection statement covers


class StalePlan(BaseModel):
    facts: list[int] = Field(default_factory=list)
    unprojected: list[tuple[int, int]] = Field(default_factory=list)  # (namespace_id, event_id)
    failed_jobs: list[int] = Field(default_factory=list)

    def public(self) -> dict[str, list[str]]:
        return {
            "facts": [ids.make("fct", f) for f in self.facts],
            "unprojected_events": [ids.make("evt", e) for _, e in self.unprojected],
            "failed_projection_jobs": [ids.make("job", j) for j in self.failed_jobs],
        }


async def plan(conn: Connection) -> StalePlan:
    return StalePlan(
        facts=await store.stale_facts(conn),
        unprojected=await store.unprojected_events(conn),
        failed_jobs=await store.failed_projection_jobs(conn, GRAPH_PROJECTION),
    )


class Repaired(BaseModel):
    facts_refreshed: list[str] = Field(default_factory=list)
    events_projected: list[str] = Field(default_factory=list)
    projection_jobs_retried: list[str] = Field(default_factory=list)


def _projection() -> ModuleType:
    """The graph projection (claims, cues, the graph writer): imported when an event needs projecting, so that the
    sidecar's start, which imports this module, does not pay for it."""
    from stratagate.graph import projection

    return projection


async def apply(db: Database, todo: StalePlan, actor: Actor) -> Repaired:
    out = Repaired()
    # In a thread: its first import would hold the loop (and every request) for tens of milliseconds.
    projection = await asyncio.to_thread(_projection) if todo.unprojected else None
    for fact_id in todo.facts:  # one short transaction each
        async with db.transaction() as conn:
            fact = await graph.get_fact(conn, fact_id)
            if fact is None:
                continue
            after = await graph.refresh_fact(conn, fact, actor)
            if after.status != fact.status or after.valid_to != fact.valid_to:
                out.facts_refreshed.append(after.public_id)
    for _, event_id in todo.unprojected:
        async with db.transaction() as conn:
            # Re-checked in the transaction: a projection that landed meanwhile is not made twice.
            if await store.projected(conn, event_id):
                continue
            event = await events.get_event(conn, event_id)
            if event is None or event.status not in ("active", "disputed"):
                continue
            assert projection is not None
            await projection.mark_projected(conn, event.id, await projection.project_event(conn, event, actor))
            out.events_projected.append(event.public_id)
    for job_id in todo.failed_jobs:
        out.projection_jobs_retried += [ids.make("job", j) for j in await queue.retry(db, job_id, None, actor)]
    return out


async def sweep(db: Database, actor: Actor, pause: Pause = no_wait,
                window: int = SWEEP_IDS) -> tuple[StalePlan, Repaired]:
    """``plan`` then ``apply`` over windows of ``window`` ids, yielding the loop between them: no statement reads
    the whole graph at once, and what a window finds is repaired before the next is read."""
    found, out = StalePlan(), Repaired()
    for table, kind in (("graph_facts", "facts"), ("events", "unprojected")):
        top = await store.max_id(db.reader, table)
        for after in range(0, top, window):
            ids = (after, min(after + window, top))
            todo = (StalePlan(facts=await store.stale_facts(db.reader, ids)) if kind == "facts"
                    else StalePlan(unprojected=await store.unprojected_events(db.reader, ids)))
            found.facts += todo.facts
            found.unprojected += todo.unprojected
            done = await apply(db, todo, actor)
            out.facts_refreshed += done.facts_refreshed
            out.events_projected += done.events_projected
            await pause()
    found.failed_jobs = await store.failed_projection_jobs(db.reader, GRAPH_PROJECTION)
    retried = await apply(db, StalePlan(failed_jobs=found.failed_jobs), actor)
    out.projection_jobs_retried = retried.projection_jobs_retried
    return found, out
