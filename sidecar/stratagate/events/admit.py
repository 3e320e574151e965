"""The one admission path for new events: memory_remember, extraction and import build :class:`Candidate` s and
call :func:`admit`; nothing else decides what becomes an event (tests/test_admit.py fails on another path).

Steps, in order, for each candidate, inside the caller's transaction:

1. **Redaction.** Every text field (statement, title, summary, narrative, tags, quotes, participants, time wording,
   claims, source quotes and refs) goes through ``safety/secrets`` (idempotent): secrets are never stored. Title and
   summary defaults are cut from the redacted text, so a cut never splits a secret past its detector.
2. **Fingerprint** of the redacted ``statement`` (``store.fingerprint``: NFKC, case-folded, whitespace collapsed).
   The statement is what identifies the memory: remember's text, an import item's flattened text, an extracted
   draft's summary (its narrative may add detail; the summary is the claim).
3. **Tombstones.** A restatement of a forgotten or erased memory is not admitted, for every caller alike: the
   fingerprint has a tombstone, or the statement is a near duplicate (``store.near_same``) of a visible forgotten
   event other than the ones the candidate supersedes or disputes. (Before this module, only remember and
   extraction checked, exact fingerprints only; a near restatement got in although every view hides it.)
   ``Options.on_tombstone`` says how that is reported: ``refuse`` (-32602 naming the tombstone, ``erased`` when it
   was erased; memory_remember) or ``suppress`` (skipped, an ``event.suppressed`` audit row on the tombstoned event
   with no content; extraction and import).
4. **Targets.** ``supersedes`` / ``conflicts_with`` ids must be visible events; ``Options.unknown_target``:
   ``error`` (-32004, nothing stored; remember) or ``skip`` (extraction: the ids were checked against what the
   model was shown; import names none). A user-tier event of another namespace is a target only of a ``user``
   candidate (else -32602, or skipped).
5. **Duplicates.** An exact duplicate (same fingerprint, an active or disputed event visible to the session: its
   own namespace's first, then user-tier events of other namespaces, events/visibility.py) or a near duplicate
   (≥ 80 % word overlap, same numbers, same negation; not one of the candidate's own targets) is the
   same memory: the candidate's sources are added to it (``event.sources_added``), no event is stored.
   ``Options.on_exact_duplicate`` differs on purpose: ``keep`` returns the existing event unchanged (remember: the
   agent said the same words again; nothing new), ``merge`` adds the sources (extraction and import: a new message
   or import item is new evidence, and removing an import must know which sources it added), ``error`` refuses it.
6. **Insert** (``store.insert_event``: row, search terms, ``event.<origin>`` audit) with the temporal record built
   by code (``temporal.build_temporal``) from the time wording and the mention time the caller supplies.
7. **Sources**: the evidence rows (captured message, memory_remember call id, import item + ref), de-duplicated.
8. **Graph projection**: ``Options.projector`` projects inline in this transaction (remember: the agent reads the
   graph in its next call; before the supersessions, so explicit targets are not superseded twice); otherwise the
   inserted events get ``graph_projection`` batches at the end of the batch, with their jobs queued in this
   transaction (import) or, for a job handler (``Options.projection_jobs=False``: extraction), returned as pipeline
   follow-ups (``Admission.projection_follow_ups``, see jobs/pipeline.py). That call in :func:`admit` is the only
   place an admitted event queues its projection.
9. **Supersede / dispute** (``store.supersede``, ``store.dispute``): targets are superseded by the admitted (or
   merged-into) event — a forgotten target stays forgotten —; ``conflicts_with`` marks both sides disputed.

Where callers legitimately differ, :class:`Options` says so: the owner session and scope of new events (an import
has no session; its scope is the import's), the actor (agent / model / user), the origin and import id, the
reporting of tombstones and unknown targets, exact-duplicate handling, inline vs queued projection, and a
content-free ``note`` merged into the audit rows (``{"block": "blk_3"}``, ``{"import": "imp_2"}``). Checks that
belong to one source stay with it: extraction's verbatim-quote and cited-id checks and its within-answer
repeats, an import's inactive items and duplicate files, remember's argument validation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from stratagate import ids
from stratagate.errors import Invalid, NotFound
from stratagate.events import store, team, visibility
from stratagate.events.models import Criticality, EventRow, EventType, NewEvent, Origin, SaidScope
from stratagate.events.projection_queue import add_batches
from stratagate.events.store import Source
from stratagate.events.temporal import TimeStatus, build_temporal
from stratagate.jobs.pipeline import GRAPH_PROJECTION, FollowUp
from stratagate.jobs.queue import enqueue
from stratagate.redact import redact, redact_value
from stratagate.storage.db import Actor, audit
from stratagate.storage.sqlite import Connection

TITLE_CHARS = 80
YIELD_EVERY = 16
"""Candidates admitted between two yields to the event loop (an item costs about a millisecond)."""
SUMMARY_CHARS = 300

Projector = Callable[[Connection, EventRow, frozenset[int]], Awaitable[dict[str, Any]]]
"""Inline graph projection of one new event (conn, event, explicit supersede targets) → what it did."""


class Candidate(BaseModel):
    """A proposed event, as its source saw it (raw text: admission redacts)."""

    model_config = ConfigDict(extra="forbid")

    statement: str = Field(min_length=1)
    """What identifies the memory: fingerprinted and compared for near duplicates."""
    title: str | None = None  # default: the statement's first line, cut to TITLE_CHARS
    summary: str | None = None  # default: the narrative cut to SUMMARY_CHARS
    narrative: str | None = None  # default: the statement
    tags: list[str] = Field(default_factory=list)
    quotes: list[str] = Field(default_factory=list)
    participants: list[str] = Field(default_factory=list)
    type: EventType = "fact"
    scope: SaidScope = "project"
    """``team``: shared through the team database (events/team.py); stored as a project memory with its member."""
    criticality: Criticality = "routine"
    confidence: float = Field(1.0, ge=0, le=1)
    mentioned_at: datetime
    """When it was said (message time, call time, import item time); never the model's word."""
    time_original: str | None = None  # the time wording, resolved by code
    time_status: TimeStatus = "unknown"
    block_id: int | None = None
    claims: list[dict[str, Any]] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    supersedes: list[int] = Field(default_factory=list)
    conflicts_with: list[int] = Field(default_factory=list)

    @field_validator("statement")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("statement must not be blank")
        return value


@dataclass(frozen=True)
class Options:
    """How one caller's admissions differ from another's (see the module docstring)."""

    namespace_id: int
    session_id: int | None  # owner session of new events; duplicates and targets are looked up as it sees them
    origin: Origin
    actor: Actor
    on_tombstone: Literal["refuse", "suppress"]
    on_exact_duplicate: Literal["keep", "merge", "error"]
    unknown_target: Literal["error", "skip"]
    import_id: int | None = None
    projector: Projector | None = None  # None: queue graph_projection jobs
    projection_reason: str = ""
    projection_jobs: bool = True  # False: a job handler returns the batches' jobs as follow-ups instead
    note: dict[str, Any] | None = None  # content-free context for audit rows
    supersede_note: dict[str, Any] | None = None  # the note of the supersessions' audit rows (the page's edit)
    team: team.Stamp | None = None  # a memory pulled from the team server (stratagate/team/): its uid and member


Result = Literal["inserted", "merged", "duplicate", "suppressed"]


class Outcome(BaseModel):
    """What happened to one candidate. ``event`` is the admitted or merged-into event (re-read after the
    supersessions); ``tombstone`` the forgotten event a suppressed candidate restated."""

    result: Result
    event: EventRow | None = None
    near: bool = False  # merged into a near (not exact) duplicate
    tombstone: int | None = None
    sources_added: int = 0
    graph: dict[str, Any] | None = None
    supersedes: list[dict[str, Any]] = Field(default_factory=list)


class Admission(BaseModel):
    outcomes: list[Outcome]
    projection_jobs: list[int] = Field(default_factory=list)
    projection_batches: list[int] = Field(default_factory=list)
    namespace_id: int = 0

    def projection_follow_ups(self) -> list[FollowUp]:
        """The ``graph_projection`` jobs of the new batches, for a job handler to return (jobs/pipeline.py)."""
        return [FollowUp(kind=GRAPH_PROJECTION, namespace_id=self.namespace_id, subject_id=b)
                for b in self.projection_batches]

    def ids_of(self, result: Result) -> list[str]:
        return [o.event.public_id for o in self.outcomes if o.result == result and o.event is not None]


def fingerprint_of(statement: str) -> str:
    """The fingerprint admission gives a statement (of its redacted form)."""
    return store.fingerprint(redact(statement.strip()))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _redacted(c: Candidate) -> Candidate:
    statement = redact(c.statement.strip())
    narrative = redact(c.narrative) if c.narrative and c.narrative.strip() else statement
    title = redact(c.title.strip()) if c.title and c.title.strip() else _clip(statement.splitlines()[0], TITLE_CHARS)
    summary = redact(c.summary) if c.summary and c.summary.strip() else _clip(narrative, SUMMARY_CHARS)
    return c.model_copy(
        update={
            "statement": statement,
            "narrative": narrative,
            "title": title,
            "summary": summary,
            "tags": list(dict.fromkeys(redact(t) for t in c.tags)),
            "quotes": [redact(q) for q in c.quotes],
            "participants": [redact(p) for p in c.participants],
            "time_original": redact(c.time_original) if c.time_original else None,
            "claims": [redact_value(claim) for claim in c.claims],
            "sources": [
                s.model_copy(update={
                    "quote": redact(s.quote),
                    "call_id": s.call_id and redact(s.call_id),
                    "source_ref": s.source_ref and redact(s.source_ref),
                })
                for s in c.sources
            ],
        }
    )


async def _tombstone(
    conn: Connection, opts: Options, c: Candidate, fp: str
) -> tuple[int, Literal["exact", "near"]] | None:
    """The forgotten (or erased) event this candidate restates, if any."""
    tomb = await store.tombstone_for(conn, opts.namespace_id, fp, opts.session_id)
    if tomb is not None:
        return tomb, "exact"
    own = frozenset([*c.supersedes, *c.conflicts_with])
    near = await store.near_duplicate(
        conn, opts.namespace_id, opts.session_id, c.statement, ("forgotten",), exclude=own
    )
    return None if near is None else (near.id, "near")


async def _refuse_or_suppress(
    conn: Connection, opts: Options, c: Candidate, tomb: int, match: str
) -> Outcome:
    dead = ids.make("evt", tomb)
    was_erased = await store.erased(conn, opts.namespace_id, tomb)
    if opts.on_tombstone == "refuse":
        if was_erased:
            raise Invalid(
                f"refused: this restates erased event {dead} (tombstone {dead}); it was erased on request and "
                "cannot be stored again.",
                {"tombstone": dead, "erased": True},
            )
        raise Invalid(
            f"refused: this restates forgotten event {dead} (tombstone {dead}); it was forgotten on request "
            f"and stays forgotten. To bring it back, call memory_restore with id '{dead}'.",
            {"tombstone": dead},
        )
    # No content: a tombstone keeps no forgotten text, and neither does its audit trail.
    after = (opts.note or {}) | {
        "reason": f"restates {'an erased' if was_erased else 'a forgotten'} event",
        "match": match,
        "sources": [s.ref() for s in c.sources],
    }
    owner = await store.get_event(conn, tomb)
    home = owner.namespace_id if owner is not None else opts.namespace_id
    await audit(conn, home, opts.actor, "event.suppressed", "event", dead, None, after)
    return Outcome(result="suppressed", tombstone=tomb)


async def _targets(
    conn: Connection, opts: Options, c: Candidate, wanted: list[int], field: str
) -> list[EventRow]:
    out = []
    viewer = await visibility.viewer(conn, opts.namespace_id, opts.session_id)
    for key in dict.fromkeys(wanted):
        target = await store.get_event(conn, key)
        if target is None or not target.visible_to(viewer):
            if opts.unknown_target == "error":
                raise NotFound(f"unknown event {ids.make('evt', key)} in {field}")
            continue
        if viewer.foreign(target.namespace_id) and c.scope != "user":
            # A user-tier memory of another project is ended or disputed only by another user-tier memory: a
            # project or session event would end it everywhere with a successor only this namespace can see.
            if opts.unknown_target == "error":
                raise Invalid(
                    f"{target.public_id} is a user-tier memory of another project; only a memory with scope 'user' "
                    f"can list it in {field}",
                    {"event": target.public_id, "field": field},
                )
            continue
        out.append(target)
    return out


async def _merge(
    conn: Connection, opts: Options, ev: EventRow, c: Candidate, match: Literal["exact", "near"]
) -> int:
    added = await store.insert_sources(conn, ev.id, c.sources)
    if added:
        after = (opts.note or {}) | {"match": match, "sources_added": [s.ref() for s in added]}
        # Audited where the event lives (a user-tier event of another namespace gains this namespace's sources).
        await audit(conn, ev.namespace_id, opts.actor, "event.sources_added", "event", ev.public_id, None, after)
    return len(added)


def _new_event(opts: Options, c: Candidate, fp: str, member: str | None) -> NewEvent:
    temporal = build_temporal(c.time_original, c.mentioned_at, c.time_status).model_dump(mode="json")
    assert c.title is not None and c.summary is not None and c.narrative is not None  # set by _redacted
    return NewEvent(
        namespace_id=opts.namespace_id,
        session_id=opts.session_id,
        origin=opts.origin,
        block_id=c.block_id,
        import_id=opts.import_id,
        title=c.title,
        summary=c.summary,
        narrative=c.narrative,
        tags=c.tags,
        quotes=c.quotes,
        type=c.type,
        participants=c.participants,
        scope="project" if c.scope == "team" else c.scope,
        criticality=c.criticality,
        confidence=c.confidence,
        **store.temporal_columns(temporal),
        fingerprint=fp,
        claims=c.claims,
        team_member=member if c.scope == "team" else None,
    )


@dataclass(frozen=True)
class _Team:
    """Read once per batch: this machine's team member (None: no team database) and whether the namespace shares
    its decisions, changes, preferences and rules by default."""

    member: str | None
    by_default: bool

    @classmethod
    async def of(cls, conn: Connection, opts: Options) -> _Team:
        if opts.team is not None:
            return cls(opts.team.member, False)
        mine = await team.member(conn)
        return cls(mine, mine is not None and await team.shares_by_default(conn, opts.namespace_id))


def _team_scoped(opts: Options, c: Candidate, t: _Team) -> tuple[Candidate, str | None]:
    """The candidate with its scope settled, and the member of a team memory. A memory from the team server is its
    member's; ``team`` asked for here is this machine's member's (refused when no team database is configured); a
    project's decision, change, preference or rule becomes team memory when the project shares them by default."""
    if opts.team is not None:
        return c.model_copy(update={"scope": "team"}), opts.team.member
    if c.scope == "team":
        if t.member is None:
            raise Invalid("scope 'team' needs a team database: set STRATAGATE_TEAM_DSN and STRATAGATE_TEAM_MEMBER "
                          "(or the plugin's teamDsn and teamMember) and restart; nothing was stored",
                          {"scope": "team"})
        return c, t.member
    if t.by_default and c.scope == "project" and (c.type in team.DEFAULT_TYPES or c.criticality == "safety"):
        return c.model_copy(update={"scope": "team"}), t.member
    return c, None


async def _admit_one(conn: Connection, opts: Options, raw: Candidate, t: _Team) -> Outcome:
    c, member = _team_scoped(opts, _redacted(raw), t)
    fp = store.fingerprint(c.statement)
    tomb = await _tombstone(conn, opts, c, fp)
    if tomb is not None:
        return await _refuse_or_suppress(conn, opts, c, *tomb)
    supersedes = await _targets(conn, opts, c, c.supersedes, "supersedes")
    conflicts = await _targets(conn, opts, c, c.conflicts_with, "conflicts_with")
    own = frozenset([*c.supersedes, *c.conflicts_with])  # what it replaces or disputes is not what it restates

    outcome: Outcome
    event = await store.current_duplicate(conn, opts.namespace_id, opts.session_id, fp)
    if event is not None:
        if opts.on_exact_duplicate == "error":
            raise Invalid(f"already remembered as {event.public_id}", {"duplicate": event.public_id})
        added = await _merge(conn, opts, event, c, "exact") if opts.on_exact_duplicate == "merge" else 0
        outcome = Outcome(result="duplicate" if opts.on_exact_duplicate == "keep" else "merged", sources_added=added)
    else:
        event = await store.near_duplicate(conn, opts.namespace_id, opts.session_id, c.statement, exclude=own)
        if event is not None:
            # Nearly the same words: one memory with both wordings as its sources, not two memories.
            outcome = Outcome(result="merged", near=True, sources_added=await _merge(conn, opts, event, c, "near"))
    if event is not None:
        await team.merged(conn, event, opts.team)
    else:
        event = await store.insert_event(conn, _new_event(opts, c, fp, member), opts.actor)
        await team.created(conn, event, c.statement, opts.team)
        sources = await store.insert_sources(conn, event.id, c.sources)
        outcome = Outcome(result="inserted", sources_added=len(sources))
        if opts.projector is not None:
            outcome.graph = await opts.projector(conn, event, frozenset(t.id for t in supersedes))

    superseded = set()
    for target in supersedes:
        if target.id == event.id:
            continue
        target = await store.get_event(conn, target.id) or target  # earlier steps may have changed it
        outcome.supersedes.append(await store.supersede(conn, target, event, opts.actor, opts.supersede_note))
        superseded.add(target.id)
    for target in conflicts:
        if target.id == event.id or target.id in superseded:
            continue
        current = await store.get_event(conn, event.id)
        other = await store.get_event(conn, target.id)
        assert current is not None and other is not None
        await store.dispute(conn, current, other, opts.actor)
        await store.dispute(conn, other, current, opts.actor)
    outcome.event = await store.get_event(conn, event.id) or event
    return outcome


async def admit(conn: Connection, candidates: list[Candidate], options: Options) -> Admission:
    """Admit ``candidates`` in order inside the caller's transaction (an error rolls all of it back).

    A long batch (an import of thousands of items) gives the event loop back every ``YIELD_EVERY`` candidates: its
    statements run on the loop, and readers (the Memory page, recall) must not wait for the whole batch. Writers
    still wait for the transaction, as they must."""
    outcomes = []
    t = await _Team.of(conn, options)
    for i, candidate in enumerate(candidates):
        if i and i % YIELD_EVERY == 0:
            await asyncio.sleep(0)
        outcomes.append(await _admit_one(conn, options, candidate, t))
    result = Admission(outcomes=outcomes, namespace_id=options.namespace_id)
    inserted = [o.event.id for o in outcomes if o.result == "inserted" and o.event is not None]
    await _queue_projection(conn, options, inserted, result)
    return result


async def _queue_projection(conn: Connection, options: Options, inserted: list[int], result: Admission) -> None:
    if inserted and options.projector is None:
        # The one place an admitted event queues its graph projection: its batches (the jobs' subjects) in the
        # admitting transaction, and their jobs in it too unless a job handler returns them as follow-ups.
        reason = options.projection_reason or options.origin
        result.projection_batches = await add_batches(conn, options.namespace_id, inserted, reason)
        if options.projection_jobs:
            result.projection_jobs = [
                await enqueue(conn, options.namespace_id, GRAPH_PROJECTION, batch)
                for batch in result.projection_batches
            ]


async def admit_new(conn: Connection, candidates: list[Candidate], options: Options) -> Admission:
    """Bulk admission of candidates known to be new (a bulk load into a fresh memory: the scale bench's
    databases): steps 1, 2, 6, 7 and 8 of :func:`admit` (redaction, fingerprint, insert, sources, projection) with
    the rows, search terms, audit rows and sources written in a few statements for the whole batch. The same rows as
    :func:`admit` writes for the same candidates (tests/test_bulk_admit.py).

    There is no tombstone, duplicate or target check: a candidate that names targets, or whose fingerprint an event
    of the namespace already has or another candidate of the batch repeats, raises :class:`Invalid` and nothing of
    the batch is kept (the caller's transaction rolls back). Near duplicates are the caller's to avoid."""
    t = await _Team.of(conn, options)
    scoped = [_team_scoped(options, _redacted(c), t) for c in candidates]
    cs = [c for c, _ in scoped]
    fps = [store.fingerprint(c.statement) for c in cs]
    repeated = len(set(fps)) < len(fps) or await store.stored_fingerprints(conn, options.namespace_id, fps)
    if repeated or any(c.supersedes or c.conflicts_with for c in cs):
        raise Invalid("a bulk admission takes only new memories with no targets; use admit()")
    rows = await store.insert_events(
        conn, [_new_event(options, c, fp, m) for (c, m), fp in zip(scoped, fps, strict=True)], options.actor)
    for row, c in zip(rows, cs, strict=True):
        await team.created(conn, row, c.statement, options.team)
    await store.insert_new_sources(conn, [(row.id, src) for row, c in zip(rows, cs, strict=True) for src in c.sources])
    outcomes = []
    for row, c in zip(rows, cs, strict=True):
        outcome = Outcome(result="inserted", sources_added=len({(s.message_id, s.call_id, s.import_id, s.source_ref,
                                                                 s.quote) for s in c.sources}))
        if options.projector is not None:
            outcome.graph = await options.projector(conn, row, frozenset())
        outcomes.append(outcome)
    events = {e.id: e for e in await store.get_events(conn, [row.id for row in rows])}  # after the projection
    for row, outcome in zip(rows, outcomes, strict=True):
        outcome.event = events.get(row.id, row)
    result = Admission(outcomes=outcomes, namespace_id=options.namespace_id)
    await _queue_projection(conn, options, [row.id for row in rows], result)
    return result
