"""The background pipeline, declared once: every job kind, its handler, its subject, what it queues next.

Adding a stage means one ``Stage`` here plus the stage's own module (its handler factory, and optionally a queue
or recovery function). Nothing else lists job kinds: the runner, the app, ``jobs.list`` and the docs all read
``STAGES`` (tests/test_pipeline.py checks that no other module spells a kind and that the docs match).

Handlers and stage functions are named by import path (``"module:attribute"``) and resolved by the app, which sits
above every stage: the jobs layer stays below the stages it runs (see the layers contract in pyproject.toml). A
``handler``'s module is imported with its stage's first job (start-up imports none); a ``recover`` runs at every
start, so it lives in a module that imports no handler code.

Contracts of the named functions:

- ``handler``: ``factory(StageDeps) -> Handler``; ``Handler(job) -> list[FollowUp] | None``. A handler writes its
  result and ``mark_done`` in one transaction, and RETURNS the jobs of later stages instead of queuing them.
- ``queue`` (optional): ``async (conn, FollowUp, max_attempts) -> None`` puts a follow-up in the queue inside the
  runner's transaction; default ``jobs.queue.enqueue``. Embedding uses it to coalesce requests per namespace.
- ``recover`` (optional): ``async (db, max_attempts) -> int`` re-derives follow-ups lost between the handler's commit
  and the runner's follow-up transaction (a crash or a full disk in between); idempotent, run at every start.
  ``block_summary``'s re-queues the jobs of blocks still on fallback views instead (``recovers`` says which).

Attempts and backoff come from Settings (``STRATAGATE_JOB_MAX_ATTEMPTS``, ``_JOB_BACKOFF_BASE``, ``_JOB_BACKOFF_CAP``)
for every stage: the runner applies the running process's limit at each claim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from stratagate.config import Settings

if TYPE_CHECKING:
    from stratagate.storage.db import Database

BLOCK_SUMMARY = "block_summary"
EVENT_EXTRACTION = "event_extraction"
GRAPH_PROJECTION = "graph_projection"
EMBEDDING = "embedding"
MAINTENANCE = "maintenance"

# What a row made before the running sidecar's limit is applied (the CLI queues without a runner).
DEFAULT_MAX_ATTEMPTS: int = Settings.model_fields["job_max_attempts"].default


# A namespace's events are extracted in block order: a block's extraction waits while an earlier block of its
# namespace still has its summary or extraction queued or running and no events admitted yet (events_source NULL;
# rule fallbacks count as admitted). Otherwise two blocks extracted at once cannot see each other's events and a
# "switch to pnpm" misses the "we use npm" it replaces. Strictly earlier blocks only, so no job waits in a cycle.
EXTRACTION_ORDER = (
    "EXISTS (SELECT 1 FROM jobs w JOIN blocks b ON b.id = w.subject_id"
    f" WHERE w.namespace_id = j.namespace_id AND w.kind IN ('{BLOCK_SUMMARY}', '{EVENT_EXTRACTION}')"
    " AND w.status IN ('queued', 'running') AND w.subject_id < j.subject_id AND b.events_source IS NULL)"
)


class Stage(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: str
    subject_prefix: str  # the public id prefix of the job's subject_id ('blk' → blk_7)
    subject: str  # what subject_id names, for the docs
    handler: str  # "module:factory"
    follow_ups: tuple[str, ...] = ()  # kinds the handler may return
    queued_by: tuple[str, ...] = ()  # writes outside the pipeline that queue this stage (in their transaction)
    queue: str | None = None
    recover: str | None = None
    recovers: str = "re-derived at start if lost between a handler's commit and its queuing"  # for the diagram
    # An SQL condition over the candidate job ``j``: while it holds, the job is not claimed (see EXTRACTION_ORDER).
    waits_while: str | None = None
    waits_for: str | None = None  # the same, for the diagram

    def max_attempts(self, settings: Settings) -> int:
        return settings.job_max_attempts

    def backoff(self, settings: Settings) -> tuple[float, float]:
        return settings.job_backoff_base, settings.job_backoff_cap


STAGES: tuple[Stage, ...] = (
    Stage(
        kind=BLOCK_SUMMARY,
        subject_prefix="blk",
        subject="block id",
        handler="stratagate.blocks.summarize:job_handler",
        follow_ups=(EVENT_EXTRACTION,),
        queued_by=(
            "turn.capture (a sealed block)",
            "a session tail sealed: idle, session.close, shutdown (a short block)",
            "memory_erase / memory_forget erase=true (a rebuilt block)",
        ),
        recover="stratagate.blocks.upgrade:requeue_fallbacks",
        recovers="re-queued at start (and after a model success) while its block has fallback views: the upgrade",
    ),
    Stage(
        kind=EVENT_EXTRACTION,
        subject_prefix="blk",
        subject="block id",
        handler="stratagate.events.extraction:job_handler",
        follow_ups=(GRAPH_PROJECTION, EMBEDDING),
        waits_while=EXTRACTION_ORDER,
        waits_for="an earlier block of its namespace whose events are not admitted yet (block order)",
        recover="stratagate.events.recovery:recover_jobs",
        recovers="re-derived at start if lost between a handler's commit and its queuing; failed ones re-queued at "
        "start while its block's events are the rule fallback",
    ),
    Stage(
        kind=GRAPH_PROJECTION,
        subject_prefix="batch",
        subject="graph_batches id (≤ 8 events)",
        handler="stratagate.graph.projection:job_handler",
        follow_ups=(EMBEDDING,),
        queued_by=("import.run / stratagate import (new events)",),
        recover="stratagate.events.projection_queue:recover_jobs",
    ),
    Stage(
        kind=EMBEDDING,
        subject_prefix="ns",
        subject="namespace id (one job per namespace)",
        handler="stratagate.search.vectors:job_handler",
        queued_by=(
            "any write that adds messages or events (capture, remember, extraction, import), after its commit",
            "the dense channel at start-up (backlog catch-up, its recovery) and a search that sees a backlog",
        ),
        queue="stratagate.search.vectors:queue_follow_up",
    ),
    Stage(
        kind=MAINTENANCE,
        subject_prefix="db",
        subject="the database, always 1 (one job for every namespace; after a run it queues itself again)",
        handler="stratagate.maintenance.run:job_handler",
        queued_by=("the sidecar's start when no run is younger than STRATAGATE_MAINTENANCE_INTERVAL_HOURS",),
    ),
)

BY_KIND: dict[str, Stage] = {stage.kind: stage for stage in STAGES}
KINDS: tuple[str, ...] = tuple(BY_KIND)


class FollowUp(BaseModel):
    """A job a handler asks for: queued by the runner right after the handler's commit."""

    model_config = ConfigDict(frozen=True)

    kind: str
    namespace_id: int
    subject_id: int


@dataclass(frozen=True)
class StageDeps:
    """What a handler factory gets from the app."""

    db: Database
    settings: Settings
    gateway: Any  # () -> ModelGateway, created on first use
    count: Any  # (text) -> exact tokens
    dense: Any  # the app's dense channel (search/vectors.py DenseIndex)
    maintenance: Any  # the app's maintenance service (maintenance/run.py Maintenance)


def subject_prefix(kind: str) -> str:
    stage = BY_KIND.get(kind)
    return "obj" if stage is None else stage.subject_prefix


def check() -> None:
    """The declaration is consistent: unique kinds, follow-ups name declared stages."""
    assert len(KINDS) == len(STAGES), "duplicate job kind in STAGES"
    for stage in STAGES:
        for kind in stage.follow_ups:
            assert kind in BY_KIND, f"{stage.kind} follows up with undeclared kind {kind!r}"


def diagram() -> str:
    """The pipeline as declared, as text (docs/architecture.md embeds this; a test keeps them equal)."""
    lines = []
    for stage in STAGES:
        lines.append(f"{stage.kind}  (subject {stage.subject_prefix}_N = {stage.subject})")
        for source in stage.queued_by:
            lines.append(f"  ◄── queued by {source}")
        for kind in stage.follow_ups:
            lines.append(f"  ──► {kind}  (a follow-up its handler returns)")
        if stage.recover:
            lines.append(f"  ↺   {stage.recovers}")
        if stage.waits_for:
            lines.append(f"  ⧗   waits for {stage.waits_for}")
    return "\n".join(lines)


check()
