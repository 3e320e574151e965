"""What the model must return for a block: the durable events it holds, each citing its source messages."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, ValidationError

from stratagate.events.claims import Claim
from stratagate.events.models import Criticality, EventType, Scope
from stratagate.events.temporal import TimeStatus

MAX_EVENTS = 12
MAX_RELATED = 8

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Short = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]
MessageId = Annotated[str, StringConstraints(strip_whitespace=True, pattern=r"^msg_[1-9][0-9]{0,17}$")]
EventId = Annotated[str, StringConstraints(strip_whitespace=True, pattern=r"^evt_[1-9][0-9]{0,17}$")]


MAX_CLAIMS = 8


def _valid_claims(value: Any) -> Any:
    """Claims are an optional extra: a malformed one is dropped rather than failing the whole extraction."""
    if not isinstance(value, list):
        return []
    kept = []
    for item in value[:MAX_CLAIMS]:
        try:
            kept.append(Claim.model_validate(item))
        except ValidationError:
            continue
    return kept


class EventDraft(BaseModel):
    """One event the model found in the block. Everything here is checked by code before it is stored."""

    model_config = ConfigDict(extra="ignore")

    title: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)] = Field(
        description="A short, specific title (max 200 characters)."
    )
    summary: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=1000)] = Field(
        description="The event as one self-contained statement (max 1000 characters)."
    )
    narrative: Annotated[str, StringConstraints(strip_whitespace=True, max_length=4000)] | None = Field(
        None, description="Optional fuller account: context and reasons."
    )
    tags: list[Short] = Field(default_factory=list, max_length=12, description="Up to 12 short topic tags.")
    quotes: list[Annotated[str, StringConstraints(min_length=1, max_length=1000)]] = Field(
        default_factory=list,
        max_length=12,
        description="Up to 12 verbatim excerpts copied exactly from the cited source messages.",
    )
    source_message_ids: list[MessageId] = Field(
        min_length=1, max_length=20, description="Ids of the messages of this block that state it ('msg_12')."
    )
    type: EventType = Field("fact", description="decision, preference, plan, change, fact or event.")
    participants: list[Short] = Field(default_factory=list, max_length=12, description="Who was involved.")
    scope: Scope = Field(
        "project", description="'project' (this memory space), 'user' (about the user), 'session' (this session only)."
    )
    criticality: Criticality = Field("routine", description="routine, preference, identity or safety.")
    confidence: float = Field(0.8, ge=0, le=1, description="How sure you are that this is stated (0–1).")
    time_original: Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)] | None = Field(
        None,
        description="The time expression exactly as worded in the conversation ('next week', '下周五'), or null. "
        "Never a computed date.",
    )
    time_status: TimeStatus = Field(
        "unknown", description="planned, occurred, ongoing, cancelled or unknown, as the conversation states it."
    )
    supersedes: list[EventId] = Field(
        default_factory=list,
        max_length=MAX_RELATED,
        description="Ids from related_events that this event replaces (same subject, newer state).",
    )
    conflicts_with: list[EventId] = Field(
        default_factory=list,
        max_length=MAX_RELATED,
        description="Ids from related_events that this event contradicts without clearly replacing.",
    )
    claims: Annotated[list[Claim], BeforeValidator(_valid_claims)] = Field(
        default_factory=list,
        description=f"Up to {MAX_CLAIMS} statements for the knowledge graph (subject, predicate, object or value).",
    )


class ExtractionOutput(BaseModel):
    """Arguments of the forced ``stratagate_extract_events`` call."""

    model_config = ConfigDict(extra="ignore")

    events: list[EventDraft] = Field(
        max_length=MAX_EVENTS,
        description=f"The durable events of this block (at most {MAX_EVENTS}); an empty list when there are none.",
    )
