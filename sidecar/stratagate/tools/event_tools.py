"""Explicit long-term memory: memory_remember, memory_forget, memory_restore, memory_pin, memory_search_events
and memory_expand_event. Every mutation is audited with actor 'agent'."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from stratagate import ids
from stratagate.erase import erase_subject, is_erased
from stratagate.errors import Invalid, NotFound
from stratagate.events import store, visibility
from stratagate.events.admit import Candidate, Options, admit
from stratagate.events.claims import Claim
from stratagate.events.models import Criticality, EventRow, EventType, SaidScope, Status
from stratagate.events.store import Source
from stratagate.events.temporal import TimeStatus
from stratagate.events.visibility import Viewer
from stratagate.graph.projection import mark_projected, project_event
from stratagate.maintenance import consolidate
from stratagate.protocol import ToolContext, tool
from stratagate.protocol.tool_results import (
    EventChangeResult,
    ExpandEventResult,
    ForgetResult,
    RememberResult,
    SearchEventsResult,
)
from stratagate.redact import redact
from stratagate.storage.lookup import ensure_namespace, ensure_session
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import parse_time, to_iso
from stratagate.tools.scope import UNSEARCHABLE, query_match, scope_keys

ACTOR = "agent"
DEFAULT_STATUSES: list[str] = ["active", "disputed"]

EventId = Annotated[str, StringConstraints(min_length=1, max_length=64)]
Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]
ID_HELP = "Event id from memory_remember or memory_search_events, e.g. 'evt_12'."


def _parse(value: str) -> int:
    key = ids.parse(value, "evt")
    if key is None:
        raise Invalid(f"event ids look like 'evt_12' (got {value!r})")
    return key


async def _viewer(conn: Connection, ctx: ToolContext) -> Viewer:
    ns, sess = await scope_keys(conn, ctx)
    return await visibility.viewer(conn, ns, sess)


async def _visible(conn: Connection, ctx: ToolContext, event_id: str) -> tuple[EventRow, Viewer]:
    """The event if the caller may see it (events/visibility.py: its namespace and session, or the user tier) and
    the viewer; otherwise -32004 (other namespaces and sessions look the same)."""
    key = _parse(event_id)
    viewer = await _viewer(conn, ctx)
    ev = await store.get_event(conn, key)
    if ev is None or not ev.visible_to(viewer):
        raise NotFound(f"unknown event {ids.make('evt', key)}")
    return ev, viewer


async def _erased(conn: Connection, ev: EventRow | None) -> bool:
    return ev is not None and await is_erased(conn, ev.namespace_id, ev.public_id)


def _card(ev: EventRow, viewer: Viewer) -> dict[str, Any]:
    """The event card of a tool result: the event with its tier (and home namespace when it is another's)."""
    return ev.public() | ev.tier_fields(viewer)


def _brief(ev: EventRow) -> dict[str, Any]:
    return {
        "id": ev.public_id,
        "title": ev.title,
        "status": ev.status,
        "successor_id": ids.make("evt", ev.successor_id) if ev.successor_id else None,
    }


# --- memory_remember ---------------------------------------------------------------------------------------------


class RememberArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=4000, description="What to remember, in full (1–4000 characters).")
    title: str | None = Field(
        None, min_length=1, max_length=200, description="A short title; default: the start of the text."
    )
    type: EventType = Field("fact", description="decision, preference, plan, change, fact or event.")
    scope: SaidScope = Field(
        "project", description="'project' (this memory space), 'user', 'session' (only this session can see it), or "
        "'team' (shared with the team through its database, when one is configured)."
    )
    criticality: Criticality = Field("routine", description="routine, preference, identity or safety.")
    tags: list[Tag] = Field(default_factory=list, max_length=12, description="Up to 12 short tags.")
    when: str | None = Field(
        None,
        max_length=200,
        description="When it happened or will happen, as worded "
        "('next Friday', '2026-05-11', '上周五'); resolved against now.",
    )
    happened: TimeStatus = Field("unknown", description="planned, occurred, ongoing, cancelled or unknown.")
    supersedes: list[EventId] = Field(
        default_factory=list,
        max_length=20,
        description="Ids of events this one replaces ('evt_3'); they are kept, marked superseded and point here.",
    )
    claims: list[Claim] | None = Field(
        None,
        max_length=8,
        description="Optional statements for the knowledge graph (subject, predicate, object or value); "
        "when omitted they are read from the text ('The project uses npm', 'Switch to pnpm').",
    )

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("text must not be blank")
        return value


async def _project_now(conn: Connection, event: EventRow, explicit: frozenset[int]) -> dict[str, Any]:
    # Projected now, in the admitting transaction: the agent may read the graph in its very next call.
    graph = await project_event(conn, event, ACTOR, explicit_targets=explicit)
    await mark_projected(conn, event.id, graph)
    return graph


@tool(
    "memory_remember",
    args=RememberArgs,
    result=RememberResult,
    description="Store something in long-term memory (a decision, preference, plan, change, fact or event). Use "
    "`supersedes` when it replaces earlier events: they are kept, marked superseded and point to the new one. "
    "Restating a forgotten event is refused.",
)
async def remember(ctx: ToolContext, args: RememberArgs) -> dict[str, Any]:
    target_keys = list(dict.fromkeys(_parse(t) for t in args.supersedes))
    candidate = Candidate(
        statement=args.text,
        title=args.title,
        tags=args.tags,
        type=args.type,
        scope=args.scope,
        criticality=args.criticality,
        mentioned_at=datetime.now(UTC),
        time_original=args.when,
        time_status=args.happened,
        claims=[c.model_dump(exclude_none=True) for c in args.claims or []],
        sources=[Source(call_id=ctx.call_id, quote=args.text.strip())],
        supersedes=target_keys,
    )
    async with ctx.db.transaction() as conn:
        ns = await ensure_namespace(conn, ctx.namespace)
        sess, _ = await ensure_session(conn, ns, ctx.session)
        options = Options(
            namespace_id=ns,
            session_id=sess,
            origin="remember",
            actor=ACTOR,
            on_tombstone="refuse",
            on_exact_duplicate="keep",  # the same words again are nothing new
            unknown_target="error",
            projector=_project_now,
        )
        (outcome,) = (await admit(conn, [candidate], options)).outcomes
        viewer = await visibility.viewer(conn, ns, sess)
    event = outcome.event
    assert event is not None
    duplicate = outcome.result != "inserted"
    result = _card(event, viewer) | {"duplicate": duplicate}
    if not duplicate:
        result["graph"] = {k: v for k, v in (outcome.graph or {}).items() if k != "event"}
    elif outcome.near:
        result["note"] = f"nearly the same as {event.public_id}; merged into it (this wording was added as a source)"
    else:
        result["note"] = f"already remembered as {event.public_id}; nothing new was stored"
    if outcome.supersedes:
        result["supersedes"] = outcome.supersedes
    return result


# --- forget / restore / pin --------------------------------------------------------------------------------------


class ForgetArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: EventId = Field(description=ID_HELP)
    reason: str | None = Field(None, max_length=500, description="Why it is forgotten (kept in the audit log).")
    erase: bool = Field(
        False,
        description="Also erase it for good: its text and every stored copy (source messages, block views, "
        "search indexes, vectors, import source, audit copies) are removed. Erasing CANNOT be undone: "
        "memory_restore will not bring it back.",
    )


class IdArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: EventId = Field(description=ID_HELP)


class PinArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: EventId = Field(description=ID_HELP)
    pinned: bool = Field(description="true to pin (always kept prominent), false to unpin.")


@tool(
    "memory_forget",
    args=ForgetArgs,
    result=ForgetResult,
    description="Forget an event: it disappears from search, activation, block views and raw search (its source "
    "messages are shown as hidden) and restating it is refused, until restored. erase=true removes its text and every "
    "stored copy for good: that cannot be undone.",
)
async def forget(ctx: ToolContext, args: ForgetArgs) -> dict[str, Any]:
    if args.erase:
        key = _parse(args.id)
        async with ctx.db.transaction() as conn:  # unknown and invisible events look the same
            ev, viewer = await _visible(conn, ctx, args.id)
        if viewer.foreign(ev.namespace_id):
            # A user-tier memory of another namespace: erased there, where its text and sources live.
            assert ev.namespace_name is not None
            return await erase_subject(
                ctx.db, ev.namespace_name, ids.make("evt", key), ACTOR, max_attempts=ctx.settings.job_max_attempts
            )
        return await erase_subject(
            ctx.db, ctx.namespace, ids.make("evt", key), ACTOR, max_attempts=ctx.settings.job_max_attempts,
            viewer_session=ctx.session,
        )
    async with ctx.db.transaction() as conn:
        ev, viewer = await _visible(conn, ctx, args.id)
        if ev.status == "forgotten":
            return _card(ev, viewer) | {"unchanged": True, "note": f"{ev.public_id} was already forgotten"}
        # Audited in the event's own namespace (store._set), also when the user tier brought it here.
        after = await store.forget(conn, ev, ACTOR, args.reason and redact(args.reason))
    return _card(after, viewer) | {
        "unchanged": False,
        "note": f"forgotten; restating it will be refused until memory_restore is called with id '{ev.public_id}'",
    }


@tool(
    "memory_restore",
    args=IdArgs,
    result=EventChangeResult,
    description="Bring back a forgotten event with the status it had before (a superseded event stays superseded), "
    "or undo the merge of a duplicate that maintenance merged into another event.",
)
async def restore(ctx: ToolContext, args: IdArgs) -> dict[str, Any]:
    async with ctx.db.transaction() as conn:
        ev, viewer = await _visible(conn, ctx, args.id)
        if ev.status == "superseded" and await consolidate.merged_into(conn, ev.id) == ev.successor_id:
            # A duplicate merged by maintenance: restoring it undoes exactly that merge.
            undone = await consolidate.unmerge(conn, ev, ACTOR)
            return undone["event"] | {"note": f"unmerged from {undone['survivor']}: its copied sources were removed"}
        if ev.status != "forgotten":
            raise Invalid(f"{ev.public_id} is {ev.status}, not forgotten; only forgotten events can be restored")
        if await _erased(conn, ev):
            raise Invalid(f"{ev.public_id} was erased; an erased memory cannot be restored")
        after = await store.restore(conn, ev, ACTOR)
    return _card(after, viewer)


@tool(
    "memory_pin",
    args=PinArgs,
    result=EventChangeResult,
    description="Pin or unpin an event (pinned events are kept prominent).",
)
async def pin(ctx: ToolContext, args: PinArgs) -> dict[str, Any]:
    async with ctx.db.transaction() as conn:
        ev, viewer = await _visible(conn, ctx, args.id)
        if ev.status == "forgotten":
            raise Invalid(f"{ev.public_id} is forgotten; restore it before pinning")
        if ev.pinned == args.pinned:
            return _card(ev, viewer) | {"unchanged": True}
        after = await store.set_pinned(conn, ev, ACTOR, args.pinned)
    return _card(after, viewer) | {"unchanged": False}


# --- search / expand ---------------------------------------------------------------------------------------------


class SearchEventsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str | None = Field(
        None, max_length=2000, description="Words to look for; omit to list the newest events matching the filters."
    )
    limit: int = Field(6, ge=1, le=20, description="Maximum number of hits (1–20).")
    status: list[Status] | None = Field(
        None,
        min_length=1,
        max_length=5,
        description="Only these statuses (the only way to see forgotten or archived events).",
    )
    type: EventType | None = Field(None, description="Only events of this type.")
    include_inactive: bool = Field(False, description="Also show superseded events (default: active and disputed).")
    scope: SaidScope | None = Field(None, description="Only events of this scope ('team': shared team memory).")
    participants: list[Tag] = Field(
        default_factory=list, max_length=8, description="Only events naming all of these participants."
    )
    after: str | None = Field(
        None, max_length=40, description="Only events that happened (or, if unknown, were said) at or after this date "
        "or date-time ('2026-05-01')."
    )
    before: str | None = Field(None, max_length=40, description="Only events before this date or date-time.")
    temporal_intent: Literal["first", "latest"] | None = Field(
        None, description="'first' or 'latest': order the matches by when they happened, earliest or latest first."
    )

    @field_validator("after", "before")
    @classmethod
    def _instant(cls, value: str | None) -> str | None:
        return None if value is None else to_iso(parse_time(value))


@tool(
    "memory_search_events",
    args=SearchEventsArgs,
    result=SearchEventsResult,
    evidence=True,
    description="Search long-term memory events, best match first (active and disputed by default). Every hit shows "
    "its status and, if replaced, its successor: a superseded event is history, not the current state.",
)
async def search_events(ctx: ToolContext, args: SearchEventsArgs) -> dict[str, Any]:
    conn = ctx.db.reader
    statuses = (
        list(dict.fromkeys(args.status))
        if args.status
        else [*DEFAULT_STATUSES, *(["superseded"] if args.include_inactive else [])]
    )
    result: dict[str, Any] = {"query": args.query, "statuses": statuses, "hits": []}
    match, unsearchable = query_match(args.query)
    if unsearchable:
        result["note"] = UNSEARCHABLE
        return result
    ns, sess = await scope_keys(conn, ctx)
    viewer = await visibility.viewer(conn, ns, sess)  # a namespace with no row yet still sees the user tier
    filters = store.EventFilter(
        statuses=statuses,
        type=args.type,
        scope=args.scope,
        participants=args.participants,
        after=args.after,
        before=args.before,
        temporal_intent=args.temporal_intent,
    )
    found = await store.search(conn, ns, sess, match, filters, limit=max(args.limit, DENSE_POOL))
    if match is not None and not args.temporal_intent:
        found = await _dense_rerank(ctx, args.query or "", found)
    for ev, score in found[: args.limit]:
        hit: dict[str, Any] = {
            "id": ev.public_id,
            "title": ev.title,
            "summary": ev.summary,
            "type": ev.type,
            "scope": ev.shown_scope,
            **ev.tier_fields(viewer),
            "criticality": ev.criticality,
            "status": ev.status,
            "pinned": ev.pinned,
            "tags": ev.tags,
            "temporal": ev.temporal(),
            "successor_id": None,
            "successor_title": None,
        }
        if score is not None:
            hit["score"] = round(score, 4)
        if ev.successor_id is not None:
            succ = await store.get_event(conn, ev.successor_id)
            hit["successor_id"] = ids.make("evt", ev.successor_id)
            if succ is not None and succ.visible_to(viewer):
                hit["successor_title"] = succ.title
            if ev.status == "superseded":
                hit["note"] = f"superseded by {hit['successor_id']}: not current"
        result["hits"].append(hit)
    return result


DENSE_POOL = 20
DENSE_WEIGHT = 1.0


async def _dense_rerank(
    ctx: ToolContext, query: str, found: list[tuple[EventRow, float | None]]
) -> list[tuple[EventRow, float | None]]:
    """Lexical matches re-ranked by BM25 normalised to the best match plus the query's cosine similarity to each
    event (as memory_search_raw does). Only lexical matches are ranked: a query that matches nothing stays empty.
    Vectors are stored per namespace: a user-tier event of another namespace is compared in its own."""
    if not found:
        return found
    try:
        from stratagate.search import vectors
    except ImportError:
        return found
    index = ctx.dense
    if index is None or not index.usable():
        return found
    vector = await index.query_vector(query)
    if vector is None:
        return found
    sims: dict[int, float] = {}
    for home in sorted({ev.namespace_id for ev, _ in found}):
        wanted = {ev.id for ev, _ in found if ev.namespace_id == home}
        sims.update(await vectors.nearest(ctx.db.reader, home, "event", vector, len(wanted), wanted))
    if not sims:
        return found
    best = max((score or 0.0) for _, score in found) or 1.0
    rescored: list[tuple[EventRow, float | None]] = [
        (ev, (score or 0.0) / best + DENSE_WEIGHT * max(0.0, sims.get(ev.id, 0.0)) * (ev.weight_cap or 1.0))
        for ev, score in found
    ]
    rescored.sort(key=lambda pair: (-(pair[1] or 0.0), pair[0].status == "superseded", -pair[0].id))
    return rescored


@tool(
    "memory_expand_event",
    args=IdArgs,
    result=ExpandEventResult,
    evidence=True,
    description="Read one event in full: narrative, quotes, sources, temporal record and, if superseded, the chain of "
    "events that replaced it.",
)
async def expand_event(ctx: ToolContext, args: IdArgs) -> dict[str, Any]:
    conn = ctx.db.reader
    ev, viewer = await _visible(conn, ctx, args.id)
    chain = [e for e in await store.successor_chain(conn, ev) if e.visible_to(viewer)]
    result = _card(ev, viewer) | {
        "sources": await store.sources(conn, ev.id),
        "successor_chain": [_brief(e) for e in chain],
        "supersedes": [_brief(e) for e in await store.predecessors(conn, ev) if e.visible_to(viewer)],
    }
    if ev.status == "superseded" and chain:
        result["note"] = f"superseded; the current version is {chain[-1].public_id}"
    return result

