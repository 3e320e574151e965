"""Events in the ``Memory`` shape of the DSH memory service (``stratagateMemory`` / ``crossSessionMemory``).

Plugins written for dsh-memory-connect read memories as ``{id, type, content, sessionId, sourceEventSeq,
createdAt, lastAccessedAt, accessCount, relevanceScore, tags, parentMemoryId, status}`` (camelCase, times in epoch
milliseconds). An event maps onto it field by field; what that shape has no room for (title, scope, tier, pin,
provenance) is added under names of its own. Its ``type`` and ``status`` are ours (docs/protocol.md, "The DSH memory
service"): dsh-memory-connect's ``context`` and ``skill`` types are stored as ``fact`` events tagged with the type's
name, and are found again by that tag.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from stratagate import ids
from stratagate.events.models import Criticality, EventRow, EventType, Origin, Scope, Status
from stratagate.events.visibility import Tier
from stratagate.timeutil import parse_time

ALIASES: dict[str, EventType] = {"context": "fact", "skill": "fact"}
"""dsh-memory-connect's types that have no event type of their own: stored as ``fact``, tagged with their name."""
MemoryType = Literal["decision", "preference", "plan", "change", "fact", "event", "context", "skill"]
"""What ``storeMemory`` and ``searchMemories`` accept as a type: the event types and the aliases above."""
assert set(get_args(MemoryType)) == set(get_args(EventType)) | set(ALIASES)


def stored_as(kind: str) -> tuple[EventType, str | None]:
    """The event type a service type is stored as, and the tag that marks an alias (None for an event type)."""
    if kind in ALIASES:
        return ALIASES[kind], kind
    assert kind in get_args(EventType), kind
    return cast(EventType, kind), None


def matches_type(ev: EventRow, kinds: Sequence[str]) -> bool:
    """Does the event answer a ``types`` filter (an alias: a ``fact`` carrying the alias's tag)?"""
    for kind in kinds:
        event_type, tag = stored_as(kind)
        if ev.type == event_type and (tag is None or tag in ev.tags):
            return True
    return False


def epoch_ms(iso: str | None) -> int | None:
    return None if iso is None else int(parse_time(iso).timestamp() * 1000)


class Shape(BaseModel):
    """camelCase on the wire (the JS API's naming), snake_case here."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, defer_build=True)


class Provenance(Shape):
    origin: Origin = Field(description="remember (stored explicitly), extraction or import.")
    namespace: str | None = Field(description="The memory space it lives in (another one only through the user tier).")
    session_id: str | None = Field(description="The DSH session it was said or stored in.")
    block_id: str | None = Field(description="The sealed block of turns it was extracted from (blk_N).")
    import_id: str | None = Field(description="The import it came from (imp_N).")
    mentioned_at: str = Field(description="When it was said (ISO-8601).")


class Memory(Shape):
    """One event as the service shows it."""

    id: str = Field(description="The event id (evt_N): the id every memory tool takes.")
    type: EventType
    content: str = Field(description="The event's full text (its narrative).")
    title: str
    session_id: str | None = Field(description="The DSH session the event was said or stored in.")
    source_event_seq: None = Field(description="Always null: events cite captured messages, not DSH log positions.")
    created_at: int = Field(description="Epoch milliseconds.")
    updated_at: int = Field(description="Epoch milliseconds.")
    last_accessed_at: int | None = Field(description="The last use receipt naming it (epoch ms); null: never used.")
    access_count: int = Field(description="How many use receipts named it (the agent said it used it).")
    relevance_score: float | None = Field(description="In search and recall: the match's score, best hit 1.0.")
    tags: list[str]
    parent_memory_id: str | None = Field(description="The event that replaced it (superseded, or merged into).")
    status: Status
    scope: Scope
    tier: Tier
    criticality: Criticality
    pinned: bool
    provenance: Provenance


def memory(ev: EventRow, uses: tuple[int, str | None] = (0, None), score: float | None = None) -> Memory:
    """The ``Memory`` of an event; ``uses`` is (use receipts naming it, the last one's time)."""
    successor = ids.make("evt", ev.successor_id) if ev.successor_id else None
    return Memory(
        id=ev.public_id,
        type=ev.type,
        content=ev.narrative,
        title=ev.title,
        session_id=ev.session_key,
        source_event_seq=None,
        created_at=epoch_ms(ev.created_at) or 0,
        updated_at=epoch_ms(ev.updated_at) or 0,
        last_accessed_at=epoch_ms(uses[1]),
        access_count=uses[0],
        relevance_score=None if score is None else round(score, 4),
        tags=ev.tags,
        parent_memory_id=successor,
        status=ev.status,
        scope=ev.scope,
        tier=ev.tier,
        criticality=ev.criticality,
        pinned=ev.pinned,
        provenance=Provenance(
            origin=ev.origin,
            namespace=ev.namespace_name,
            session_id=ev.session_key,
            block_id=ids.make("blk", ev.block_id) if ev.block_id else None,
            import_id=ids.make("imp", ev.import_id) if ev.import_id else None,
            mentioned_at=ev.mentioned_at,
        ),
    )


def public(m: Memory) -> dict[str, Any]:
    """The wire form (camelCase)."""
    return m.model_dump(mode="json", by_alias=True)
