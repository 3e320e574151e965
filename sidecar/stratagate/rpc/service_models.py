"""Params and results of the DSH memory service's methods (``service.*``, rpc/service.py): what the shim's
``stratagateMemory`` / ``crossSessionMemory`` object forwards for another DSH plugin. Field names are the JS API's
(camelCase results; params named as the shim sends them)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, StringConstraints, field_validator

from stratagate.capture.models import Name
from stratagate.events.memory_shape import Memory, MemoryType, Shape

Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]


class Caller(BaseModel):
    """Whose memory space a call uses: the calling session's facts as the shim has them (``namespace.for_session``'s
    params, the session optional). Without a session the DSH process's working directory stands in."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["project", "session", "global"] = "project"
    session: Name | None = None
    cwd: str | None = Field(None, max_length=4096)
    name: Name | None = None


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")

    caller: Caller


class SearchParams(Params):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    query: str = Field(min_length=1, max_length=2000)
    types: list[MemoryType] | None = Field(None, min_length=1, max_length=8)
    tags: list[Tag] | None = Field(None, min_length=1, max_length=12)
    exclude_session_id: Name | None = Field(None, alias="excludeSessionId")
    limit: int = Field(10, ge=1, le=50)


class RecallParams(Params):
    context: str = Field(min_length=1, max_length=8000)
    limit: int = Field(10, ge=1, le=50)


class StoreParams(Params):
    type: MemoryType = "fact"
    content: str = Field(min_length=1, max_length=4000)
    tags: list[Tag] = Field(default_factory=list, max_length=12)

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content must not be blank")
        return value


class GetParams(Params):
    id: str = Field(min_length=1, max_length=64)


class SimilarParams(Params):
    threshold: float | None = Field(None, ge=0, le=1)


class LogParams(Params):
    limit: int = Field(20, ge=1, le=500)


class MemoryList(RootModel[list[Memory]]):
    pass


class MaybeMemory(RootModel[Memory | None]):
    pass


class StoredMemory(Memory):
    duplicate: bool = Field(description="It was stored before (the same or nearly the same words): that event.")
    note: str | None = None


class SessionCount(Shape):
    session_id: str
    count: int


class Stats(Shape):
    namespace: str
    total_memories: int
    by_type: dict[str, int]
    by_status: dict[str, int]
    top_sessions: list[SessionCount]


class MergeBrief(Shape):
    survivor: str
    merged: str
    similarity: float
    match: Literal["exact", "near"]


class MaintenanceResult(Shape):
    triggered: bool
    run_id: int | None
    merged: int = Field(description="Merges of this memory space in the pass.")
    merged_total: int = Field(description="Merges of the whole pass (it maintains the whole database).")
    merges: list[MergeBrief]


class SchedulerStatus(Shape):
    enabled: bool
    running: bool
    interval_ms: int
    consolidate_interval_ms: int
    decay_interval_ms: None
    last_run: int | None
    last_run_status: Literal["running", "done", "failed"] | None
    last_run_trigger: Literal["schedule", "start", "manual"] | None
    next_run_at: int | None


class SimilarPair(Shape):
    m1: Memory
    m2: Memory
    score: float
    match: str = Field(description="'exact' (the same words) or 'near' (a near duplicate).")


class SimilarList(RootModel[list[SimilarPair]]):
    pass


class LogEntry(Shape):
    id: int
    source_memory_ids: list[str]
    target_memory_id: str
    merge_score: float
    merged_at: int
    undone_at: int | None
    run_id: int | None
    actor: str


class LogList(RootModel[list[LogEntry]]):
    pass
