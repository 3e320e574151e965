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

from pydantic import BaseModel, Field

from stratagate import ids
from stratagate.events import store as events
from stratagate.graph import store as graph
from stratagate.graph.projection import mark_projected, project_event
from stratagate.jobs import queue
from stratagate.jobs.pipeline import GRAPH_PROJECTION
from stratagate.maintenance import store
from stratagate.storage.db import Actor, Database
from stratagate.storage.sqlite import Connection


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


async def apply(db: Database, todo: StalePlan, actor: Actor) -> Repaired:
    out = Repaired()
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
            await mark_projected(conn, event.id, await project_event(conn, event, actor))
            out.events_projected.append(event.public_id)
    for job_id in todo.failed_jobs:
        out.projection_jobs_retried += [ids.make("job", j) for j in await queue.retry(db, job_id, None, actor)]
    return out

