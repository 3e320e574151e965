"""``page.events.list`` (GET /events) and ``page.events.get`` (GET /event): the namespace's long-term events as the
Memory page shows them, every status with its links (successor, what it replaced, what it is disputed with), mention
vs occurrence time, and for one event its sources (the exact messages), its audit history and its merges."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from stratagate import ids
from stratagate.app import App
from stratagate.errors import NotFound
from stratagate.events.models import EventRow, EventType, SaidScope, Status
from stratagate.page import longterm_queries as q
from stratagate.page.audit_view import AuditEntry, Limit, Offset, entry_views
from stratagate.page.foreign import hide_foreign
from stratagate.protocol import method
from stratagate.protocol.types import Name, Result
from stratagate.storage.lookup import namespace_id
from stratagate.text.terms import fts_query

STATUSES: tuple[Status, ...] = ("active", "superseded", "disputed", "forgotten", "archived")
DEFAULT_STATUSES = "active,superseded,disputed,forgotten"
EventId = Annotated[str, StringConstraints(strip_whitespace=True, pattern=r"^evt_[1-9][0-9]{0,17}$")]


class EventLink(Result):
    id: str
    title: str


class SuccessorLink(EventLink):
    status: Status


class PageEvent(Result):
    model_config = ConfigDict(populate_by_name=True)

    id: str
    type: EventType
    title: str
    summary: str
    status: Status
    pinned: bool
    scope: SaidScope
    tier: str
    origin: str
    session: str | None
    block: str | None
    mentioned_at: str
    happened_start: str | None
    happened_end: str | None
    time_original: str | None
    time_status: str | None
    confidence: float
    successor: SuccessorLink | None
    replaces: list[EventLink]
    disputed_with: list[EventLink]
    import_: str | None = Field(alias="import")


class Source(Result):
    message: str | None
    session: str | None
    turn: int | None
    role: str | None
    quote: str
    at: str
    call_id: str | None
    import_: str | None = Field(alias="import")
    source_ref: str | None


class PageEventDetail(PageEvent):
    narrative: str
    quotes: list[str]
    tags: list[str]
    participants: list[str]
    sources: list[Source]
    history: list[AuditEntry]
    merged_into: EventLink | None
    merged: list[EventLink]


class EventsListParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    q: str | None = Field(None, max_length=2000, description="Words to find (the event full-text index).")
    status: str = Field(DEFAULT_STATUSES, max_length=200, description="Comma list of statuses.")
    type: EventType | None = None
    scope: SaidScope | None = None
    session: Name | None = Field(None, description="Only events said in this session.")
    limit: Limit = 50
    offset: Offset = 0

    @field_validator("status")
    @classmethod
    def _statuses(cls, value: str) -> str:
        wanted = [s.strip() for s in value.split(",") if s.strip()]
        bad = [s for s in wanted if s not in STATUSES]
        if not wanted or bad:
            raise ValueError(f"status is a comma list of {', '.join(STATUSES)} (got {value!r})")
        return ",".join(dict.fromkeys(wanted))


class EventsListResult(Result):
    events: list[PageEvent]
    total: int


class EventGetParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    id: EventId


def _link(ev: EventRow) -> dict[str, Any]:
    return {"id": ev.public_id, "title": ev.title}


def _current_disputes(rows: list[tuple[str, str, dict[str, Any] | None]]) -> dict[str, set[str]]:
    """Each event's dispute partners now: what its ``event.disputed`` rows named since it last left 'disputed'."""
    partners: dict[str, set[str]] = {}
    for subject, action, after in rows:
        mine = partners.setdefault(subject, set())
        if action == "event.disputed":
            other = ((after or {}).get("note") or {}).get("conflicts_with")
            if isinstance(other, str):
                mine.add(other)
        elif after is not None and after.get("status") not in (None, "disputed"):
            mine.clear()
    return partners


async def _disputed_with(app: App, ns: int, events: list[EventRow]) -> dict[int, list[EventRow]]:
    conn = app.db.reader
    disputed = [ev.public_id for ev in events if ev.status == "disputed"]
    if not disputed:
        return {}
    # Both directions: a side already disputed is not disputed again (no row of its own), the other side names it.
    naming = await q.disputes_naming(conn, ns, disputed)
    subjects = sorted({*disputed, *(s for s, _ in naming)})
    partners = _current_disputes(await q.event_status_audit(conn, ns, subjects))
    out: dict[str, set[str]] = {d: set(partners.get(d, ())) for d in disputed}
    for subject, other in naming:
        if other in out and other in partners.get(subject, ()):
            out[other].add(subject)
    keys = {k for names in out.values() for n in names if (k := ids.parse(n, "evt")) is not None}
    found = await q.events_by_id(conn, ns, keys)
    by_event: dict[int, list[EventRow]] = {}
    for ev in events:
        names = sorted(out.get(ev.public_id, ()), key=lambda n: ids.parse(n, "evt") or 0)
        by_event[ev.id] = [found[k] for n in names if (k := ids.parse(n, "evt")) in found and k != ev.id]
    return by_event


async def event_views(app: App, ns: int, events: list[EventRow]) -> list[dict[str, Any]]:
    """Events as the page lists them, with the events they link to (resolved in a few queries per page)."""
    conn = app.db.reader
    successors = await q.events_by_id(conn, ns, [ev.successor_id for ev in events if ev.successor_id])
    replaced = await q.predecessors(conn, ns, [ev.id for ev in events])
    disputes = await _disputed_with(app, ns, events)
    out = []
    for ev in events:
        succ = successors.get(ev.successor_id or 0)
        out.append({
            "id": ev.public_id,
            "type": ev.type,
            "title": ev.title,
            "summary": ev.summary,
            "status": ev.status,
            "pinned": ev.pinned,
            "scope": ev.shown_scope,
            "tier": ev.tier,
            "origin": ev.origin,
            "session": ev.session_key,
            "block": ids.make("blk", ev.block_id) if ev.block_id else None,
            "mentioned_at": ev.mentioned_at,
            "happened_start": ev.happened_start,
            "happened_end": ev.happened_end,
            "time_original": ev.time_original,
            "time_status": ev.time_status,
            "confidence": ev.confidence,
            "successor": _link(succ) | {"status": succ.status} if succ else None,
            "replaces": [_link(p) for p in replaced.get(ev.id, [])],
            "disputed_with": [_link(d) for d in disputes.get(ev.id, [])],
            "import": ids.make("imp", ev.import_id) if ev.import_id else None,
        })
    return out


@method("page.events.list", params=EventsListParams, result=EventsListResult, http="GET /events")
async def events_list(app: App, p: EventsListParams) -> dict[str, Any]:
    ns = await namespace_id(app.db, p.namespace)
    match = fts_query(p.q) if p.q and p.q.strip() else None
    if p.q and p.q.strip() and match is None:
        return {"events": [], "total": 0}  # words given, none searchable: nothing matches
    rows, total = await q.list_events(
        app.db.reader, ns, match=match, statuses=p.status.split(","), event_type=p.type, scope=p.scope,
        session=p.session, limit=p.limit, offset=p.offset,
    )
    return await hide_foreign(app.db.reader, ns, {"events": await event_views(app, ns, rows), "total": total})


def _source(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "message": ids.make("msg", row["message_id"]) if row["message_id"] else None,
        "session": row["session"],
        "turn": row["turn"],
        "role": row["role"],
        "quote": row["quote"],
        "at": row["message_at"] or row["created_at"],
        "call_id": row["call_id"],
        "import": ids.make("imp", row["import_id"]) if row["import_id"] else None,
        "source_ref": row["source_ref"],
    }


@method("page.events.get", params=EventGetParams, result=PageEventDetail, http="GET /event")
async def events_get(app: App, p: EventGetParams) -> dict[str, Any]:
    conn = app.db.reader
    ns = await namespace_id(app.db, p.namespace)
    key = ids.parse(p.id, "evt")
    found = await q.events_by_id(conn, ns, [key or 0])
    ev = found.get(key or 0)
    if ev is None:
        raise NotFound(f"unknown event {p.id} in namespace {p.namespace!r}")
    (view,) = await event_views(app, ns, [ev])
    into, merged = await q.merges(conn, ns, ev.id)
    linked = await q.events_by_id(conn, ns, [*merged, *([into] if into else [])])
    history = list(reversed(await q.audit_entries(conn, ns, subject=ev.public_id, limit=500)))
    return await hide_foreign(conn, ns, view | {
        "narrative": ev.narrative,
        "quotes": ev.quotes,
        "tags": ev.tags,
        "participants": ev.participants,
        "sources": [_source(r) for r in await q.event_sources(conn, ns, ev.id)],
        "history": await entry_views(app, history),
        "merged_into": _link(linked[into]) if into in linked else None,
        "merged": [_link(linked[m]) for m in merged if m in linked],
    })
