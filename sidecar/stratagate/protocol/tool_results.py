"""Typed results of the agent tools. Every tool result is validated and serialised through its model before evidence
batching adds ``batch_id`` / ``evidence_refs`` and before the rendering rule (safety/inert.py) runs on it. Keys a
tool leaves out stay out. Nested records whose fields are documented per tool in docs/protocol.md (a graph fact, a
transcript message, a claim, a temporal record) are typed as JSON objects."""

from __future__ import annotations

from typing import Any

from pydantic import Field, RootModel

from stratagate.protocol.types import Result

JsonObject = dict[str, Any]
Number = int | float  # an int stays an int on the wire


class Temporal(Result):
    """An event's two times (events/temporal.py): when it was said, and when it happened as far as the words say."""

    mentioned_at: str | None
    happened_start: str | None
    happened_end: str | None
    original: str | None
    precision: str | None
    basis: str | None
    status: str | None


class TranscriptMessage(Result):
    """One L5 message (blocks/source.py); a message hidden as a forgotten memory has only ``hidden`` besides its
    place."""

    id: str
    turn: int
    role: str
    created_at: str
    content: str | None = None
    name: str | None = None
    call_id: str | None = None
    arguments: Any = None
    result: Any = None
    is_error: bool | None = None
    hidden: str | None = None


# --- blocks --------------------------------------------------------------------------------------------------------


class BlockMeta(Result):
    id: str
    session: str
    seq: int
    status: str
    turns: list[int]
    sealed_at: str
    ready_at: str | None
    level: int
    label: str
    age: int
    weight: Number
    tokens: dict[str, int]


class BlockListItem(BlockMeta):
    view: str


class GetBlocksResult(Result):
    session: str
    blocks: list[BlockListItem]
    open_turns: int


class L5Page(Result):
    """Where a level-5 page sits among the block's messages (memory_expand_block pages long blocks)."""

    offset: int
    count: int
    total: int
    next_offset: int | None
    more: bool


class ExpandBlockResult(BlockMeta):
    view: str
    view_tokens: int
    reanchored: bool
    available_levels: list[int]
    messages: list[TranscriptMessage] | None = None
    page: L5Page | None = None
    # Level 5 only: secret placeholders in this page of the source (0: the messages exactly as captured).
    placeholders: int | None = None
    note: str | None = None


# --- raw search ----------------------------------------------------------------------------------------------------


class Neighbour(Result):
    message_id: str
    role: str
    turn: int
    created_at: str
    text: str


class RawHit(Result):
    message_id: str
    role: str
    session: str
    turn: int
    turn_id: str
    created_at: str
    block_id: str | None
    block_status: str | None
    expand_level: int | None
    where: str
    score: Number | None
    matched: list[str]
    text: str
    before: Neighbour | None
    after: Neighbour | None
    answers: str | None = None
    tool_name: str | None = None
    is_error: bool | None = None


class SearchRawResult(Result):
    query: str
    note: str | None = None
    hits: list[RawHit]
    hidden: int | None = None
    hidden_note: str | None = None


# --- events --------------------------------------------------------------------------------------------------------


class EventCard(Result):
    """An event as events/models.EventRow.public() shows it."""

    id: str
    title: str
    summary: str
    narrative: str
    tags: list[str]
    quotes: list[str]
    type: str
    participants: list[str]
    scope: str
    tier: str | None = None
    """user / project / session (events/visibility.py); every event tool sets it."""
    from_namespace: str | None = None
    """Only for a user-tier event of another namespace: the namespace it was said in."""
    member: str | None = None
    """Only for a team memory: the member who said it."""
    session: str | None
    criticality: str
    confidence: Number
    origin: str
    block_id: str | None
    import_id: str | None
    claims: list[JsonObject]
    status: str
    prior_status: str | None
    successor_id: str | None
    pinned: bool
    weight_cap: Number | None
    temporal: Temporal
    created_at: str
    updated_at: str


class SupersedeOutcome(Result):
    id: str
    status: str
    superseded: bool
    prior_status: str | None = None
    successor_id: str | None = None
    note: str | None = None


class Projection(Result):
    """What projecting the new event into the graph did (graph/projection.py), without the event id; empty when
    nothing was projected."""

    facts: list[str] = Field(default_factory=list)
    superseded_facts: list[str] = Field(default_factory=list)
    superseded_events: list[str] = Field(default_factory=list)
    skipped: str | None = None


class RememberResult(EventCard):
    duplicate: bool
    graph: Projection | None = None
    note: str | None = None
    supersedes: list[SupersedeOutcome] | None = None


class EventChangeResult(EventCard):
    """memory_forget (without erase), memory_restore, memory_pin: the event after the change."""

    unchanged: bool | None = None
    note: str | None = None


class EraseToolResult(Result):
    id: str
    erased: bool
    erased_at: str
    counts: JsonObject
    note: str


class ForgetResult(RootModel[EventChangeResult | EraseToolResult]):
    """memory_forget: the forgotten event, or (erase=true) what was erased."""


class EventBrief(Result):
    id: str
    title: str
    status: str
    successor_id: str | None


class EventSource(Result):
    message_id: str | None
    call_id: str | None
    import_id: str | None
    source_ref: str | None
    quote: str | None
    created_at: str


class ExpandEventResult(EventCard):
    sources: list[EventSource]
    successor_chain: list[EventBrief]
    supersedes: list[EventBrief]
    note: str | None = None


class EventHit(Result):
    id: str
    title: str
    summary: str
    type: str
    scope: str
    tier: str
    from_namespace: str | None = None
    member: str | None = None
    criticality: str
    status: str
    pinned: bool
    tags: list[str]
    temporal: Temporal
    successor_id: str | None
    successor_title: str | None
    score: Number | None = None
    note: str | None = None


class SearchEventsResult(Result):
    query: str | None
    statuses: list[str]
    hits: list[EventHit]
    note: str | None = None


# --- graph ---------------------------------------------------------------------------------------------------------


class FactBrief(Result):
    """A fact as one statement (graph/read.py Renderer.brief); ``status_now`` only in an ``as_of`` state."""

    id: str
    statement: str
    status: str
    slot: str | None
    valid_from: str | None
    valid_to: str | None
    superseded_by: str | None = None
    note: str | None = None
    status_now: str | None = None


class NodeRef(Result):
    id: str
    name: str | None
    kind: str | None = None


class FactEventLink(Result):
    id: str
    role: str
    status: str
    title: str


class FactFull(FactBrief):
    """A fact with its subject, predicate, object or value, direction, scope and the events behind it."""

    subject: NodeRef
    predicate: str
    object: NodeRef | None = None
    value: Any = None
    direction: str
    scope: str
    recorded_at: str
    events: list[FactEventLink]


class NodeHit(Result):
    id: str
    name: str
    kind: str
    category: str | None
    aliases: list[str]
    current_state: list[FactBrief]
    score: Number | None = None
    via: str | None = None  # a neighbour's: the matched node it is one current fact away from


class SearchGraphResult(Result):
    query: str | None
    hits: list[NodeHit]
    note: str | None = None


class AsOf(Result):
    valid_time: str
    state: list[FactBrief]
    note: str


class KnownAt(Result):
    transaction_time: str
    state: list[FactBrief]
    facts: list[FactBrief]
    note: str


class ExpandNodeResult(Result):
    id: str
    name: str
    kind: str
    category: str | None
    aliases: list[str]
    current_state: list[FactBrief]
    facts: list[FactFull]
    as_of: AsOf | None = None
    known_at: KnownAt | None = None


# --- evidence gate -------------------------------------------------------------------------------------------------


class RejectedRef(Result):
    ref: str
    reason: str


class AssessResult(Result):
    assessment_id: str
    batch_id: str
    verdict: str
    requested_verdict: str
    reason: str | None
    evidence_refs: list[str]
    rejected_refs: list[RejectedRef]
    fit: str
    missing: str
    next_strategy: str
    note: str


class CountedRef(Result):
    ref: str
    batch_id: str
    assessment_id: str
    strengthens: str | None
    note: str | None = None


class Reinforced(Result):
    id: str
    session_uses: int
    turn: int


class RecordUseResult(Result):
    receipt_id: str
    batch_id: str | None
    evidence_refs: list[str]
    counted: list[CountedRef]
    not_counted: list[RejectedRef]
    reinforced: list[Reinforced]
    settles: list[str]
    turn: int
    note: str
    duplicate: bool
    created_at: str
