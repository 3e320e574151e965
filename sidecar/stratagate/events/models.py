"""Event cards: the stored row and the public form agents and tools see."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from stratagate import ids
from stratagate.events.temporal import Basis, Precision, TimeStatus
from stratagate.events.visibility import Tier, Viewer, tier_of

EventType = Literal["decision", "preference", "plan", "change", "fact", "event"]
Scope = Literal["user", "project", "session"]
"""How an event is stored. A team memory is stored with scope ``project`` and ``team_member`` set."""
SaidScope = Literal["user", "project", "session", "team"]
"""What a caller may ask for (memory_remember, imports): ``team`` is shared through the team database
(stratagate/team/) and seen in the project's namespace on every member's machine."""
Criticality = Literal["routine", "preference", "identity", "safety"]
Status = Literal["active", "superseded", "disputed", "forgotten", "archived"]
Origin = Literal["remember", "extraction", "import"]

SUPERSEDED_WEIGHT_CAP = 0.1
"""Long-term weight of a superseded event: it can still be found, never outrank what replaced it."""


class NewEvent(BaseModel):
    """Everything written once when an event is created (content and provenance)."""

    model_config = ConfigDict(extra="forbid")

    namespace_id: int
    session_id: int | None
    origin: Origin
    block_id: int | None = None
    import_id: int | None = None
    title: str
    summary: str
    narrative: str
    tags: list[str] = Field(default_factory=list)
    quotes: list[str] = Field(default_factory=list)
    type: EventType = "fact"
    participants: list[str] = Field(default_factory=list)
    scope: Scope = "project"
    criticality: Criticality = "routine"
    confidence: float = Field(1.0, ge=0, le=1)
    mentioned_at: str
    happened_start: str | None = None
    happened_end: str | None = None
    time_original: str | None = None
    time_precision: Precision = "unknown"
    time_basis: Basis = "unknown"
    time_status: TimeStatus = "unknown"
    fingerprint: str
    claims: list[dict[str, Any]] = Field(default_factory=list)
    """events.claims.Claim dumps: what the event states about nodes; the graph projection reads them."""
    team_member: str | None = None
    """Set on a team memory: the member who said it (events/team.py)."""


class EventRow(NewEvent):
    """One row of ``events`` plus its owner session's key and its namespace's name and user-tier setting."""

    id: int
    session_key: str | None = None
    namespace_name: str | None = None
    owner_user_tier: bool | None = None
    """Does the event's namespace share the user tier? None when the row was read without it: never shared."""
    status: Status
    prior_status: Status | None = None
    successor_id: int | None = None
    pinned: bool = False
    weight_cap: float | None = None
    created_at: str
    updated_at: str

    @classmethod
    def from_row(cls, row: sqlite3.Row | Mapping[str, Any]) -> EventRow:
        data = dict(row)
        for key in ("tags", "quotes", "participants", "claims"):
            data[key] = [] if data[key] == "[]" else json.loads(data[key])  # (most lists are empty)
        data["pinned"] = bool(data["pinned"])
        if data.get("owner_user_tier") is not None:
            data["owner_user_tier"] = bool(data["owner_user_tier"])
        return cls.model_validate(data)

    @property
    def public_id(self) -> str:
        return ids.make("evt", self.id)

    def visible_to(self, viewer: Viewer) -> bool:
        """The one visibility rule (events/visibility.py): own namespace (a session-scoped event only in its
        session), or a user-scoped event of another namespace when both share the user tier."""
        return viewer.sees(
            namespace_id=self.namespace_id, scope=self.scope, session_id=self.session_id,
            owner_user_tier=self.owner_user_tier,
        )

    @property
    def tier(self) -> Tier:
        return "team" if self.team_member is not None else tier_of(self.scope)

    @property
    def shown_scope(self) -> str:
        return "team" if self.team_member is not None else self.scope

    def tier_fields(self, viewer: Viewer) -> dict[str, Any]:
        """What a tool result adds so the agent sees where a memory lives: its tier, and the namespace it was said
        in when that is not the viewer's (a user-tier memory of another project)."""
        out: dict[str, Any] = {"tier": self.tier}
        if self.team_member is not None:
            out["member"] = self.team_member
        if viewer.foreign(self.namespace_id):
            out["from_namespace"] = self.namespace_name
        return out

    def lifecycle(self) -> dict[str, Any]:
        """The columns a mutation may change: what the audit log records before and after."""
        return {
            "status": self.status,
            "prior_status": self.prior_status,
            "successor_id": ids.make("evt", self.successor_id) if self.successor_id else None,
            "pinned": self.pinned,
            "weight_cap": self.weight_cap,
        }

    def temporal(self) -> dict[str, Any]:
        return {
            "mentioned_at": self.mentioned_at,
            "happened_start": self.happened_start,
            "happened_end": self.happened_end,
            "original": self.time_original,
            "precision": self.time_precision,
            "basis": self.time_basis,
            "status": self.time_status,
        }

    def public(self) -> dict[str, Any]:
        return {
            "id": self.public_id,
            "title": self.title,
            "summary": self.summary,
            "narrative": self.narrative,
            "tags": self.tags,
            "quotes": self.quotes,
            "type": self.type,
            "participants": self.participants,
            "scope": self.shown_scope,
            "session": self.session_key if self.scope == "session" else None,
            **({"member": self.team_member} if self.team_member is not None else {}),
            "criticality": self.criticality,
            "confidence": self.confidence,
            "origin": self.origin,
            "block_id": ids.make("blk", self.block_id) if self.block_id else None,
            "import_id": ids.make("imp", self.import_id) if self.import_id else None,
            "claims": self.claims,
            **self.lifecycle(),
            "temporal": self.temporal(),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }
